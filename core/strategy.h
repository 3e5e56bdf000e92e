// Strategy: a DeepSpeed ds_config.json read with DeepSpeed v0.19's own semantics (code defaults, aliases,
// validators, batch inference, HF "auto"), plus the run settings that live outside it (seq len, nodes, GPUs).
//   RunSettings run{.nodes = 1, .gpus_per_node = 8, .seq_len = 2048, .hidden = 4096};
//   Result<Strategy> s = load_ds_config("configs/deepspeed/zero3-offload-cpu.json", run);
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/config_change.h"
#include "core/launch.h"
#include "core/status.h"

namespace zs::core {

enum class OffloadDevice { none, cpu, nvme };
enum class Precision { fp32, fp16, bf16 };

// offload_param (DeepSpeedZeroOffloadParamConfig). Stage 3 only.
struct OffloadParamConfig {
  OffloadDevice device = OffloadDevice::none;
  std::string nvme_path;           // "" when unset
  int64_t buffer_count = 5;
  int64_t buffer_size = 100000000;  // elements
  int64_t max_in_cpu = 1000000000;  // elements
  bool pin_memory = true;           // default true since PR #8207
};

// offload_optimizer (DeepSpeedZeroOffloadOptimizerConfig). Stages 1-3; nvme swapping is stage 3 only
// (stage 1/2 treat nvme as cpu, noted in Strategy::notes).
struct OffloadOptimizerConfig {
  OffloadDevice device = OffloadDevice::none;
  std::string nvme_path;
  int64_t buffer_count = 4;
  bool pin_memory = true;
  bool pipeline_read = false;
  bool pipeline_write = false;
  bool fast_init = false;
  double ratio = 1.0;  // Twin-Flow: fraction on CPU; < 1 needs stage 3
  bool super_offload = false;
  double cpuadam_cores_perc = 0.8;
};

// zero_optimization (DeepSpeedZeroConfig) — every key with its code default; numbers are elements.
struct ZeroConfig {
  int stage = 0;
  bool contiguous_gradients = true;
  bool reduce_scatter = true;
  int64_t reduce_bucket_size = 500000000;
  bool use_multi_rank_bucket_allreduce = true;
  bool allgather_partitions = true;
  int64_t allgather_bucket_size = 500000000;
  bool overlap_comm = false;  // resolved: None → true for stage 3, false otherwise
  bool load_from_fp32_weights = true;
  bool elastic_checkpoint = false;
  OffloadParamConfig offload_param;
  OffloadOptimizerConfig offload_optimizer;
  bool offload_param_given = false;      // block present in the file
  bool offload_optimizer_given = false;
  int64_t sub_group_size = 1000000000;
  int64_t prefetch_bucket_size = 50000000;   // stage3_prefetch_bucket_size
  int64_t param_persistence_threshold = 100000;  // stage3_param_persistence_threshold
  int64_t model_persistence_threshold = INT64_MAX;  // stage3_model_persistence_threshold (sys.maxsize)
  int64_t max_live_parameters = 1000000000;
  int64_t max_reuse_distance = 1000000000;
  bool gather_16bit_weights_on_model_save = false;
  int64_t module_granularity_threshold = 0;
  bool use_all_reduce_for_fetch_params = false;
  bool allgather_sequential = false;
  bool ignore_unused_parameters = true;
  bool legacy_stage1 = false;
  bool round_robin_gradients = false;
  int64_t zero_hpz_partition_size = 1;
  bool zero_quantized_weights = false;
  bool zero_quantized_nontrainable_weights = false;
  bool zero_quantized_gradients = false;
  int64_t mics_shard_size = -1;
  bool mics_hierarchical_params_gather = false;
  bool memory_efficient_linear = true;
};

// Top-level "aio" block (get_aio_config: get_scalar_param, so other keys are ignored, each noted). Before v0.16.4
// (PR #7056) intra_op_parallelism was called thread_count.
struct AioConfig {
  int64_t block_size = 1048576;  // bytes
  int64_t queue_depth = 8;
  int64_t intra_op_parallelism = 1;
  bool single_submit = false;
  bool overlap_events = true;
  bool use_gds = false;
};

// DeepSpeed's swap_tensor constants: swap I/O sizes are multiples of AIO_ALIGNED_BYTES (× intra_op_parallelism),
// and partitions under max(MIN_AIO_BYTES, block_size) are not worth an aio request (constants.py, utils.py).
inline constexpr int64_t kAioAlignedBytes = 1024;
inline constexpr int64_t kMinAioBytes = 1 << 20;

// The element count swap I/O sizes round up to (partitioned_param_swapper.py numel_alignment).
inline int64_t aio_aligned_numel(const AioConfig& a, int64_t element_bytes) {
  const int64_t n = kAioAlignedBytes * a.intra_op_parallelism / element_bytes;
  return n > 1 ? n : 1;
}

struct ActivationCheckpointing {
  bool enabled = false;  // zerosim run flag (--checkpoint-activations) or HF gradient_checkpointing; DeepSpeed's block has no "enabled"
  bool partition_activations = false;
  bool cpu_checkpointing = false;
  bool contiguous_memory_optimization = false;
  std::optional<int64_t> number_checkpoints;
  bool synchronize_checkpoint_boundary = false;
  bool profile = false;
};

struct OptimizerConfig {
  std::string type = "Adam";  // Adam, AdamW, ... (case-insensitive in DeepSpeed)
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool adam_w_mode = true;  // "Adam" defaults to AdamW mode in DeepSpeed
  bool bias_correction = true;
  bool torch_adam = false;  // torch.optim.Adam(W) instead of FusedAdam / DeepSpeedCPUAdam
  bool given = false;       // the file has an "optimizer" block (else the client's optimizer is used)
};

struct Fp16Config {
  bool enabled = false;
  bool auto_cast = false;
  double loss_scale = 0;  // 0 = dynamic
  int64_t initial_scale_power = 16;
  int64_t loss_scale_window = 1000;
  int64_t hysteresis = 2;
  bool consecutive_hysteresis = false;
  double min_loss_scale = 1;
  bool fp16_master_weights_and_grads = false;
};

// bf16 (precision_config.DeepSpeedBF16Config); defaults depend on the release (kBf16CheckGradOverflowSince, ...).
struct Bf16Config {
  bool enabled = false;
  bool immediate_grad_update = false;
  bool check_grad_overflow = true;
  bool bf16_master_weights_and_grads = false;
  bool bf16_optimizer_states = false;
};

// The DeepSpeed release whose behaviour is modelled where releases differ: offload pin_memory's default and the
// ZeRO-3 boundary gradient copy (PR #8207, first in v0.19.5, made both pinned and non-blocking).
struct DeepSpeedVersion {
  int major = 0, minor = 19, patch = 6;
  auto operator<=>(const DeepSpeedVersion&) const = default;
};
std::optional<DeepSpeedVersion> parse_deepspeed_version(const std::string& text);  // "0.13.3"
std::string to_string(const DeepSpeedVersion& v);
// v0.19.5: offload blocks pin by default; ZeRO-3 copies the boundary fp32 gradients to the host without blocking.
inline constexpr DeepSpeedVersion kPinnedOffloadSince{0, 19, 5};
// v0.19.3 (PR #8035): bf16.check_grad_overflow defaults to true (false before).
inline constexpr DeepSpeedVersion kBf16CheckGradOverflowSince{0, 19, 3};
// v0.17.1 (PR #6976): the bf16 block became a pydantic model and immediate_grad_update defaults to false (true before).
inline constexpr DeepSpeedVersion kBf16ImmediateGradUpdateOffSince{0, 17, 1};
// v0.16.4 (PR #7056): aio.thread_count renamed intra_op_parallelism; the old name is ignored from then on.
inline constexpr DeepSpeedVersion kAioIntraOpParallelismSince{0, 16, 4};

// Settings outside ds_config (CLI flags, defaults from the inputs). world = nodes × gpus_per_node.
struct RunSettings {
  int64_t nodes = 1;
  int64_t gpus_per_node = 1;
  int64_t seq_len = 0;           // the caller fills it: --seq-len, else default_seq_len(model) (model.h)
  int64_t hidden = 0;            // model hidden size, for HF "auto" bucket sizes (0: auto not resolvable)
  bool checkpoint_activations = false;  // --checkpoint-activations (HF gradient_checkpointing)
  // HF TrainingArguments stand-ins that fill "auto" (per_device_train_batch_size default 8,
  // gradient_accumulation_steps default 1); unset → HF's defaults, noted in Strategy::notes. An explicit value in
  // the file wins here; the CLI's --micro-batch / --grad-accum override it through batch_setting_changes().
  std::optional<int64_t> hf_micro_batch;
  std::optional<int64_t> hf_grad_accum;
  // HF --bf16 / --fp16 (TrainingArguments.bf16 / fp16): fills fp16/bf16.enabled "auto", adds the block when the
  // file has none (accelerate does), and an explicit value that contradicts it is HF's mismatch error. Unset:
  // "auto" → false for both, explicit values stand.
  std::optional<Precision> hf_precision;
  LaunchSettings launch;  // launcher, CPU threads per rank, core binding, attention implementation (launch.h)
  DeepSpeedVersion deepspeed_version;  // default: the newest modelled
  // ds_config changes applied to the file before it is read (`--set`, a fit suggestion's patch), in order.
  std::vector<ConfigChange> config_changes;
  int64_t world() const { return nodes * gpus_per_node; }
};

struct Strategy {
  std::string source;       // file path
  std::string config_text;  // the file as read, before run.config_changes (see reload_strategy)
  ZeroConfig zero;
  AioConfig aio;
  ActivationCheckpointing activation_checkpointing;
  OptimizerConfig optimizer;
  Fp16Config fp16;
  Bf16Config bf16;
  int64_t train_batch_size = 0;  // resolved: micro × GA × world
  int64_t micro_batch_per_gpu = 0;
  int64_t gradient_accumulation_steps = 0;
  double gradient_clipping = 1.0;  // default 1.0 since PR #8068
  bool zero_force_ds_cpu_optimizer = true;
  bool zero_allow_untested_optimizer = false;
  std::optional<Precision> grad_accum_dtype;  // data_types.grad_accum_dtype; unset → model dtype
  std::optional<Precision> communication_data_type;  // unset → model dtype
  bool prescale_gradients = false;
  double gradient_predivide_factor = 1.0;
  bool amp_enabled = false;  // apex AMP ("amp" block); incompatible with ZeRO and fp16/bf16
  // Accepted DeepSpeed keys zerosim does not model (scheduler, monitors, zenflow, ...), as a ds_config-shaped
  // JSON object text; resolved_config_json merges it back so the resolved file stays runnable.
  std::string unmodelled_json = "{}";
  RunSettings run;
  // Human-readable notes about resolution: "auto" values and where they came from, DeepSpeed quirks applied
  // (e.g. "offload_optimizer.device nvme under stage 2 behaves as cpu").
  std::vector<std::string> notes;

