// Requirements by re-simulation: the bandwidth each tier needs for a target GPU efficiency, found by scaling
// that tier alone (its links, or CPU Adam's rate) and simulating again — DeepSpeed issue #998's question
// ("is ~3 GB/s NVMe per GPU enough?") answered with overlap and dependencies included.
//   auto req = simulate_requirements(plan, cost, opts, summary, 0.9);   // ~8 simulations per tier
#pragma once

#include <vector>

#include "core/status.h"
#include "sim/summary.h"

namespace zs::sim {

// For every tier in `base.required` (tiers that carry traffic): the per-GPU bandwidth at which the simulated
// step reaches `target` efficiency (GPU compute time ÷ step time), searched over 1/64x … 64x of today's.
core::Result<std::vector<Requirement>> simulate_requirements(const core::Plan& plan, const core::CostModel& cost,
                                                             const SimOptions& o, const Summary& base, double target);

// The cost model with one tier's bandwidth multiplied by `k` (keys as in Requirement::key).
core::CostModel scale_tier(const core::CostModel& c, const std::string& key, double k);

}  // namespace zs::sim
