// Memory model: what one training step of (model, hardware, strategy) needs per tier — GPU HBM per rank,
// CPU DRAM per node (pinned and pageable), NVMe per node — itemised as DeepSpeed allocates it, with the
// verdict (fits, the binding tier, by how much) and ranked fixes. Formulas and sources: docs/MEMORY.md.
//   MemoryReport r = memory_model(model, hw, strategy);
//   if (!r.fits) for (auto& s : suggest_fixes(model, hw, strategy)) std::cout << s.text << "\n";
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/hardware.h"
#include "core/model.h"
#include "core/strategy.h"

namespace zs::core {

enum class Tier { gpu = 0, cpu = 1, nvme = 2 };
constexpr std::array<Tier, 3> kTiers = {Tier::gpu, Tier::cpu, Tier::nvme};
std::string to_string(Tier t);

// One line of a tier's breakdown. Keys are stable identifiers (JSON), labels are for people.
struct MemoryItem {
  std::string key;    // "lp_params", "adam_m_v", "activations", ...
  std::string label;  // "fp16 params (partition 1/8)"
  int64_t bytes = 0;
  bool pinned = false;     // CPU only: page-locked (counts against ulimit -l)
  bool transient = false;  // peak-time allocation (working set, activations, init)
};

struct TierReport {
  Tier tier = Tier::gpu;
  std::string scope;        // "per GPU" or "per node"
  int64_t required_bytes = 0;
  int64_t capacity_bytes = 0;
  int64_t pinned_bytes = 0;  // CPU: page-locked part of required
  std::vector<MemoryItem> items;
  int64_t headroom_bytes() const { return capacity_bytes - required_bytes; }
  bool fits() const { return required_bytes <= capacity_bytes; }
  int64_t item(const std::string& key) const;  // bytes of an item, 0 if absent
};

// Assumptions outside DeepSpeed's allocations; documented defaults, overridable for calibration.
struct MemoryOptions {
  bool flash_attention = true;          // SDPA/flash attention: no s² score storage (HF's default)
  double cuda_context_GiB = 1.0;        // CUDA context + cuBLAS workspace + NCCL buffers, per GPU
  double allocator_reserve_frac = 0.05; // PyTorch caching-allocator fragmentation over GPU tensors
  double host_process_GiB = 3.0;        // Python + PyTorch + CUDA host libraries, per rank (RSS)
  bool zero_init = true;                // ZeRO-3 models built under deepspeed.zero.Init (HF does this)
};

// Whether attention keeps its [b, a, s, s] scores (HF attn_implementation "eager", or flash_attention off).
bool stores_attention_scores(const MemoryOptions& o, const Strategy& s);

// Activation memory of one micro-batch on one rank (Korthikanti et al. 2022, 16-bit activations).
struct ActivationBytes {
  int64_t per_layer_full = 0;      // everything a block saves for backward
  int64_t per_layer_checkpoint = 0;// the block input kept when checkpointing (2·s·b·h)
  int64_t head_and_loss = 0;       // final norm input, logits, fp32 loss copies
  int64_t embedding = 0;           // embedding output (+ dropout mask)
  int64_t gpu_peak = 0;            // peak on the GPU
  int64_t cpu_checkpoints = 0;     // checkpoints moved to CPU with cpu_checkpointing
};
ActivationBytes activation_bytes(const ModelSpec& m, const Strategy& s, const MemoryOptions& o);

// Sizes a plan and the memory model agree on (one copy of each truth).
struct PartitionSizes {
  int64_t params = 0;             // P, counted once
  int64_t partition = 0;          // ceil(P / world) for partitioned states (stage ≥ 1), else P
  int64_t lp_bytes = 2;           // bytes per model-dtype element
  int64_t largest_param = 0;      // largest single tensor (numel)
  int64_t largest_module = 0;     // DeepSpeed largest_layer_params
  int64_t largest_sub_group = 0;  // largest optimizer sub-group, partition elements
  int64_t param_partition_in_cpu = 0;  // offload_param=nvme: partition elements kept in pinned CPU (max_in_cpu)
  int64_t param_partition_on_nvme = 0; // offload_param=nvme: partition elements swapped to NVMe (padded)
  int64_t largest_nvme_param_partition = 0;  // must fit one param swap buffer (buffer_size)
};
PartitionSizes partition_sizes(const ModelSpec& m, const Strategy& s);

struct MemoryReport {
  std::array<TierReport, 3> tiers;  // indexed by Tier
  bool fits = false;
  std::optional<Tier> binding;       // the overflowing tier (worst ratio), else the tightest one
  std::vector<std::string> problems; // DeepSpeed would assert or refuse (e.g. buffer_size too small)
  std::vector<std::string> notes;    // assumptions applied
  PartitionSizes sizes;
  ActivationBytes activations;
  int64_t zero3_peak_live_numel = 0; // gathered non-persistent parameters at the peak (ZeRO-3)
  int64_t zero3_persistent_numel = 0;
  const TierReport& tier(Tier t) const { return tiers[static_cast<size_t>(t)]; }
  TierReport& tier(Tier t) { return tiers[static_cast<size_t>(t)]; }
};

MemoryReport memory_model(const ModelSpec& m, const Hardware& hw, const Strategy& s, const MemoryOptions& o = {});

// A change to the strategy or run that helps the binding tier, with its effect and rough cost.
struct Suggestion {
  std::string text;    // "offload_param → nvme: GPU 31.2 → 9.8 GiB"
  int cost_rank = 0;   // lower is cheaper (slowdown order, docs/MEMORY.md)
  bool fits = false;   // the config fits after this change
  Strategy strategy;   // the changed strategy (GUI applies it with one click)
};
// Ranked: fixes that make it fit first (cheapest first), then helpful ones; hardware facts last
// ("needs 1.3 TB NVMe, has 0.5 TB").
std::vector<Suggestion> suggest_fixes(const ModelSpec& m, const Hardware& hw, const Strategy& s,
                                      const MemoryOptions& o = {});

// "31.2 GiB" (binary units, as nvidia-smi and DeepSpeed's estimator print).
std::string format_bytes(int64_t bytes);

}  // namespace zs::core
