// How DeepSpeed v0.19.6 reads each top-level ds_config key, as one table (kTopLevel): a pydantic model with
// extra="forbid" (an unknown key is an error), key by key with get_scalar_param (other keys are ignored: noted
// here), or a dict handed on whole; and what zerosim does with it. A second table (kNotModelled) lists the
// features DeepSpeed runs that zerosim does not model, refused by name. See docs/DS_CONFIG.md.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/json_reader.h"
#include "core/strategy.h"

namespace zs::core::detail {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// How DeepSpeed treats the keys inside a block.
enum class Check {
  strict,   // a DeepSpeedConfigModel (config_utils.py): extra="forbid", and "auto" values are dropped (→ default)
  lenient,  // read key by key (get_scalar_param / dict.get): other keys are ignored; "auto" stays a string
  opaque,   // handed on whole (scheduler and optimizer constructors, apex, the pipeline engine): keys unchecked here
};
// What zerosim does with a key: reads it into Strategy (strategy.cpp / strategy_zero.cpp), or carries it into the
// resolved config without modelling it, quietly (logging, scheduling) or with an "accepted, not modelled" note.
enum class Use { modelled, quiet, noted };
enum class Kind { object, boolean, integer, number, string, any };

struct TopLevelKey {
  const char* key;
  Kind kind;
  Check check;  // objects only
  Use use;
  std::vector<const char*> fields;  // strict: every field the model has; lenient: the keys read; empty: unchecked
  const char* source;               // DeepSpeed file → what reads it
};

// Every top-level key DeepSpeedConfig._initialize_params (runtime/config.py) and deepspeed.initialize read.
const std::vector<TopLevelKey> kTopLevel = {
    // Modelled: read by strategy.cpp / strategy_zero.cpp.
    {"train_batch_size", Kind::integer, Check::lenient, Use::modelled, {}, "runtime/config.py get_train_batch_size"},
    {"train_micro_batch_size_per_gpu", Kind::integer, Check::lenient, Use::modelled, {}, "runtime/config.py"},
    {"gradient_accumulation_steps", Kind::integer, Check::lenient, Use::modelled, {}, "runtime/config.py"},
    {"gradient_clipping", Kind::number, Check::lenient, Use::modelled, {}, "runtime/config.py get_gradient_clipping"},
    {"zero_allow_untested_optimizer", Kind::boolean, Check::lenient, Use::modelled, {}, "runtime/config.py"},
    {"zero_force_ds_cpu_optimizer", Kind::boolean, Check::lenient, Use::modelled, {}, "runtime/config.py"},
    {"prescale_gradients", Kind::boolean, Check::lenient, Use::modelled, {}, "runtime/config.py"},
    {"gradient_predivide_factor", Kind::number, Check::lenient, Use::modelled, {}, "runtime/config.py"},
    {"communication_data_type", Kind::string, Check::lenient, Use::modelled, {}, "get_communication_data_type"},
    {"allgather_size", Kind::number, Check::lenient, Use::modelled, {}, "zero/config.py read_zero_config_deprecated"},
    {"zero_optimization", Kind::object, Check::strict, Use::modelled, {}, "runtime/zero/config.py DeepSpeedZeroConfig"},
    {"fp16", Kind::object, Check::strict, Use::modelled, {}, "runtime/precision_config.py DeepSpeedFP16Config"},
    {"bf16", Kind::object, Check::strict, Use::modelled, {}, "runtime/precision_config.py DeepSpeedBF16Config"},
    {"bfloat16", Kind::object, Check::strict, Use::modelled, {}, "precision_config.py get_bfloat16_config"},
    {"aio", Kind::object, Check::lenient, Use::modelled, {}, "runtime/swap_tensor/aio_config.py get_aio_config"},
    {"activation_checkpointing",
     Kind::object,
     Check::lenient,
     Use::modelled,
     {},
     "runtime/activation_checkpointing/config.py DeepSpeedActivationCheckpointingConfig"},
    {"optimizer", Kind::object, Check::opaque, Use::modelled, {}, "engine.py _configure_basic_optimizer"},
    {"data_types", Kind::object, Check::lenient, Use::modelled, {}, "runtime/config.py get_data_types_params"},
    {"amp", Kind::object, Check::opaque, Use::modelled, {}, "runtime/config.py get_amp_params (apex)"},

    // Scalars carried into the resolved config.
    {"steps_per_print", Kind::integer, Check::lenient, Use::quiet, {}, "runtime/config.py get_steps_per_print"},
    {"wall_clock_breakdown", Kind::boolean, Check::lenient, Use::quiet, {}, "runtime/config.py"},
    {"memory_breakdown", Kind::boolean, Check::lenient, Use::quiet, {}, "runtime/config.py"},
    {"dump_state", Kind::boolean, Check::lenient, Use::quiet, {}, "runtime/config.py"},
    {"disable_allgather", Kind::boolean, Check::lenient, Use::quiet, {}, "runtime/config.py"},
    {"sparse_gradients", Kind::boolean, Check::lenient, Use::quiet, {}, "runtime/config.py"},
    {"dataloader_drop_last", Kind::boolean, Check::lenient, Use::quiet, {}, "runtime/config.py"},
    {"use_data_before_expert_parallelism", Kind::boolean, Check::lenient, Use::quiet, {}, "runtime/config.py"},
    {"graph_harvesting", Kind::boolean, Check::lenient, Use::quiet, {}, "runtime/config.py"},
    {"managed_gradient_accumulation", Kind::boolean, Check::lenient, Use::quiet, {}, "runtime/config.py"},
    {"vocabulary_size", Kind::integer, Check::lenient, Use::quiet, {}, "runtime/config.py _do_warning_check"},
    {"sequence_parallel_size", Kind::integer, Check::lenient, Use::quiet, {}, "runtime/config.py DeepSpeedConfig"},
    {"data_parallel_size", Kind::integer, Check::lenient, Use::quiet, {}, "deepspeed/__init__.py initialize"},
    {"seq_parallel_communication_data_type", Kind::string, Check::lenient, Use::quiet, {}, "runtime/config.py"},
    {"gradient_allreduce_op", Kind::string, Check::lenient, Use::quiet, {}, "get_gradient_allreduce_op"},
    {"log_level", Kind::any, Check::lenient, Use::quiet, {}, "runtime/config.py get_log_level"},

    // Routine blocks: carried quietly.
    {"scheduler", Kind::object, Check::opaque, Use::quiet, {}, "runtime/config.py get_scheduler_name/params"},
    {"checkpoint",
     Kind::object,
     Check::lenient,
     Use::quiet,
     {"tag_validation", "checkpoint_serialization", "writer", "load_universal", "use_node_local_storage",
      "parallel_write"},
     "runtime/model_checkpointing/config.py get_checkpoint_config"},
    {"flops_profiler",
     Kind::object,
     Check::lenient,
     Use::quiet,
     {"enabled", "recompute_fwd_factor", "profile_step", "module_depth", "top_modules", "detailed", "output_file"},
     "profiling/config.py DeepSpeedFlopsProfilerConfig"},
    {"tensorboard",
     Kind::object,
     Check::strict,
     Use::quiet,
     {"enabled", "output_path", "job_name"},
     "monitor/config.py TensorBoardConfig"},
    {"wandb",
     Kind::object,
     Check::strict,
     Use::quiet,
     {"enabled", "group", "team", "project"},
     "monitor/config.py WandbConfig"},
    {"csv_monitor",
     Kind::object,
     Check::strict,
     Use::quiet,
     {"enabled", "output_path", "job_name"},
     "monitor/config.py CSVConfig"},
    {"comet",
     Kind::object,
     Check::strict,
     Use::quiet,
     {"enabled", "samples_log_interval", "project", "workspace", "api_key", "experiment_name", "experiment_key",
      "online", "mode"},
     "monitor/config.py CometConfig"},
    {"comms_logger",
     Kind::object,
     Check::strict,
     Use::quiet,
     {"enabled", "prof_all", "prof_ops", "verbose", "debug"},
     "comm/config.py CommsLoggerConfig"},
    {"timers", Kind::object, Check::lenient, Use::quiet, {"throughput"}, "utils/config.py get_timers_config"},

    // Other blocks DeepSpeed reads: carried with an "accepted, not modelled" note (kNotModelled refuses the
    // settings that would change what zerosim predicts).
    {"autotuning",
     Kind::object,
     Check::lenient,
     Use::noted,
     {"enabled",
      "fast",
      "results_dir",
      "exps_dir",
      "overwrite",
      "start_profile_step",
      "end_profile_step",
      "metric",
      "metric_path",
      "tuner_type",
      "tuner_early_stopping",
      "tuner_num_trials",
      "arg_mappings",
      "model_info",
      "model_info_path",
      "mp_size",
      "max_train_batch_size",
      "min_train_batch_size",
      "max_train_micro_batch_size_per_gpu",
      "min_train_micro_batch_size_per_gpu",
      "num_tuning_micro_batch_sizes"},
     "autotuning/config.py DeepSpeedAutotuningConfig"},
    {"nebula",
     Kind::object,
     Check::lenient,
     Use::noted,
     {"enabled", "enable_nebula_load", "nebula_load_path", "persistent_storage_path", "persistent_time_interval",
      "num_of_version_in_retention"},
     "nebula/config.py DeepSpeedNebulaConfig"},
    {"datastates_ckpt", Kind::any, Check::opaque, Use::noted, {}, "datastates/config.py"},
    {"eigenvalue",
     Kind::object,
     Check::lenient,
     Use::noted,
     {"enabled", "verbose", "max_iter", "tol", "stability", "gas_boundary_resolution", "layer_name", "layer_num"},
     "runtime/config.py get_eigenvalue_config"},
    {"sparse_attention",
     Kind::object,
     Check::lenient,
     Use::noted,
     {"mode", "block", "different_layout_per_head", "num_local_blocks", "num_global_blocks", "attention",
      "horizontal_global_attention", "num_different_global_patterns", "num_random_blocks", "local_window_blocks",
      "global_block_indices", "global_block_end_indices", "num_sliding_window_blocks"},
     "runtime/config.py get_sparse_attention"},
    {"progressive_layer_drop",
     Kind::object,
     Check::lenient,
     Use::noted,
     {"enabled", "theta", "gamma"},
     "runtime/config.py get_pld_enabled/params"},
    {"torch_autocast",
     Kind::object,
     Check::lenient,
     Use::noted,
     {"enabled", "dtype", "lower_precision_safe_modules"},
     "runtime/config.py get_torch_autocast_*"},
    {"pipeline", Kind::object, Check::opaque, Use::noted, {}, "runtime/config.py get_pipeline_config"},
    {"curriculum_learning", Kind::object, Check::opaque, Use::noted, {}, "data_pipeline/config.py (legacy)"},
    {"data_efficiency", Kind::object, Check::opaque, Use::noted, {}, "data_pipeline/config.py"},
    {"compression_training", Kind::object, Check::opaque, Use::noted, {}, "compression/config.py"},
    {"quantize_training", Kind::object, Check::opaque, Use::noted, {}, "compression/config.py get_quantize_enabled"},
    {"elasticity", Kind::object, Check::opaque, Use::noted, {}, "elasticity/config.py ElasticityConfig"},
    {"expert_parallel", Kind::object, Check::opaque, Use::noted, {}, "module_inject/auto_ep_config.py"},
    {"hybrid_engine",
     Kind::object,
     Check::strict,
     Use::noted,
     {"enabled", "max_out_tokens", "inference_tp_size", "release_inference_cache", "pin_parameters",
      "tp_gather_partition_size", "enable_cuda_graph"},
     "runtime/config.py HybridEngineConfig"},
    {"compile",
     Kind::object,
     Check::strict,
     Use::noted,
     {"deepcompile", "free_activation", "free_activation_threshold", "offload_activation",
      "offload_activation_pin_memory", "offload_opt_states", "double_buffer", "symmetric_memory", "debug_log",
      "offload_parameters", "sync_before_reduce", "sync_after_reduce", "sync_before_allgather", "sync_after_allgather",
      "keep_int_input_tensors", "keep_all_input_tensors", "passes"},
     "compile/config.py CompileConfig"},
    {"tensor_parallel",
     Kind::object,
     Check::strict,
     Use::noted,
     {"dtype", "autotp_size", "tp_overlap_comm", "tp", "tensor_parallel", "injection_policy_tuple", "partition_config",
      "preset_model", "keep_module_on_host", "replace_with_kernel_inject", "kernel_inject"},
     "runtime/tensor_parallel/config.py TPTrainingConfig"},
    {"weight_quantization",
     Kind::object,
     Check::strict,
     Use::noted,
     {"enabled", "num_bits", "q_type", "q_groups", "quantized_initialization", "post_init_quant"},
     "inference/config.py WeightQuantConfig"},
};

// Pydantic models nested in the blocks above (zero_optimization's are read in strategy_zero.cpp).
struct NestedModel {
  const char* parent;
  std::vector<const char*> names;  // the field name and its alias
  std::vector<const char*> fields;
};
const std::vector<NestedModel> kNested = {
    {"timers", {"throughput"}, {"enabled", "synchronized"}},  // DeepSpeedThroughputTimerConfig
    {"tensor_parallel", {"tp", "tensor_parallel"}, {"tp_size", "tp_grain_size", "mpu", "tp_group"}},  // TPConfig
};

// Features DeepSpeed runs that zerosim does not model: refused by name, never silently ignored. MiCS
// (mics_shard_size) and aio.use_gds are read into the Strategy and modelled, so they are not here.
enum class When { is_true, is_false, above_one, present, enabled_by_default };
struct NotModelled {
  const char* path;  // dotted ds_config path
  When when;
  const char* feature;
  const char* plain;  // "remove the key to get numbers for the plain <plain> run"
};
const std::vector<NotModelled> kNotModelled = {
    {"zero_optimization.zenflow", When::present, "ZenFlow (CPU optimizer steps overlapped with backward)",
     "ZeRO-Offload"},
    {"zero_optimization.offload_optimizer.super_offload", When::is_true, "SuperOffload", "ZeRO-Offload"},
    {"zero_optimization.zero_quantized_weights", When::is_true, "ZeRO++ qwZ (quantized weight all-gather)", "ZeRO"},
    {"zero_optimization.zero_quantized_gradients", When::is_true, "ZeRO++ qgZ (quantized gradient reduce-scatter)",
     "ZeRO"},
    {"zero_optimization.zero_quantized_nontrainable_weights", When::is_true,
     "quantized frozen weights (zero_quantized_nontrainable_weights)", "ZeRO"},
    {"sequence_parallel_size", When::above_one, "Ulysses sequence parallelism", "data-parallel"},
    {"tensor_parallel.autotp_size", When::above_one, "AutoTP tensor parallelism", "data-parallel"},
    {"tensor_parallel.tp.tp_size", When::above_one, "tensor parallelism", "data-parallel"},
    {"tensor_parallel.tensor_parallel.tp_size", When::above_one, "tensor parallelism", "data-parallel"},
    {"pipeline.stages", When::above_one, "pipeline parallelism", "data-parallel"},
    {"expert_parallel.enabled", When::is_true, "AutoEP expert parallelism (MoE)", "data-parallel"},
    {"hybrid_engine.enabled", When::is_true, "the hybrid engine (RLHF generation inside training)", "training-only"},
    {"elasticity.enabled", When::is_true, "elastic training (DeepSpeed picks the batch sizes)", "fixed-batch"},
    {"torch_autocast.enabled", When::is_true, "torch_autocast mixed precision", "fp16/bf16/fp32"},
    {"amp.enabled", When::is_true, "apex AMP", "fp16/bf16/fp32"},
    {"compile.deepcompile", When::is_true, "DeepCompile", "eager"},
    {"progressive_layer_drop.enabled", When::is_true, "progressive layer drop", "full-depth"},
    {"curriculum_learning.enabled", When::is_true, "curriculum learning (the sequence length grows)", "fixed-length"},
    {"data_efficiency.enabled", When::is_true, "data efficiency (curriculum sampling, random-LTD)", "plain"},
    {"weight_quantization", When::enabled_by_default, "weight quantization (ZeRO-Inference)", "16-bit"},
    {"managed_gradient_accumulation", When::is_false,
     "client-managed gradient accumulation (every step() updates the weights)", "DeepSpeed-managed"},
};

const Json* at_path(const Json& root, const std::string& path) {
  const Json* j = &root;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!j->is_object()) return nullptr;
    auto it = j->find(part);
    if (it == j->end()) return nullptr;
    j = &*it;
    if (dot == std::string::npos) return j;
    start = dot + 1;
  }
}

