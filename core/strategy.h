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
  bool convert_grad_on_cpu = true;
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

// Top-level "aio" block (parsed with get_scalar_param in DeepSpeed; zerosim still rejects unknown keys,
// but names the renamed thread_count/num_threads explicitly).
struct AioConfig {
  int64_t block_size = 1048576;  // bytes
  int64_t queue_depth = 8;
  int64_t intra_op_parallelism = 1;
  bool single_submit = false;
  bool overlap_events = true;
  bool use_gds = false;
};

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

struct Bf16Config {
  bool enabled = false;
  bool immediate_grad_update = true;
  bool check_overflow = false;
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

// Settings outside ds_config (CLI flags, defaults from the inputs). world = nodes × gpus_per_node.
struct RunSettings {
  int64_t nodes = 1;
  int64_t gpus_per_node = 1;
  int64_t seq_len = 0;           // 0 → model's max_seq_len (filled by the caller)
  int64_t hidden = 0;            // model hidden size, for HF "auto" bucket sizes (0: auto not resolvable)
  bool checkpoint_activations = false;  // --checkpoint-activations (HF gradient_checkpointing)
  // HF TrainingArguments stand-ins used only to resolve "auto" (per_device_train_batch_size default 8,
  // gradient_accumulation_steps default 1); unset → HF's defaults, noted in Strategy::notes.
  std::optional<int64_t> hf_micro_batch;
  std::optional<int64_t> hf_grad_accum;
  std::optional<Precision> hf_precision;  // HF --fp16 / --bf16 for fp16/bf16.enabled "auto"; unset → both false
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

// Reads a ds_config file; `run` supplies world size for the batch rule and hidden for "auto".
Result<Strategy> load_ds_config(const std::string& path, const RunSettings& run);
// Same from text already in memory (`source` names it in messages); used by tests.
Result<Strategy> parse_ds_config_text(const std::string& text, const std::string& source, const RunSettings& run);
// The same file read again under other run settings (other config_changes, micro batch, ...), without I/O.
Result<Strategy> reload_strategy(const Strategy& s, const RunSettings& run);
// Resolve a name or path (see paths.h) and load it.
Result<Strategy> load_strategy(const std::string& name_or_path, const RunSettings& run);

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
void read_aio(ObjectReader& a, AioConfig& aio);
nlohmann::ordered_json zero_optimization_to_json(const ZeroConfig& z);
nlohmann::ordered_json aio_to_json(const AioConfig& a);
}  // namespace detail

}  // namespace zs::core
