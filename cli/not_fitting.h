// The short "does not fit" report `simulate` and `train` print instead of running (exit 1): fit's verdict per
// tier, the Plan's reason and peaks, the cheapest fixes. One writer for both commands; `zerosim fit` prints the
// full report (cmd_fit.cpp).
#pragma once

#include <string>
#include <vector>

#include "cli/inputs.h"
#include "core/memory.h"
#include "core/plan.h"

namespace zs::cli {

struct NotFitting {
  const Inputs& in;
  const core::Plan& plan;                       // infeasible: its reason names the tier and the op
  const core::MemoryReport& report;             // fit's report for the same run
  const std::vector<core::Suggestion>& fixes;   // cheapest first
  std::string consequence;                      // appended to the headline: " — nothing was allocated"
};

// Prints the report (JSON with `json`, else text) to stdout; returns 1, the "does not fit" exit code.
int print_not_fitting(const NotFitting& n, bool json);

}  // namespace zs::cli
