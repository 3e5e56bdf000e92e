// Memory model: what one training step of (model, hardware, strategy) needs per tier — GPU HBM per rank,
// CPU DRAM per node (pinned and pageable), NVMe per node — itemised as DeepSpeed allocates it, with the
// verdict (fits, the binding tier, by how much) and ranked fixes. Formulas and sources: docs/MEMORY.md.
//   MemoryReport r = memory_model(model, hw, strategy);
//   if (!r.fits) for (auto& s : suggest_fixes(model, hw, strategy)) std::cout << s.text << "\n";  // or apply s.changes
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/hardware.h"
#include "core/model.h"
#include "core/patch.h"
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
  int64_t per_layer_full = 0;      // everything a block saves for backward (the largest block's)
  std::vector<int64_t> by_layer;   // each block's own (a MoE model's dense layers, LoRA on some layers differ)
  int64_t layer_full(int64_t layer) const {
    return layer >= 0 && static_cast<size_t>(layer) < by_layer.size() ? by_layer[static_cast<size_t>(layer)]
                                                                       : per_layer_full;
  }
  int64_t layers_full(int64_t first, int64_t last) const {  // blocks [first, last]
    int64_t n = 0;
    for (int64_t l = first; l <= last; ++l) n += layer_full(l);
    return n;
  }
  int64_t per_layer_checkpoint = 0;// the block input kept when checkpointing (2·s·b·h)
  int64_t head_and_loss = 0;       // final norm input, logits, fp32 loss copies
  int64_t embedding = 0;           // embedding output (+ dropout mask)
  int64_t gpu_peak = 0;            // peak on the GPU
  int64_t cpu_checkpoints = 0;     // checkpoints moved to CPU with cpu_checkpointing
};
ActivationBytes activation_bytes(const ModelSpec& m, const Strategy& s, const MemoryOptions& o);

