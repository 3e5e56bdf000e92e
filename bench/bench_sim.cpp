// `zerosim simulate` speed and memory (issue 4): 100B ZeRO-Infinity on one GPU in < 1 s; ZeRO-3 on 1024 GPUs
// (64 DGX-2 nodes x 16) in < 30 s and < 4 GiB RSS. Times cover plan + simulation + summary, in process; RSS is
// the larger of this process and the forked simulator. The machine's own limit in the same run: SimGrid's
// cost per activity on a plan of independent trivial ops (the engine floor), against which each run's cost
// per activity is printed as a ratio.
//   build/bin/bench_sim [runs]
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "core/cost_model.h"
#include "core/hardware.h"
#include "core/model.h"
#include "core/plan.h"
#include "core/strategy.h"
#include "sim/simulator.h"
#include "sim/summary.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace zs;

struct Scenario {
  const char* label;
  const char* model;
  const char* hardware;
  const char* config;
  int64_t nodes, gpus_per_node;
  bool checkpoint;
  double goal_s;
  double goal_rss_GiB;  // 0: none
};

struct Run {
  double plan_s = 0, sim_s = 0, total_s = 0;
  int64_t rss = 0, activities = 0, ops = 0, events = 0;
  double step_s = 0;
  std::string bottleneck;
};

int64_t self_rss() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<int64_t>(ru.ru_maxrss) * 1024;
}

bool run_scenario(const Scenario& sc, Run* out) {
  auto m = core::load_model(sc.model);
  auto h = core::load_hardware(sc.hardware);
  if (!m || !h) return false;
  core::RunSettings run;
  run.nodes = sc.nodes;
  run.gpus_per_node = sc.gpus_per_node;
  run.seq_len = zs::core::default_seq_len(*m);
  run.hidden = m->hidden;
  run.checkpoint_activations = sc.checkpoint;
  auto s = core::load_strategy(sc.config, run);
  if (!s) {
    std::fprintf(stderr, "bench_sim: %s\n", s.error().message.c_str());
    return false;
  }
  if (sc.checkpoint) s->activation_checkpointing.enabled = true;
  const auto t0 = Clock::now();
  const core::Plan plan = core::make_plan(*m, *h, *s, {});
  const auto t1 = Clock::now();
  if (!plan.feasible) {
    std::fprintf(stderr, "bench_sim: %s does not fit: %s\n", sc.label, plan.infeasible_reason.c_str());
    return false;
  }
  core::CostModel cost = core::cost_model_for_run(*h, *m, *s);
  sim::SimOptions so;
  so.nodes = sc.nodes;
  so.gpus_per_node = sc.gpus_per_node;
  auto r = sim::simulate(plan, cost, so);
  if (!r) {
    std::fprintf(stderr, "bench_sim: %s\n", r.error().message.c_str());
    return false;
  }
  sim::SummaryOptions sopt;
  sopt.samples_per_step = s->train_batch_size;
  const sim::Summary sum = sim::summarize(plan, *r, sopt);
  const auto t2 = Clock::now();
  out->plan_s = std::chrono::duration<double>(t1 - t0).count();
  out->sim_s = r->wall_s;
  out->total_s = std::chrono::duration<double>(t2 - t0).count();
  out->rss = std::max(self_rss(), r->peak_rss_bytes);
  out->activities = r->activities;
  out->ops = static_cast<int64_t>(plan.ops.size());
  out->events = static_cast<int64_t>(r->trace.events.size());
  out->step_s = sum.step_time_s;
  out->bottleneck = sum.bottleneck;
  return true;
}

// The engine floor: N independent 1 µs compute ops on one GPU stream plus N transfers on another.
double floor_s_per_activity(int64_t n) {
  core::Plan p;
  for (int64_t i = 0; i < n; ++i) {
    core::Op o;
    o.id = static_cast<uint32_t>(i);
    o.kind = i % 2 ? core::OpKind::h2d : core::OpKind::forward;
    o.stream = i % 2 ? core::Stream::h2d : core::Stream::compute;
    o.gemm_flops = 1e8;
    o.bytes = 10000;
    o.layer = 0;
    p.ops.push_back(o);
  }
  core::Hardware hw;
  hw.gpu.name = "bench";
  hw.gpu.peak_tflops_fp16 = 100;
  hw.gpu.hbm_GBps = 1000;
  hw.cpu.cores = 1;
  hw.cpu.memory_GBps = 100;
  hw.links.pcie_h2d_GBps = hw.links.pcie_d2h_GBps = hw.links.pcie_host_GBps = 10;
  auto r = sim::simulate(p, core::cost_model_for(hw, core::Precision::fp16), {});
  return r ? r->wall_s / static_cast<double>(r->activities) : -1;
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  const Scenario scenarios[] = {
      {"100B ZeRO-Infinity, 1 GPU", "gpt-100b", "dgx2", "zero3-offload-nvme", 1, 1, false, 1.0, 0},
      {"ZeRO-3 175B, 1024 GPUs (64 x 16)", "gpt3-175b", "dgx2", "zero3", 64, 16, true, 30.0, 4.0},
      {"ZeRO-2 1.5B, 8 GPUs", "gpt2-1.5b", "dgx2", "zero2", 1, 8, false, 1.0, 0},
  };
  const double floor = floor_s_per_activity(200000);
  std::printf("bench_sim: %d runs each; engine floor %.2f us per SimGrid activity (200k independent ops)\n", runs,
              floor * 1e6);
  int failed = 0;
  for (const Scenario& sc : scenarios) {
    std::vector<Run> rs;
    for (int i = 0; i < runs; ++i) {
      Run r;
      if (!run_scenario(sc, &r)) return 2;
      rs.push_back(r);
    }
    std::sort(rs.begin(), rs.end(), [](const Run& a, const Run& b) { return a.total_s < b.total_s; });
    const Run& med = rs[rs.size() / 2];
    const bool time_ok = med.total_s < sc.goal_s;
    const bool rss_ok = sc.goal_rss_GiB <= 0 || static_cast<double>(med.rss) < sc.goal_rss_GiB * core::kGiB;
    failed += !(time_ok && rss_ok);
    std::printf(
        "  %-34s total %7.3f s (plan %.3f, sim %.3f)  RSS %7.1f MiB  goal < %.0f s%s: %s\n", sc.label, med.total_s,
        med.plan_s, med.sim_s, static_cast<double>(med.rss) / (1 << 20), sc.goal_s,
        sc.goal_rss_GiB > 0 ? (", < " + std::to_string(static_cast<int>(sc.goal_rss_GiB)) + " GiB").c_str() : "",
        time_ok && rss_ok ? "met" : "NOT met");
    std::printf(
        "  %-34s %lld ops/rank, %lld events, %lld activities, %.2f us/activity = %.1fx the floor; "
        "predicted step %.4g s (%s)\n",
        "", static_cast<long long>(med.ops), static_cast<long long>(med.events), static_cast<long long>(med.activities),
        med.sim_s / static_cast<double>(med.activities) * 1e6, med.sim_s / static_cast<double>(med.activities) / floor,
        med.step_s, med.bottleneck.c_str());
  }
  return failed ? 1 : 0;
}