bool applies(const Json& v, When when) {
  switch (when) {
    case When::is_true:
      return v.is_boolean() && v.get<bool>();
    case When::is_false:
      return v.is_boolean() && !v.get<bool>();
    case When::above_one:
      return v.is_number() && !v.is_boolean() && v.get<double>() > 1.0;
    case When::present:
      return !v.is_null();
    case When::enabled_by_default: {
      if (!v.is_object()) return false;
      auto it = v.find("enabled");
      return it == v.end() || it->is_null() || (it->is_boolean() && it->get<bool>());
    }
  }
  return false;
}

const TopLevelKey* top_level(const std::string& key) {
  for (const auto& k : kTopLevel)
    if (key == k.key) return &k;
  return nullptr;
}

bool comment_key(const std::string& k) { return (!k.empty() && k[0] == '_') || k.find("comment") != std::string::npos; }

// A scalar the table lists, type-checked as DeepSpeed would use it; the value to carry, or nullptr.
const Json* read_scalar(ObjectReader& r, const TopLevelKey& k) {
  switch (k.kind) {
    case Kind::boolean:
      r.opt_boolean({k.key});
      break;
    case Kind::integer:
      r.opt_integer({k.key}, 0, kMax);
      break;
    case Kind::number:
      r.opt_number({k.key}, 0.0, std::numeric_limits<double>::infinity());
      break;
    case Kind::string:
      r.opt_string({k.key});
      break;
    case Kind::object:
    case Kind::any:
      break;
  }
  const Json* v = r.raw({k.key});
  return v && !v->is_null() ? v : nullptr;
}

