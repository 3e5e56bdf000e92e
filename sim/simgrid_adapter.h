// The one place that talks to SimGrid (3.32): builds the S4U platform from a Topology and runs an Executor on
// it. Every version-sensitive call (vetoable_start, sendto_init, model configuration) lives in the .cpp.
//   ZS_TRY(run_on_simgrid(topology, executor));   // once per process: SimGrid has one engine per process
#pragma once

#include <functional>

#include <string>

#include "core/status.h"
#include "sim/executor.h"
#include "sim/topology.h"

namespace zs::sim {

// Runs `ex` (already init()-ed) to completion on a fresh SimGrid engine. SimGrid keeps global state and cannot
// be re-initialised, so callers run this in a child process (sim/simulator.cpp does).
// `engine_ready` runs once SimGrid's engine is initialised (the isolated child reports that it got past
// the point where a fork from a multi-threaded parent can deadlock).
core::Status run_on_simgrid(const Topology& t, Executor& ex, const std::function<void()>& engine_ready = {});

// "SimGrid 3.32.0".
std::string simgrid_version();

}  // namespace zs::sim
