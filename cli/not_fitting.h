// The short "does not fit" report `simulate` and `train` print instead of running (exit 1): fit's verdict per
// tier, the Plan's reason and peaks, the cheapest fixes and the hardware limits. One writer for both commands;
// `zerosim fit` prints the full report (cmd_fit.cpp) with the same fix and limit lines.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/inputs.h"
#include "core/memory.h"
#include "core/plan.h"

namespace zs::cli {

struct NotFitting {
  const Inputs& in;
  const core::Plan& plan;                      // infeasible: its reason names the tier and the op
  const core::MemoryReport& report;            // fit's report for the same run
  const std::vector<core::Suggestion>& fixes;  // cheapest first
  std::string consequence;                     // appended to the headline: " — nothing was allocated"
};

// Prints the report (JSON with `json`, else text) to stdout; returns 1, the "does not fit" exit code.
int print_not_fitting(const NotFitting& n, bool json);

// The fixes, numbered from 1 as `fit --apply-fix N` counts them, at most `max`: "  1 ✓ <text>" (✓ fits, ~ tight,
// - helps but not enough), with the run flags a fix needs. Nothing when there are none.
void print_fixes(const std::vector<core::Suggestion>& fixes, size_t max, const std::string& heading);
// What the hardware lacks as configured (core::memory_limits): facts, not fixes.
void print_limits(const core::MemoryReport& r);
// Each fix with its patch and the numbers it promises: text, fits, verdict, cost_rank, changes (ds_config paths and
// values), run_changes and run_flags (outside the file), binding_tier and required_bytes per tier after the change.
nlohmann::ordered_json suggestions_json(const std::vector<core::Suggestion>& fixes);
nlohmann::ordered_json limits_json(const core::MemoryReport& r);

}  // namespace zs::cli