// gradient_allreduce_op: "mean" or "sum" (any case); "sum" is a ValueError with ZeRO-3 (_do_error_check).
void check_allreduce_op(ObjectReader& r, const Strategy& s) {
  auto v = r.opt_string({"gradient_allreduce_op"});
  if (!v) return;
  std::string op = *v;
  for (auto& ch : op) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (op != "mean" && op != "sum")
    r.fail("gradient_allreduce_op", "\"" + *v + "\" is not one of mean, sum (get_gradient_allreduce_op raises)");
  else if (op == "sum" && s.zero.stage == 3)
    r.fail("gradient_allreduce_op", "\"sum\" is not supported with ZeRO stage 3 (DeepSpeed raises in _do_error_check)");
}

}  // namespace

std::vector<std::string> note_ignored_keys(ObjectReader& b, std::vector<std::string>& notes) {
  std::vector<std::string> keys;
  for (const auto& k : b.accept_unknown()) {
    keys.push_back(k.key);
    const bool comment = comment_key(k.key);
    notes.push_back(b.key_path(k.key) + ": not a key DeepSpeed reads here (the block is read key by key and other " +
                    "keys are ignored), so it has no effect" +
                    (!comment && !k.nearest.empty() ? "; did you mean \"" + k.nearest + "\"?" : ""));
  }
  return keys;
}

