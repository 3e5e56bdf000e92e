// make_plan latency and memory (issue 3, Must show 4): the 100B model on one GPU (goal < 50 ms) and a
// 1024-GPU ZeRO-3 plan, 64 DGX-2 nodes x 16 (goal < 1 s and < 1 GiB). The machine's own limit in the same run:
// a deep copy of the finished plan (allocating and filling the same ops and tensors), and the ratio to it.
// Both with activation checkpointing, as `zerosim plan ... --checkpoint-activations`.
//   build/bin/bench_plan [runs]
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "core/hardware.h"
#include "core/model.h"
#include "core/plan.h"
#include "core/strategy.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace zs::core;

double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

int64_t rss_bytes() {  // resident set size now (/proc/self/statm, pages)
  std::ifstream f("/proc/self/statm");
  int64_t size = 0, resident = 0;
  f >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}
int64_t max_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<int64_t>(u.ru_maxrss) * 1024;
}

// Heap held by a plan: ops with their deps, tensors with their names, the ledger.
int64_t plan_bytes(const Plan& p) {
  int64_t b = static_cast<int64_t>(sizeof(Plan));
  for (const auto& op : p.ops) b += static_cast<int64_t>(sizeof(Op) + op.deps.capacity() * sizeof(uint32_t));
  for (const auto& t : p.tensors) b += static_cast<int64_t>(sizeof(PlanTensor) + t.name.capacity());
  b += static_cast<int64_t>(p.ledger.capacity() * sizeof(p.ledger[0]));
  return b;
}

struct Case {
  const char* what;
  const char* model;
  const char* hardware;
  const char* config;
  int64_t nodes, gpus_per_node;
  bool checkpoint_activations;
  double goal_s;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::max(3, std::atoi(argv[1])) : 20;
  const Case cases[] = {
      {"100B on one GPU", "gpt-100b", "dgx2", "zero3-offload-nvme", 1, 1, true, 0.050},
      {"1024-GPU ZeRO-3 (64 x 16)", "gpt3-175b", "dgx2", "zero3", 64, 16, true, 1.0},
  };
  std::printf("bench_plan: %d runs each (median)\n", runs);
  bool ok = true;
  for (const Case& c : cases) {
    auto m = load_model(c.model);
    auto h = load_hardware(c.hardware);
    RunSettings run;
    run.nodes = c.nodes;
    run.gpus_per_node = c.gpus_per_node;
    run.checkpoint_activations = c.checkpoint_activations;
    run.seq_len = m ? zs::core::default_seq_len(*m) : 0;
    run.hidden = m ? m->hidden : 0;
    auto s = load_strategy(c.config, run);
    if (!m || !h || !s) {
      std::fprintf(stderr, "bench_plan: cannot load inputs for %s\n", c.what);
      return 2;
    }
    const int64_t rss0 = rss_bytes();
    std::vector<double> t_build, t_copy;
    size_t ops = 0;
    int64_t held = 0, rss_held = 0;
    for (int i = 0; i < runs; ++i) {
      auto t0 = Clock::now();
      Plan p = make_plan(*m, *h, *s);
      auto t1 = Clock::now();
      Plan copy = p;  // the machine's limit: materialising the same plan without deciding anything
      auto t2 = Clock::now();
      t_build.push_back(seconds(t0, t1));
      t_copy.push_back(seconds(t1, t2));
      ops = p.ops.size();
      held = plan_bytes(p);
      rss_held = std::max(rss_held, rss_bytes() - rss0);
      if (copy.ops.size() != p.ops.size()) return 3;
    }
    const double b = median(t_build), cp = median(t_copy);
    const bool time_ok = b < c.goal_s;
    const bool mem_ok = held < (int64_t{1} << 30);
    ok = ok && time_ok && mem_ok;
    std::printf("  %-27s %s on %s, %lld x %lld GPUs, %s, checkpointing: %zu ops (one rank listed)\n", c.what,
                c.model, c.hardware, static_cast<long long>(c.nodes), static_cast<long long>(c.gpus_per_node), c.config,
                ops);
    std::printf("    make_plan %8.2f ms (goal < %.0f ms: %s)   deep copy (limit) %6.2f ms   ratio %.1fx\n", b * 1e3,
                c.goal_s * 1e3, time_ok ? "met" : "NOT met", cp * 1e3, b / cp);
    std::printf("    plan holds %s on the heap; RSS growth while held (two copies) %s (goal < 1 GiB: %s)\n",
                format_bytes(held).c_str(), format_bytes(rss_held).c_str(), mem_ok ? "met" : "NOT met");
  }
  std::printf("  process max RSS %s\n", format_bytes(max_rss_bytes()).c_str());
  return ok ? 0 : 1;
}
