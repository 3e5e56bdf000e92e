// The simulator's entry point: executes a Plan on a flow-level model of the machine (SimGrid) and returns the
// predicted Trace (per op start/end, rank 0's memory timeline). The summary (summary.h) reads it.
//   CostModel c = cost_model_for(hw, strategy.model_dtype());  apply_model_shapes(c, model, mb * seq);
//   Result<SimResult> r = simulate(plan, c, {.nodes = 64, .gpus_per_node = 16});
#pragma once

#include <cstdint>

#include "core/cost_model.h"
#include "core/plan.h"
#include "core/status.h"
#include "core/trace.h"
#include "sim/topology.h"

namespace zs::sim {

struct SimOptions {
  int64_t nodes = 1;
  int64_t gpus_per_node = 1;
  // SimGrid allows one engine per process, so by default each simulation runs in a forked child that sends the
  // trace back. false runs it here (once per process; for debuggers).
  bool isolate = true;
};

struct SimResult {
  core::Trace trace;  // events of every simulated rank (the node's GPUs), rank 0's memory timeline
  Topology topology;
  core::CostModel cost;
  int64_t activities = 0;      // SimGrid activities created
  double wall_s = 0;           // wall time of the simulation itself
  int64_t peak_rss_bytes = 0;  // of the process that ran SimGrid (the child when isolated)
};

// Plans describe one rank (represented_ranks 1, every op rank 0): it is replicated over the node's
// min(gpus_per_node, plan.ranks) GPUs, which share the CPU, PCIe uplink, NVMe and NIC; other nodes are symmetric.
core::Result<SimResult> simulate(const core::Plan& plan, const core::CostModel& cost, const SimOptions& o);

}  // namespace zs::sim
