// Breakdown: every optimizer pass and every kind of copy of a simulated step (rank 0) — what it moved, the time
// it took, the rate it reached and how much of it the GPU did not hide — and the CPU threads the passes ran on.
// What `simulate` prints under "optimizer passes" and "copies" (docs/SIM.md "Breakdown").
//   Breakdown b = breakdown(plan, sim);
//   for (const StepPart& p : b.passes) std::cout << p.label << " " << p.busy_s << "\n";
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/plan.h"
#include "sim/simulator.h"

namespace zs::sim {

// One optimizer pass (CPU unscale, CPU Adam, fp32 → lp cast, GPU Adam) or one kind of copy (gradients GPU→host,
// updated parameters host→GPU, optimizer states NVMe→host, ...), over rank 0's ops of the step.
struct StepPart {
  std::string key;       // "cpu_unscale", "cpu_adam", "cpu_cast", "gpu_adam", "d2h.lp_grad", "nvme_read.adam_m", ...
  std::string label;     // "unscale_and_clip_grads (CPU, fp32 gradients: 8 B/param)"
  std::string name;      // short: "unscale (CPU)", "16-bit gradients GPU→host"
  std::string resource;  // "cpu", "gpu", "pcie", "nvme"
  int64_t ops = 0;
  double bytes = 0;      // copies: bytes moved; passes: bytes streamed (read + written)
  double elements = 0;   // passes: parameters updated
  double busy_s = 0;     // Σ simulated durations (the CPU optimizer op's duration split over its two passes)
  double exposed_s = 0;  // of the union of its ops' intervals, the time the GPU computed nothing
  double rate_Bps = 0;   // bytes / busy_s
  bool pageable = false; // copies from or to host memory that is not pinned (a driver staging copy)
};

// The threads behind the CPU passes (core::apply_launch).
struct ThreadsUsed {
  int64_t per_rank = 0, ranks_per_node = 1, active = 0;
  double core_GBps = 0;  // one core's streaming rate
  int64_t numa_home = 1, numa_nodes = 1;  // NUMA nodes holding the ranks' optimizer states, of the node's
  std::string why;                        // the launcher's rule
};

struct Breakdown {
  std::vector<StepPart> passes;  // in program order of first appearance
  std::vector<StepPart> copies;
  ThreadsUsed threads;
};

Breakdown breakdown(const core::Plan& plan, const SimResult& sim);

// Text lines for `simulate` ("optimizer passes", "copies", "CPU threads").
std::string breakdown_text(const Breakdown& b);

}  // namespace zs::sim
