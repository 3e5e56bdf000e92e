// The simulator module (zerosim-sim.so) behind `zerosim simulate`: builds the Plan, runs it on the SimGrid model
// of the machine (sim/), prints the summary; --trace writes Chrome/Perfetto trace events. A module of its own so
// that SimGrid (and the ns-3 libraries it pulls in) load only for `simulate`, not at every zerosim start.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/inputs.h"
#include "cli/not_fitting.h"
#include "cli/simulate.h"
#include "core/cost_model.h"
#include "core/json_reader.h"
#include "core/memory.h"
#include "core/plan.h"
#include "core/trace.h"
#include "sim/advice.h"
#include "sim/predict.h"
#include "sim/requirements.h"
#include "sim/simulator.h"
#include "sim/summary.h"

namespace zs::cli {
namespace {

using nlohmann::ordered_json;

using Opts = SimulateOpts;

ordered_json tiers_json(const std::array<int64_t, 3>& b) { return {{"gpu", b[0]}, {"cpu", b[1]}, {"nvme", b[2]}}; }

// The command line as it would be typed again (every input resolved to its file).
std::string command_line(const Opts& o, const Inputs& in) {
  std::string c = "zerosim simulate --model " + in.model.source + " --hardware " + in.hardware.file + " --ds-config " +
                  in.strategy.source + " --schedule " + o.schedule + " --nodes " +
                  std::to_string(in.strategy.run.nodes) + " --gpus-per-node " +
                  std::to_string(in.strategy.run.gpus_per_node) + " --seq-len " +
                  std::to_string(in.strategy.run.seq_len);
  if (o.in.micro_batch) c += " --micro-batch " + std::to_string(o.in.micro_batch);
  if (o.in.grad_accum) c += " --grad-accum " + std::to_string(o.in.grad_accum);
  c += run_setting_flags(o.in);
  if (in.strategy.run.checkpoint_activations) c += " --checkpoint-activations";
  const core::LaunchSettings& l = in.strategy.run.launch;
  c += " --launcher " + core::to_string(l.launcher);
  if (l.omp_threads_per_rank) c += " --omp-threads " + std::to_string(*l.omp_threads_per_rank);
  if (l.bind_cores_to_rank) c += " --bind-cores-to-rank";
  c += " --attn-implementation " + core::to_string(l.attn_implementation);
  return c;
}

// `fit`'s verdict for a plan that does not fit: per tier required vs capacity, the reason, the cheapest fixes.
int report_not_fitting(const Opts& o, const Inputs& in, const core::Plan& plan) {
  const core::MemoryReport r = core::memory_model(in.model, in.hardware, in.strategy);
  const auto sug = core::suggest_fixes(in.model, in.hardware, in.strategy);
  return print_not_fitting({in, plan, r, sug, ""}, o.json);
}

ordered_json part_json(const sim::StepPart& p) {
  return {{"key", p.key},         {"label", p.label},         {"name", p.name},          {"resource", p.resource},
          {"ops", p.ops},         {"bytes", p.bytes},         {"elements", p.elements},
          {"busy_s", p.busy_s},   {"exposed_s", p.exposed_s}, {"rate_GBps", p.rate_Bps / 1e9},
          {"pageable", p.pageable}};
}

// What the step's CPU side ran on and every optimizer pass and copy (sim/breakdown.h), and the advice.
void breakdown_json(ordered_json& j, const sim::Breakdown& b, const std::vector<sim::Advice>& advice,
                    const core::LaunchSettings& l) {
  j["launch"] = {{"launcher", core::to_string(l.launcher)},
                 {"omp_threads_per_rank", l.omp_threads_per_rank ? ordered_json(*l.omp_threads_per_rank)
                                                                 : ordered_json(nullptr)},
                 {"bind_cores_to_rank", l.bind_cores_to_rank},
                 {"attn_implementation", core::to_string(l.attn_implementation)},
                 {"cpu_threads_per_rank", b.threads.per_rank},
                 {"ranks_per_node", b.threads.ranks_per_node},
                 {"cpu_threads_running", b.threads.active},
                 {"core_GBps", b.threads.core_GBps},
                 {"why", b.threads.why}};
  ordered_json passes = ordered_json::array(), copies = ordered_json::array(), adv = ordered_json::array();
  for (const auto& p : b.passes) passes.push_back(part_json(p));
  for (const auto& p : b.copies) copies.push_back(part_json(p));
  for (const auto& a : advice)
    adv.push_back({{"change", a.change}, {"hides", a.hides}, {"step_time_s", a.step_time_s}, {"saved_s", a.saved_s}});
  j["optimizer_passes"] = passes;
  j["copies"] = copies;
  j["advice"] = adv;
}

ordered_json summary_json(const Opts& o, const Inputs& in, const core::Plan& plan, const sim::SimResult& r,
                          const sim::Summary& s) {
  ordered_json j;
  j["model"] = in.model.name;
  j["hardware"] = in.hardware.name;
  j["ds_config"] = in.strategy.source;
  j["schedule"] = o.schedule;
  j["run"] = {{"nodes", in.strategy.run.nodes},
              {"gpus_per_node", in.strategy.run.gpus_per_node},
              {"world", plan.ranks},
              {"simulated_gpus", r.topology.shape.local_ranks},
              {"seq_len", in.strategy.run.seq_len},
              {"micro_batch_per_gpu", in.strategy.micro_batch_per_gpu},
              {"gradient_accumulation_steps", in.strategy.gradient_accumulation_steps},
              {"train_batch_size", in.strategy.train_batch_size}};
  j["step_time_s"] = s.step_time_s;
  j["phases"] = {{"forward_s", s.forward_s}, {"backward_s", s.backward_s}, {"optimizer_s", s.optimizer_s}};
  j["tokens_per_s"] = s.tokens_per_s;
  j["samples_per_s"] = s.samples_per_s;
  j["tflops_per_gpu"] = s.model_tflops_per_gpu;
  j["hardware_tflops_per_gpu"] = s.hardware_tflops_per_gpu;
  j["mfu"] = s.mfu;
  j["gpu_efficiency"] = s.gpu_efficiency;
  j["peak_bytes"] = tiers_json(s.peak_bytes);
  j["plan_peak_bytes"] = tiers_json(plan.peak_bytes);
  ordered_json u = ordered_json::object();
  for (const auto& [k, v] : s.utilization) u[k] = v;
  j["utilization"] = u;
  ordered_json ex = ordered_json::object();
  for (const auto& x : s.exposed) ex[x.key] = {{"active_s", x.active_s}, {"exposed_s", x.exposed_s}};
  j["exposed"] = ex;
  j["bottleneck"] = s.bottleneck;
  j["bottleneck_key"] = s.bottleneck_key;
  j["target_efficiency"] = s.target_efficiency;
  ordered_json req = ordered_json::object(), req_detail = ordered_json::array();
  for (const auto& q : s.required) {
    req[q.key] = q.reachable ? ordered_json(q.need_GBps_per_gpu) : ordered_json(nullptr);
    req_detail.push_back(
        {{"key", q.key},
         {"label", q.label},
         {"bytes_per_gpu", q.bytes_per_gpu},
         {"need_GBps_per_gpu", q.need_GBps_per_gpu},
         {"has_GBps_per_gpu", q.has_GBps_per_gpu},
         {"short", q.short_},
         {"method", q.simulated ? "re-simulated with this tier scaled" : "full-overlap lower bound"},
         {"reachable", q.reachable},
         {"best_efficiency", q.simulated && !q.reachable ? ordered_json(q.best_efficiency) : ordered_json(nullptr)}});
  }
  j["required_GBps"] = req;
  j["required"] = req_detail;
  ordered_json res = ordered_json::array();
  for (const auto& x : s.resources)
    if (x.busy_s > 0)
      res.push_back({{"name", x.name},
                     {"kind", x.kind},
                     {"bytes", x.bytes},
                     {"busy_s", x.busy_s},
                     {"utilization", x.utilization}});
  j["resources"] = res;
  j["simulation"] = {{"wall_s", r.wall_s},
                     {"ops_per_rank", plan.ops.size()},
                     {"events", r.trace.events.size()},
                     {"activities", r.activities},
                     {"peak_rss_bytes", r.peak_rss_bytes}};
  ordered_json cost = ordered_json::object();
  for (const auto& [k, v] : r.cost.provenance) cost[k] = v;
  j["cost_model"] = cost;
  j["notes"] = plan.notes;
  j["warnings"] = in.warnings;
  for (const auto& w : s.warnings) j["warnings"].push_back(w);
  return j;
}

void print_human(const Opts& o, const Inputs& in, const core::Plan& plan, const sim::SimResult& r,
                 const sim::Summary& s, const sim::Breakdown& b, const std::vector<sim::Advice>& advice) {
  const auto& st = in.strategy;
  std::printf("%s (%s) on %s: %lld node x %lld GPU, %s, schedule %s\n", in.model.name.c_str(),
              core::parameter_summary(in.model).c_str(), in.hardware.name.c_str(),
              static_cast<long long>(st.run.nodes), static_cast<long long>(st.run.gpus_per_node), st.source.c_str(),
              o.schedule.c_str());
  std::printf("ZeRO-%d, optimizer %s, params %s, %s, %s, micro batch %lld, GA %lld\n", st.zero.stage,
              core::to_string(st.zero.offload_optimizer.device).c_str(),
              core::to_string(st.zero.offload_param.device).c_str(), core::to_string(st.model_dtype()).c_str(),
              seq_len_text(in).c_str(), static_cast<long long>(st.micro_batch_per_gpu),
              static_cast<long long>(st.gradient_accumulation_steps));
  for (const auto& w : in.warnings) std::printf("warning: %s\n", w.c_str());
  std::printf("\n");
  const core::LaunchSettings& l = st.run.launch;
  std::printf("launch: %s%s, attention %s; CPU threads: %s\n\n", core::to_string(l.launcher).c_str(),
              l.bind_cores_to_rank ? " --bind_cores_to_rank" : "", core::to_string(l.attn_implementation).c_str(),
              b.threads.why.c_str());
  std::cout << sim::summary_text(s);
  std::cout << sim::breakdown_text(b);
  if (!advice.empty()) std::cout << "to hide what is exposed (each simulated):\n" << sim::advice_text(advice, s.step_time_s);
  std::printf("memory peak      GPU %s per rank, CPU %s per node, NVMe %s per node (simulated timeline)\n",
              core::format_bytes(s.peak_bytes[0]).c_str(), core::format_bytes(s.peak_bytes[1]).c_str(),
              core::format_bytes(s.peak_bytes[2]).c_str());
  std::printf("simulated        %zu ops per rank on %lld GPUs of one node (nodes are symmetric) in %.2f s\n",
              plan.ops.size(), static_cast<long long>(r.topology.shape.local_ranks), r.wall_s);
  for (const auto& n : plan.notes) std::printf("note: %s\n", n.c_str());
  for (const auto& w : s.warnings) std::printf("warning: %s\n", w.c_str());
}

void run_simulate(const Opts& o, int& exit_code) {
  auto in = load_inputs(o.in);
  if (!in) {
    std::cerr << "zerosim simulate: " << in.error().message << "\n";
    exit_code = exit_code_for(in.error());
    return;
  }
  const core::Schedule schedule = *core::parse_schedule(o.schedule);
  auto pred = sim::predict(in->model, in->hardware, in->strategy, schedule, o.target_efficiency);
  if (!pred) {
    std::cerr << "zerosim simulate: " << pred.error().message << "\n";
    exit_code = exit_code_for(pred.error());
    return;
  }
  const core::Plan& plan = pred->plan;
  if (!plan.feasible) {
    exit_code = report_not_fitting(o, *in, plan);
    return;
  }
  sim::SimResult* r = &pred->result;
  sim::Summary& s = pred->summary;
  if (o.target_given) {
    sim::SimOptions so;
    so.nodes = in->strategy.run.nodes;
    so.gpus_per_node = in->strategy.run.gpus_per_node;
    auto req = sim::simulate_requirements(plan, pred->cost, so, s, o.target_efficiency);
    if (!req) {
      std::cerr << "zerosim simulate: " << req.error().message << "\n";
      exit_code = exit_code_for(req.error());
      return;
    }
    s.required = std::move(*req);
  }
  auto advice = sim::advise(in->model, in->hardware, in->strategy, schedule, *pred);
  if (!advice) {
    std::cerr << "zerosim simulate: " << advice.error().message << "\n";
    exit_code = exit_code_for(advice.error());
    return;
  }

  r->trace.provenance = provenance_for(*in, command_line(o, *in));
  for (const auto& [path, text] :
       {std::pair{o.trace, &core::trace_to_chrome_json}, std::pair{o.raw_trace, &core::trace_to_json}}) {
    if (path.empty()) continue;
    core::Status w = core::write_file_atomic(path, text(r->trace));
    if (!w.ok()) {
      std::cerr << "zerosim simulate: " << w.message() << "\n";
      exit_code = 3;
      return;
    }
  }
  if (o.json) {
    ordered_json j = summary_json(o, *in, plan, *r, s);
    breakdown_json(j, pred->breakdown, *advice, in->strategy.run.launch);
    std::cout << j.dump(2) << "\n";
  } else {
    print_human(o, *in, plan, *r, s, pred->breakdown, *advice);
  }
  exit_code = 0;
}

}  // namespace
}  // namespace zs::cli

extern "C" int zs_simulate_main(const zs::cli::SimulateOpts* o) {
  int exit_code = 3;
  zs::cli::run_simulate(*o, exit_code);
  return exit_code;
}