void read_other_keys(ObjectReader& r, Strategy& s, Json& unmodelled) {
  for (const auto& k : kTopLevel) {
    if (k.use == Use::modelled) {
      r.raw({k.key});  // known, for "did you mean" below
      continue;
    }
    if (k.kind != Kind::object) {
      if (const Json* v = read_scalar(r, k)) unmodelled[k.key] = *v;
      continue;
    }
    ObjectReader b = r.object({k.key});
    if (!b.present()) continue;
    Json carried = *r.raw({k.key});
    if (k.check == Check::opaque || k.fields.empty()) {
      for (const auto& key : b.unknown_keys()) b.accept({key.c_str()});
    } else {
      for (const char* f : k.fields) b.raw({f});
      for (const auto& n : kNested) {
        if (std::string(n.parent) != k.key) continue;
        for (const char* name : n.names) {
          ObjectReader c = b.object({name});
          for (const char* f : n.fields) c.raw({f});  // strict: an unknown key fails at finish()
        }
      }
      if (k.check == Check::lenient)
        for (const auto& key : note_ignored_keys(b, s.notes)) carried.erase(key);
    }
    unmodelled[k.key] = carried;
    if (k.use == Use::noted) s.notes.push_back(std::string(k.key) + ": accepted, not modelled");
  }
  check_allreduce_op(r, s);

  // DeepSpeedConfig reads the keys it knows one by one, so any other top-level key is ignored: noted (a typo
  // does nothing in DeepSpeed), not carried into the resolved config.
  for (const auto& k : r.accept_unknown()) {
    if (comment_key(k.key)) {
      s.notes.push_back(k.key + ": a comment key; DeepSpeed ignores unknown top-level keys");
      continue;
    }
    s.notes.push_back(k.key + ": not a DeepSpeed key; DeepSpeed ignores unknown top-level keys, so it has no effect" +
                      (k.nearest.empty() ? std::string() : "; did you mean \"" + k.nearest + "\"?"));
  }
}

