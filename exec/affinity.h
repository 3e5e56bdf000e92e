// Core binding of data-parallel ranks (DeepSpeed's --bind_cores_to_rank): the node's online CPUs are split into
// disjoint sets, one per local rank, and this process (so every thread it starts afterwards: CPU Adam's pool,
// the device's streams) is pinned to its set. With more ranks than cores each rank gets one core, shared.
//   auto b = bind_cores_to_rank(local_rank, local_size);   // before the device and the engine exist
//   eo.cpu_adam_threads = b->cores.size();
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace zs::exec {

struct CoreBinding {
  std::vector<int> cores;  // this rank's CPUs
  int node_cpus = 0;       // online CPUs of the node
  bool shared = false;     // oversubscribed: more local ranks than CPUs, so a core serves several ranks
  std::string text;        // "rank 1 of 2 on this node: CPUs 1 (1 of 2)" (+ ", shared: 4 ranks on 2 CPUs")
};

// Computes local_rank's set and applies it with sched_setaffinity to the calling thread (call it from main,
// before other threads start). Fails if the kernel refuses.
core::Result<CoreBinding> bind_cores_to_rank(int local_rank, int local_size);
// The set alone (no system call): local rank r of n over `cpus` CPUs.
std::vector<int> cores_for_rank(int local_rank, int local_size, int cpus);

}  // namespace zs::exec