  Precision model_dtype() const { return bf16.enabled ? Precision::bf16 : fp16.enabled ? Precision::fp16 : Precision::fp32; }
  int64_t world() const { return run.world(); }
};

// Rules DeepSpeed derives from several keys; each lives here once.
// engine.py communication_data_type: the configured dtype, else fp16 / bf16 when enabled, else fp32.
Precision communication_dtype(const Strategy& s);
// engine.py _do_optimizer_sanity_check: bf16 + ZeRO stage 1 + data_types.grad_accum_dtype fp32 without optimizer
// offload selects BF16_Optimizer (bf16_optimizer.py): a full fp32 gradient buffer, reduced after backward.
bool uses_bf16_optimizer(const Strategy& s);
// engine.py MEMORY_OPT_ALLREDUCE_SIZE: the bucket of buffered_allreduce_fallback (stage 0, BF16_Optimizer).
inline constexpr int64_t kMemoryOptAllreduceSize = 500000000;
// The ranks a ZeRO state is partitioned over: the data-parallel world, or with MiCS (stage 3, mics_shard_size > 0)
// the shard group (engine.py _return_mics_optimizer; zero/mics.py MiCS_Init partitions within it and replicates
// across world / shard groups).
int64_t partition_world(const Strategy& s);
// stage_1_and_2.py: contiguous_gradients or cpu_offload; stage3.py: as configured.
bool contiguous_gradients_in_effect(const Strategy& s);

// Reads a ds_config file; `run` supplies world size for the batch rule and hidden for "auto".
Result<Strategy> load_ds_config(const std::string& path, const RunSettings& run);
// Same from text already in memory (`source` names it in messages); used by tests.
Result<Strategy> parse_ds_config_text(const std::string& text, const std::string& source, const RunSettings& run);
// The same file read again under other run settings (other config_changes, micro batch, ...), without I/O.
Result<Strategy> reload_strategy(const Strategy& s, const RunSettings& run);
// Resolve a name or path (see paths.h) and load it.
Result<Strategy> load_strategy(const std::string& name_or_path, const RunSettings& run);

// --micro-batch / --grad-accum as overrides of the file (run.hf_micro_batch / hf_grad_accum): the ds_config changes
// that make `root` (the file as read) say them, to go first in RunSettings::config_changes. A key the file sets to
// another number, or leaves out, is set; "auto" is left for the HF pass to fill. When a flag decides a value the
// file did not already give, an explicit train_batch_size is removed (value null) so DeepSpeed's rule
// (micro × GA × world) recomputes it. The Strategy read with these changes notes each override.
std::vector<ConfigChange> batch_setting_changes(const nlohmann::json& root, const RunSettings& run);

// The resolved config as ds_config JSON text (every key explicit), for `fit --json`'s resolved_config.
std::string resolved_config_json(const Strategy& s);

std::string to_string(OffloadDevice d);
std::string to_string(Precision p);
int64_t bytes_per_element(Precision p);

class ObjectReader;
// The parser is split over strategy.cpp and strategy_zero.cpp (size); these are its internal seams.
namespace detail {
// zero_optimization (or its absence) into s.zero; stage-dependent checks and notes; unmodelled keys go to
// unmodelled["zero_optimization"]. Errors are recorded in the reader.
void read_zero_optimization(ObjectReader& z, Strategy& s, nlohmann::json& unmodelled);
void read_aio(ObjectReader& a, const DeepSpeedVersion& v, AioConfig& aio, std::vector<std::string>& notes);
// Every top-level key that is not one of the modelled blocks, by the table in strategy_blocks.cpp: DeepSpeed's
// strict blocks checked key by key, lenient blocks' ignored keys noted, blocks DeepSpeed uses carried into
// `unmodelled`, and unknown top-level keys (which DeepSpeed ignores) noted, not carried.
void read_other_keys(ObjectReader& r, Strategy& s, nlohmann::json& unmodelled);
// Keys a lenient block (DeepSpeed's get_scalar_param) does not read: a note each, with the nearest key it reads;
// returns them (accepted).
std::vector<std::string> note_ignored_keys(ObjectReader& b, std::vector<std::string>& notes);
// Features DeepSpeed runs that zerosim does not model: the first one set in `root` as bad input, else ok.
Status refuse_unmodelled(const nlohmann::json& root, const std::string& file);
// Any "auto" the HF pass left, as DeepSpeed treats it block by block (dropped in pydantic blocks).
Status sweep_autos(nlohmann::json& root, const std::string& file, std::vector<std::string>& notes);
nlohmann::ordered_json zero_optimization_to_json(const ZeroConfig& z);
nlohmann::ordered_json aio_to_json(const AioConfig& a, const DeepSpeedVersion& v);  // the release's key names
// A note for each value run.config_changes changed in `original` (the file as read) to give `changed`: the batch
// overrides in the words of the flags that made them ("--micro-batch 4 overrides ..."), any other key once, with
// the file's value.
void note_config_changes(const nlohmann::json& original, const nlohmann::json& changed, const RunSettings& run,
                         std::vector<std::string>& notes);
}  // namespace detail

}  // namespace zs::core
