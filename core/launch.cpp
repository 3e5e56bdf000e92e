#include "core/launch.h"

#include <algorithm>

namespace zs::core {

CpuThreads resolve_cpu_threads(const LaunchSettings& l, int64_t cores_per_node, int64_t ranks_per_node) {
  CpuThreads t;
  const int64_t cores = std::max<int64_t>(1, cores_per_node);
  t.ranks_per_node = std::max<int64_t>(1, ranks_per_node);
  const std::string n = std::to_string(t.ranks_per_node) + (t.ranks_per_node == 1 ? " rank" : " ranks");
  if (l.omp_threads_per_rank) {
    t.per_rank = std::max<int64_t>(1, *l.omp_threads_per_rank);
    t.why = "OMP_NUM_THREADS=" + std::to_string(t.per_rank) + " (set by the user)";
  } else if (l.launcher == Launcher::deepspeed && l.bind_cores_to_rank) {
    // deepspeed/launcher/launch.py → get_numactl_cmd: the node's cores split evenly over the local ranks, and
    // OMP_NUM_THREADS set to each rank's share.
    t.per_rank = std::max<int64_t>(1, cores / t.ranks_per_node);
    t.why = "deepspeed --bind_cores_to_rank: " + std::to_string(cores) + " cores over " + n + ", OMP_NUM_THREADS=" +
            std::to_string(t.per_rank);
  } else if (l.launcher == Launcher::deepspeed) {
    // deepspeed/launcher/launch.py leaves OMP_NUM_THREADS alone without core binding: OpenMP's default, every core.
    t.per_rank = cores;
    t.why = "deepspeed launcher without --bind_cores_to_rank leaves OMP_NUM_THREADS unset: each of " + n +
            " uses all " + std::to_string(cores) + " cores";
  } else if (l.launcher == Launcher::torchrun) {
    // torch/distributed/run.py: OMP_NUM_THREADS=1 for every process when nproc_per_node > 1 and it is unset.
    t.per_rank = t.ranks_per_node > 1 ? 1 : cores;
    t.why = t.ranks_per_node > 1 ? "torchrun sets OMP_NUM_THREADS=1 per process (nproc_per_node > 1)"
                                 : "torchrun with one process leaves OMP_NUM_THREADS unset: all " +
                                       std::to_string(cores) + " cores";
  } else {
    // accelerate/utils/launch.py → prepare_deepspeed_cmd_env leaves OMP_NUM_THREADS alone and the DeepSpeed path
    // starts the ranks through torchrun's run(): torchrun's rule applies.
    t.per_rank = t.ranks_per_node > 1 ? 1 : cores;
    t.why = t.ranks_per_node > 1 ? "accelerate launch (DeepSpeed) starts the ranks through torchrun: OMP_NUM_THREADS=1 "
                                   "per process"
                                 : "accelerate launch with one process leaves OMP_NUM_THREADS unset: all " +
                                       std::to_string(cores) + " cores";
  }
  t.node_active = std::min(cores, t.per_rank * t.ranks_per_node);
  return t;
}

std::string to_string(Launcher l) {
  switch (l) {
    case Launcher::deepspeed: return "deepspeed";
    case Launcher::torchrun: return "torchrun";
    case Launcher::accelerate: return "accelerate";
  }
  return "?";
}

std::string to_string(AttnImplementation a) {
  switch (a) {
    case AttnImplementation::eager: return "eager";
    case AttnImplementation::sdpa: return "sdpa";
    case AttnImplementation::flash_attention_2: return "flash_attention_2";
  }
  return "?";
}

std::optional<Launcher> parse_launcher(const std::string& name) {
  for (Launcher l : {Launcher::deepspeed, Launcher::torchrun, Launcher::accelerate})
    if (to_string(l) == name) return l;
  return std::nullopt;
}

std::optional<AttnImplementation> parse_attn_implementation(const std::string& name) {
  for (AttnImplementation a :
       {AttnImplementation::eager, AttnImplementation::sdpa, AttnImplementation::flash_attention_2})
    if (to_string(a) == name) return a;
  return std::nullopt;
}

}  // namespace zs::core
