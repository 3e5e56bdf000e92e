// `zerosim simulate`'s options and the entry point of the simulator module (zerosim-sim.so), which the zerosim
// binary dlopen()s for this command only: linking SimGrid (and the ns-3 libraries it needs) into zerosim itself
// costs every command ~90 ms of dynamic loading and static initialisers.
//   auto fn = reinterpret_cast<SimulateMain>(dlsym(handle, "zs_simulate_main"));  int rc = fn(&opts);
#pragma once

#include <string>

#include "cli/inputs.h"

namespace zs::cli {

struct SimulateOpts {
  InputFlags in;
  std::string schedule = "deepspeed";
  bool json = false;
  std::string trace;      // Chrome/Perfetto trace events
  std::string raw_trace;  // zerosim's trace schema (docs/TRACE.md)
  double target_efficiency = 0.9;
  bool target_given = false;  // --target-efficiency on the command line: requirements by re-simulation
};

// Runs the command; returns its exit code (0, 1 does not fit, 2 bad input, 3 fault). Both sides are built from
// this tree by one compiler, so the C++ struct crosses the boundary as is.
using SimulateMain = int (*)(const SimulateOpts*);

}  // namespace zs::cli

extern "C" int zs_simulate_main(const zs::cli::SimulateOpts* o);
