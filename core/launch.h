// Launch: how the training processes are started and what that leaves each rank — the launcher, its CPU threads
// (OpenMP / PyTorch intra-op), core binding, and HF's attention implementation. Settings outside the ds_config
// that change how fast the same config runs.
//   LaunchSettings l{.launcher = Launcher::accelerate};
//   CpuThreads t = resolve_cpu_threads(l, hw.cpu.cores, /*ranks_per_node=*/8);   // t.per_rank == 1, t.why says so
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace zs::core {

// deepspeed: DeepSpeed's own launcher (`deepspeed train.py`, deepspeed/launcher/runner.py → launch.py).
// torchrun: `torchrun` / `python -m torch.distributed.run` (HF Trainer's documented alternative).
// accelerate: `accelerate launch` (HF accelerate; its DeepSpeed path starts the ranks through torchrun's code).
enum class Launcher : uint8_t { deepspeed, torchrun, accelerate };

// HF transformers' `attn_implementation`: eager (matmul, softmax, matmul: the S×S scores in HBM), sdpa
// (torch.nn.functional.scaled_dot_product_attention: its flash backend for fp16/bf16), flash_attention_2.
enum class AttnImplementation : uint8_t { eager, sdpa, flash_attention_2 };

struct LaunchSettings {
  Launcher launcher = Launcher::deepspeed;
  std::optional<int64_t> omp_threads_per_rank;  // OMP_NUM_THREADS as the user exports it; unset: the launcher's rule
  bool bind_cores_to_rank = false;              // deepspeed --bind_cores_to_rank
  AttnImplementation attn_implementation = AttnImplementation::sdpa;  // HF's default since transformers 4.36
};

// The CPU threads the optimizer step's passes get (DeepSpeed's CPU Adam is an OpenMP loop; the unscale, the
// casts and the copies' staging are PyTorch CPU ops on its intra-op pool: both follow OMP_NUM_THREADS).
struct CpuThreads {
  int64_t per_rank = 1;
  int64_t ranks_per_node = 1;
  // Threads of all local ranks that can run at once: min(ranks × per_rank, cores). More threads than cores
  // time-share the cores.
  int64_t node_active = 1;
  std::string why;  // "torchrun sets OMP_NUM_THREADS=1 per process (nproc_per_node > 1)"
};

// The launcher's rule (docs/SIM.md "CPU threads per rank" cites each launcher's source).
CpuThreads resolve_cpu_threads(const LaunchSettings& l, int64_t cores_per_node, int64_t ranks_per_node);

std::string to_string(Launcher l);
std::string to_string(AttnImplementation a);
std::optional<Launcher> parse_launcher(const std::string& name);
std::optional<AttnImplementation> parse_attn_implementation(const std::string& name);

}  // namespace zs::core
