// The one place that talks to SimGrid (3.32): builds the S4U platform from a Topology and runs an Executor on
// it. Every version-sensitive call (vetoable_start, sendto_init, model configuration) lives in the .cpp.
//   ZS_TRY(run_on_simgrid(topology, executor));   // once per process: SimGrid has one engine per process
#pragma once

#include <string>

#include "core/status.h"
#include "sim/executor.h"
#include "sim/topology.h"

namespace zs::sim {

// Runs `ex` (already init()-ed) to completion on a fresh SimGrid engine. SimGrid keeps global state and cannot
// be re-initialised, so callers run this in a child process (sim/simulator.cpp does).
core::Status run_on_simgrid(const Topology& t, Executor& ex);

// "SimGrid 3.32.0".
std::string simgrid_version();

}  // namespace zs::sim