// Sizes a plan and the memory model agree on (one copy of each truth).
// A LoRA run trains a few parameters of many: `trainable` elements have gradients and optimizer states, all
// `stored` elements have 16-bit copies (a quantised weight's packed bytes counted in 16-bit elements).
struct PartitionSizes {
  int64_t params = 0;             // parameters as HF counts them, once (num_parameters; adapter included)
  int64_t stored = 0;             // P: 16-bit elements DeepSpeed stores (== params unless the base is quantised)
  int64_t trainable = 0;          // T: elements with gradients and optimizer states (== stored without an adapter)
  int64_t partition = 0;          // ceil(T / world) for partitioned states (stage ≥ 1), else T
  int64_t frozen_partition = 0;   // a rank's 16-bit elements of frozen parameters (stage 3: partitions; else all)
  int64_t quant_constant_bytes = 0;  // bitsandbytes absmax / row scales of the quantised weights (not parameters)
  int64_t lp_bytes = 2;           // bytes per model-dtype element
  int64_t largest_param = 0;      // largest single trainable tensor (numel): the offload gradient staging
  int64_t largest_module = 0;     // DeepSpeed largest_layer_params
  int64_t largest_sub_group = 0;  // largest optimizer sub-group, partition elements
  int64_t param_partition_in_cpu = 0;  // offload_param=nvme: the flat CPU buffer (max_in_cpu) + small partitions
  int64_t param_partition_on_nvme = 0; // offload_param=nvme: partition elements swapped to NVMe (padded)
  int64_t largest_nvme_param_partition = 0;  // largest swappable partition: must fit a swap buffer (buffer_size)
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

// Whether the gradient hooks reduce inside the backward: stages 2-3 on every micro-step, stage 1 with overlap_comm
// at the GA boundary (stage_1_and_2.py create_reduce_and_remove_grad_hooks, reduce_ready_partitions_and_remove_grads;
// not BF16_Optimizer, which all-reduces after backward).
bool reduces_in_backward(const Strategy& s);
// GPU memory a gradient reduction allocates while it runs, beyond the IPG bucket. Stages 1-2: allreduce_bucket
// flattens the bucket (and casts it to the communication dtype). Stage 3: reduce_scatter_coalesced concatenates it
// (torch.cat; nothing for __avg_scatter_contiguous_grads' in-place all-reduce); with an offloaded optimizer
// partition_grads holds a GPU copy of each partition, and for NVMe a master-dtype copy for the gradient swapper
// (_offload_grad_partition_at_boundary) until _swap_out_offload_fp32_gradients. The Plan holds it through the
// backward where hooks reduce (they start with the first full bucket, near the backward's peak).
int64_t reduce_temporaries_bytes(const ModelSpec& m, const Strategy& s);

// The largest bucket buffered_allreduce_fallback flattens: parameters in order, a bucket closing once it exceeds
// `cap` elements (engine.py allreduce_no_retain).
int64_t largest_allreduce_bucket(const ModelSpec& m, int64_t cap);

// buffered_allreduce_fallback's buffer for `elements` gradients (stage 0, BF16_Optimizer): the flattened gradients
// (16-bit; BF16_Optimizer's fp32) and their cast to the communication dtype when it differs (allreduce_bucket).
int64_t allreduce_bucket_bytes(const Strategy& s, int64_t elements);

// Swap buffers the ZeRO-3 NVMe optimizer swapper takes at once: 4 per sub-group in flight (its fp32 params, m, v
// and gradient), one sub-group more for pipeline_read (the next one read ahead) and for pipeline_write (the
// previous one still being written), but only while such a neighbour sub-group exists
// (swap_tensor/pipelined_optimizer_swapper.py _swap_in_optimizer_state, swap_out_optimizer_state).
int64_t optimizer_swap_buffers_needed(const OffloadOptimizerConfig& o, int64_t sub_groups);

// The verdict in words, one vocabulary for fit, plan and the GUI: FITS, TIGHT (fits, but with less headroom than
// the model's uncertainty) or DOES NOT FIT.
enum class Verdict { fits, tight, does_not_fit };
// Headroom below which a fit is only TIGHT: 3% of the tightest tier's capacity. The model's fixed costs are
// assumptions that move by about that much between setups (the CUDA context and NCCL buffers: 0.3-0.9 GiB against
// the 1.0 GiB assumed, 1-3% of a 32-80 GiB GPU; the caching allocator's fragmentation: 5% assumed of the tensors,
// more or less by workload; host RSS by PyTorch version), so a smaller margin is within the error of the answer.
inline constexpr double kTightHeadroomFraction = 0.03;
// From a report: does_not_fit unless r.fits; tight when a used tier has required > (1 - 3%) x capacity.
Verdict verdict(const MemoryReport& r);
// The same rule over per-tier peaks and capacities (the Plan's ledger): tiers with nothing required are skipped.
Verdict verdict(bool fits, const std::array<int64_t, 3>& required, const std::array<int64_t, 3>& capacity);
std::string to_string(Verdict v);  // "fits", "tight", "does_not_fit" (JSON)
std::string verdict_word(Verdict v);  // "FITS", "TIGHT", "DOES NOT FIT" (text)

// A hardware fact, not a fix: a tier that overflows as configured ("needs 61.9 GiB GPU memory per GPU, has 32.0
// GiB"). fit prints these apart from the fixes.
struct Limit {
  Tier tier = Tier::gpu;
  int64_t required_bytes = 0;
  int64_t capacity_bytes = 0;
  std::string text;
};
std::vector<Limit> memory_limits(const MemoryReport& r);

// A fix: a patch of the ds_config and of the run settings, and what the configuration it produces needs. The
// patch is evaluated by reading the file again with it (evaluate_patch), so `strategy` and `report` are exactly
// what the patched file gives (`fit --apply-fix N --write-config FILE` writes it).
struct Suggestion {
  std::string text;    // every key it changes, then the effect: "zero_optimization.stage = 3, ...: GPU 31.2 GiB → 9.8 GiB"
  int cost_rank = 0;   // lower is cheaper (slowdown order, docs/MEMORY.md)
  bool fits = false;   // the config fits after this change (report.fits)
  Verdict verdict = Verdict::does_not_fit;
  std::vector<ConfigChange> changes;   // the ds_config patch, in order (on top of the run's own config_changes)
  std::vector<RunChange> run_changes;  // run settings outside the ds_config (--checkpoint-activations, --nodes)
  Strategy strategy;   // evaluate_patch(base, changes, run_changes): the GUI applies it with one click
  MemoryReport report; // memory_model(strategy): the numbers the fix promises
};
// Ranked: fixes that make it fit with room first, then TIGHT ones, then those that only help, each cheapest
// first; a pair or a greedy combination when no single change fits. Only changes are listed; what the hardware
// lacks as configured is memory_limits(). Empty when it fits.
std::vector<Suggestion> suggest_fixes(const ModelSpec& m, const Hardware& hw, const Strategy& s,
                                      const MemoryOptions& o = {});

// "31.2 GiB" (binary units, as nvidia-smi and DeepSpeed's estimator print).
std::string format_bytes(int64_t bytes);

}  // namespace zs::core