Status refuse_unmodelled(const Json& root, const std::string& file) {
  for (const auto& n : kNotModelled) {
    const Json* v = at_path(root, n.path);
    if (!v || !applies(*v, n.when)) continue;
    return bad_input(file + ": " + n.path + ": zerosim does not model " + n.feature +
                     " yet; remove the key to get numbers for the plain " + n.plain + " run");
  }
  return {};
}

namespace {

enum class AutoRule { to_default, erase, error, leave };

// "auto" inside an object: pydantic models drop it (the field keeps its default: null here, or erased in blocks
// carried verbatim); blocks read key by key keep the string, which zerosim refuses where it reads the key.
Status sweep(Json& j, const std::string& path, const std::string& file, AutoRule rule,
             std::vector<std::string>& notes) {
  if (!j.is_object() || rule == AutoRule::leave) return {};
  for (auto it = j.begin(); it != j.end();) {
    const std::string key = it.key();
    const std::string p = path + "." + key;
    if (it->is_string() && it->get<std::string>() == "auto") {
      if (rule == AutoRule::error)
        return bad_input(file + ": " + p +
                         ": \"auto\" is not filled by the HF Trainer and DeepSpeed does not resolve it here (the "
                         "block is read key by key, so it would get the string \"auto\"); write a value");
      notes.push_back(p +
                      ": \"auto\" → default (the HF Trainer does not fill it; DeepSpeed's pydantic models drop "
                      "\"auto\" values and use the code default)");
      if (rule == AutoRule::erase) {
        it = j.erase(it);
        continue;
      }
      *it = nullptr;
    } else if (it->is_object() && path == "zero_optimization") {
      // Nested pydantic models; zeropp_loco_param is a plain Dict, so its "auto" stays.
      if (key == "offload_param" || key == "offload_optimizer")
        ZS_TRY(sweep(*it, p, file, AutoRule::to_default, notes));
      else if (key != "zeropp_loco_param")
        ZS_TRY(sweep(*it, p, file, AutoRule::erase, notes));
    }
    ++it;
  }
  return {};
}

}  // namespace

Status sweep_autos(Json& root, const std::string& file, std::vector<std::string>& notes) {
  if (!root.is_object()) return {};
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string key = it.key();
    const TopLevelKey* k = top_level(key);
    if (it->is_string() && it->get<std::string>() == "auto") {
      if (!k || k->use != Use::modelled) continue;  // ignored by DeepSpeed, or carried as written
      return bad_input(file + ": " + key +
                       ": \"auto\" is not filled by the HF Trainer and DeepSpeed does not resolve it; write a value");
    }
    if (!it->is_object() || !k) continue;
    AutoRule rule = AutoRule::leave;
    if (k->check == Check::strict)
      rule = k->use == Use::modelled ? AutoRule::to_default : AutoRule::erase;
    else if (k->use == Use::modelled)
      rule = AutoRule::error;  // aio, activation_checkpointing, optimizer, amp, data_types would get the string
    ZS_TRY(sweep(*it, key, file, rule, notes));
  }
  return {};
}

}  // namespace zs::core::detail
