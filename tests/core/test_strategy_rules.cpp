// The ds_config reading rules, one test each, as DeepSpeed v0.19.6 reads a config (each cites the DeepSpeed file
// and function it follows): top-level keys DeepSpeed ignores, strict (pydantic) and lenient (get_scalar_param)
// blocks, deprecated aliases, the bf16 block across releases, the keys the resolved config writes, and the features
// zerosim refuses because it does not model them.
#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "core/strategy.h"

using namespace zs::core;

namespace {

RunSettings run_of(int64_t gpus = 1) {
  RunSettings r;
  r.gpus_per_node = gpus;
  r.hidden = 1024;
  return r;
}

Strategy ok(const std::string& text, const RunSettings& run = run_of()) {
  auto s = parse_ds_config_text(text, "cfg.json", run);
  INFO(text);
  if (!s) FAIL(s.error().message);
  return *s;
}

std::string err(const std::string& text, const RunSettings& run = run_of()) {
  auto s = parse_ds_config_text(text, "cfg.json", run);
  INFO(text);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().kind == ErrorKind::bad_input);  // exit 2
  return s.error().message;
}

bool has_note(const Strategy& s, const std::string& fragment) {
  return std::any_of(s.notes.begin(), s.notes.end(),
                     [&](const std::string& n) { return n.find(fragment) != std::string::npos; });
}

// A config with the micro batch set and `body` appended.
std::string cfg(const std::string& body) { return R"({"train_micro_batch_size_per_gpu": 1, )" + body + "}"; }
std::string zero(const std::string& body) { return cfg(R"("zero_optimization": {)" + body + "}"); }

}  // namespace

// runtime/config.py DeepSpeedConfig._initialize_params reads each key it knows with get_* helpers
// (config_utils.py get_scalar_param = dict.get), so any other top-level key is never looked at.
TEST_CASE("rule 1: top-level keys DeepSpeed ignores are accepted with a note, and not carried", "[strategy][rules]") {
  Strategy s = ok(cfg(R"("_comment": "x", "comms_config": {"verbose": false}, "monitor_config": {"enabled": true},
      "gradient_cliping": 0.5, "steps_per_print": 7)"));
  CHECK(has_note(s, "_comment: a comment key; DeepSpeed ignores unknown top-level keys"));
  CHECK(has_note(s, "comms_config: not a DeepSpeed key; DeepSpeed ignores unknown top-level keys"));
  CHECK(has_note(s, "monitor_config: not a DeepSpeed key"));
  // A typo does nothing in DeepSpeed: the default applies and the note names the key meant.
  CHECK(has_note(s,
                 "gradient_cliping: not a DeepSpeed key; DeepSpeed ignores unknown top-level keys, so it has no "
                 "effect; did you mean \"gradient_clipping\"?"));
  CHECK(s.gradient_clipping == 1.0);
  const std::string resolved = resolved_config_json(s);
  for (const char* gone : {"_comment", "comms_config", "monitor_config", "gradient_cliping"})
    CHECK_THAT(resolved, !Catch::Contains(gone));
  CHECK_THAT(resolved, Catch::Contains("\"steps_per_print\": 7"));  // a key DeepSpeed reads is carried
}

// config_utils.py DeepSpeedConfigModel: model_config extra="forbid", so every pydantic block refuses unknown keys:
// zero/config.py DeepSpeedZeroConfig, zero/offload_config.py, precision_config.py DeepSpeedFP16Config /
// DeepSpeedBF16Config, comm/config.py CommsLoggerConfig, monitor/config.py (TensorBoard/Wandb/CSV/CometConfig),
// compile/config.py CompileConfig, runtime/config.py HybridEngineConfig, utils/config.py
// DeepSpeedThroughputTimerConfig, tensor_parallel/config.py TPTrainingConfig / TPConfig.
TEST_CASE("rule 2a: unknown keys in DeepSpeed's pydantic blocks are errors with \"did you mean\"",
          "[strategy][rules]") {
  CHECK_THAT(err(zero(R"("stage": 3, "stage3_prefetch_bucket": 1)")),
             Catch::Contains("cfg.json: zero_optimization.stage3_prefetch_bucket: unknown key; did you mean "
                             "\"stage3_prefetch_bucket_size\"?"));
  CHECK_THAT(err(zero(R"("stage": 3, "offload_param": {"device": "cpu", "pin_memroy": true})")),
             Catch::Contains("zero_optimization.offload_param.pin_memroy: unknown key; did you mean \"pin_memory\"?"));
  CHECK_THAT(err(cfg(R"("fp16": {"enabled": true, "initial_scale_powr": 12})")),
             Catch::Contains("fp16.initial_scale_powr: unknown key; did you mean \"initial_scale_power\"?"));
  CHECK_THAT(err(cfg(R"("bf16": {"enabled": true, "loss_scale": 0})")),
             Catch::Contains("bf16.loss_scale: unknown key"));
  CHECK_THAT(err(cfg(R"("tensorboard": {"enabled": true, "output_dir": "/tmp"})")),
             Catch::Contains("tensorboard.output_dir: unknown key; did you mean \"output_path\"?"));
  CHECK_THAT(err(cfg(R"("wandb": {"enabled": true, "projet": "x"})")),
             Catch::Contains("wandb.projet: unknown key; did you mean \"project\"?"));
  CHECK_THAT(err(cfg(R"("comms_logger": {"enabled": true, "verbos": true})")),
             Catch::Contains("comms_logger.verbos: unknown key; did you mean \"verbose\"?"));
  CHECK_THAT(err(cfg(R"("csv_monitor": {"enabled": false, "tag": "x"})")),
             Catch::Contains("csv_monitor.tag: unknown key"));
  CHECK_THAT(err(cfg(R"("compile": {"deepcompil": false})")),
             Catch::Contains("compile.deepcompil: unknown key; did you mean \"deepcompile\"?"));
  CHECK_THAT(err(cfg(R"("hybrid_engine": {"enabled": false, "max_out_token": 8})")),
             Catch::Contains("hybrid_engine.max_out_token: unknown key; did you mean \"max_out_tokens\"?"));
  CHECK_THAT(err(cfg(R"("timers": {"throughput": {"enable": true}})")),
             Catch::Contains("timers.throughput.enable: unknown key; did you mean \"enabled\"?"));
  CHECK_THAT(err(cfg(R"("tensor_parallel": {"tp": {"tp_sise": 1}})")),
             Catch::Contains("tensor_parallel.tp.tp_sise: unknown key; did you mean \"tp_size\"?"));
  // The valid keys of those blocks are accepted and carried.
  Strategy s = ok(cfg(R"("tensorboard": {"enabled": true, "output_path": "/tmp", "job_name": "j"},
      "comms_logger": {"enabled": true, "prof_all": true, "prof_ops": [], "verbose": false, "debug": false},
      "timers": {"throughput": {"enabled": true, "synchronized": false}})"));
  CHECK_THAT(resolved_config_json(s), Catch::Contains("\"job_name\": \"j\""));
}

// Blocks read key by key, where other keys are ignored: swap_tensor/aio_config.py get_aio_config,
// activation_checkpointing/config.py DeepSpeedActivationCheckpointingConfig._initialize, profiling/config.py
// DeepSpeedFlopsProfilerConfig._initialize, model_checkpointing/config.py get_checkpoint_config, runtime/config.py
// get_data_types_params.
TEST_CASE("rule 2b: unknown keys in DeepSpeed's key-by-key blocks are accepted with a note", "[strategy][rules]") {
  // "partitioned_activations" is the spelling in DeepSpeed's own ACTIVATION_CHKPT_FORMAT; the key read is
  // "partition_activations", so the setting does nothing.
  Strategy a = ok(cfg(R"("activation_checkpointing": {"partitioned_activations": true, "enabled": false})"));
  CHECK_FALSE(a.activation_checkpointing.partition_activations);
  CHECK(has_note(a, "activation_checkpointing.partitioned_activations: not a key DeepSpeed reads here"));
  CHECK(has_note(a, "did you mean \"partition_activations\"?"));
  CHECK(has_note(a, "activation_checkpointing.enabled: not a DeepSpeed key (DeepSpeed ignores it"));
  Strategy f = ok(cfg(R"("flops_profiler": {"enable": true}, "checkpoint": {"tag_validaton": "Warn"},
      "data_types": {"grad_acc_dtype": "fp32"}, "aio": {"queue_deep": 4})"));
  CHECK(has_note(f, "flops_profiler.enable: not a key DeepSpeed reads here"));
  CHECK(has_note(f, "checkpoint.tag_validaton: not a key DeepSpeed reads here"));
  CHECK(has_note(f, "data_types.grad_acc_dtype: not a key DeepSpeed reads here"));
  CHECK(has_note(f, "aio.queue_deep: not a key DeepSpeed reads here"));
  CHECK_FALSE(f.grad_accum_dtype.has_value());
  CHECK(f.aio.queue_depth == 8);
  // Ignored keys are not carried into the resolved config.
  CHECK_THAT(resolved_config_json(f), !Catch::Contains("\"enable\""));
  CHECK_THAT(resolved_config_json(f), !Catch::Contains("queue_deep"));
}

// config_utils.py DeepSpeedConfigModel.__init__ (strict=False) drops every "auto" value before validation, so a
// pydantic field keeps its default; get_scalar_param blocks would hand DeepSpeed the string.
TEST_CASE("rule 2c: \"auto\" left after the HF Trainer: default in pydantic blocks, an error elsewhere",
          "[strategy][rules]") {
  Strategy s = ok(cfg(R"("fp16": {"enabled": true, "hysteresis": "auto"}, "tensorboard": {"enabled": "auto"},
      "zero_optimization": {"stage": 3, "stage3_max_live_parameters": "auto"})"));
  CHECK(s.fp16.hysteresis == 2);
  CHECK(s.zero.max_live_parameters == 1000000000);
  CHECK(has_note(s, "tensorboard.enabled: \"auto\" → default"));
  CHECK_THAT(resolved_config_json(s), !Catch::Contains("\"auto\""));
  CHECK_THAT(err(cfg(R"("activation_checkpointing": {"number_checkpoints": "auto"})")),
             Catch::Contains("activation_checkpointing.number_checkpoints: \"auto\" is not filled by the HF Trainer"));
}

// config_utils.py DeepSpeedConfigModel._process_deprecated_field (new_param, new_param_fn, set_new_param; an assert
// when the new field is given too), zero/config.py (cpu_offload, cpu_offload_param, cpu_offload_use_pin_memory,
// stage3_gather_fp16_weights_on_model_save, Field(alias="stage3_*") with populate_by_name), zero/config.py
// read_zero_config_deprecated, precision_config.py get_bfloat16_config (BFLOAT16_OLD), swap_tensor/constants.py
// (thread_count renamed intra_op_parallelism by PR #7056, first in v0.16.4).
TEST_CASE("rule 3: deprecated aliases map as DeepSpeed maps them", "[strategy][rules]") {
  Strategy d =
      ok(zero(R"("stage": 3, "cpu_offload": true, "cpu_offload_param": true, "cpu_offload_use_pin_memory": false,
      "stage3_gather_fp16_weights_on_model_save": true, "prefetch_bucket_size": 7, "stage3_max_live_parameters": 9)"));
  CHECK(d.zero.offload_optimizer.device == OffloadDevice::cpu);
  CHECK(d.zero.offload_param.device == OffloadDevice::cpu);
  CHECK(d.zero.offload_param.pin_memory);  // set_new_param=False: nothing is set from cpu_offload_use_pin_memory
  CHECK(d.zero.gather_16bit_weights_on_model_save);
  CHECK(d.zero.prefetch_bucket_size == 7);
  CHECK(d.zero.max_live_parameters == 9);
  CHECK_THAT(err(zero(R"("stage": 2, "cpu_offload": true, "offload_optimizer": {"device": "cpu"})")),
             Catch::Contains("Cannot provide deprecated parameter and replacing parameter together"));
  CHECK(ok(cfg(R"("bfloat16": {"enabled": true})")).model_dtype() == Precision::bf16);
  CHECK(ok(cfg(R"("zero_optimization": true)")).zero.stage == 1);

  // aio: the release decides the thread count's name.
  Strategy now = ok(cfg(R"("aio": {"thread_count": 4})"));
  CHECK(now.aio.intra_op_parallelism == 1);
  CHECK(has_note(now, "aio.thread_count: renamed intra_op_parallelism in DeepSpeed v0.16.4 (PR #7056)"));
  RunSettings old = run_of();
  old.deepspeed_version = {0, 16, 3};
  Strategy then = ok(cfg(R"("aio": {"thread_count": 4})"), old);
  CHECK(then.aio.intra_op_parallelism == 4);
  CHECK_THAT(resolved_config_json(then), Catch::Contains("\"thread_count\": 4"));
  CHECK_THAT(resolved_config_json(now), Catch::Contains("\"intra_op_parallelism\": 1"));
}

// precision_config.py DeepSpeedBF16Config: check_grad_overflow (default true since PR #8035, v0.19.3; false in
// 0.19.0-0.19.2), immediate_grad_update default false (true before PR #6976, v0.17.1); there is no check_overflow.
TEST_CASE("rule 4: the bf16 block follows DeepSpeedBF16Config in the selected release", "[strategy][rules]") {
  Strategy s = ok(cfg(R"("bf16": {"enabled": true})"));
  CHECK(s.bf16.check_grad_overflow);
  CHECK_FALSE(s.bf16.immediate_grad_update);
  RunSettings v192 = run_of();
  v192.deepspeed_version = {0, 19, 2};
  CHECK_FALSE(ok(cfg(R"("bf16": {"enabled": true})"), v192).bf16.check_grad_overflow);
  RunSettings v170 = run_of();
  v170.deepspeed_version = {0, 17, 0};
  CHECK(ok(cfg(R"("bf16": {"enabled": true})"), v170).bf16.immediate_grad_update);
  Strategy off = ok(cfg(R"("bf16": {"enabled": true, "check_grad_overflow": false, "immediate_grad_update": true})"));
  CHECK_FALSE(off.bf16.check_grad_overflow);
  CHECK(off.bf16.immediate_grad_update);
  CHECK_THAT(resolved_config_json(off), Catch::Contains("\"check_grad_overflow\": false"));
  CHECK_THAT(err(cfg(R"("bf16": {"enabled": true, "check_overflow": true})")),
             Catch::Contains("bf16.check_overflow: unknown key; did you mean \"check_grad_overflow\"?"));
  // Keys DeepSpeed's models never had (zero/config.py, offload_config.py): refused as DeepSpeed refuses them.
  CHECK_THAT(err(zero(R"("stage": 3, "offload_optimizer": {"device": "cpu", "convert_grad_on_cpu": true})")),
             Catch::Contains("zero_optimization.offload_optimizer.convert_grad_on_cpu: unknown key"));
  CHECK_THAT(err(zero(R"("stage": 3, "stage3_partition_stream_chunk_size": 8)")),
             Catch::Contains("zero_optimization.stage3_partition_stream_chunk_size: unknown key"));
}

// Every key the resolved config writes is a field of the DeepSpeed 0.19.6 model (or a key get_* reads) of its block.
TEST_CASE("rule 4b: every key resolved_config_json writes is one DeepSpeed 0.19.6 reads", "[strategy][rules]") {
  using Set = std::set<std::string>;
  const Set top = {"train_batch_size",
                   "train_micro_batch_size_per_gpu",
                   "gradient_accumulation_steps",
                   "gradient_clipping",
                   "prescale_gradients",
                   "gradient_predivide_factor",
                   "communication_data_type",
                   "zero_force_ds_cpu_optimizer",
                   "zero_allow_untested_optimizer",
                   "fp16",
                   "bf16",
                   "optimizer",
                   "zero_optimization",
                   "aio",
                   "activation_checkpointing",
                   "data_types",
                   "scheduler",
                   "steps_per_print",
                   "wall_clock_breakdown",
                   "tensorboard",
                   "checkpoint"};
  const Set zero_fields = {// DeepSpeedZeroConfig fields and aliases
                           "stage",
                           "contiguous_gradients",
                           "reduce_scatter",
                           "reduce_bucket_size",
                           "use_multi_rank_bucket_allreduce",
                           "allgather_partitions",
                           "allgather_bucket_size",
                           "overlap_comm",
                           "load_from_fp32_weights",
                           "elastic_checkpoint",
                           "offload_param",
                           "offload_optimizer",
                           "zenflow",
                           "sub_group_size",
                           "stage3_prefetch_bucket_size",
                           "stage3_param_persistence_threshold",
                           "stage3_model_persistence_threshold",
                           "stage3_max_live_parameters",
                           "stage3_max_reuse_distance",
                           "stage3_gather_16bit_weights_on_model_save",
                           "stage3_module_granularity_threshold",
                           "stage3_use_all_reduce_for_fetch_params",
                           "stage3_allgather_sequential",
                           "ignore_unused_parameters",
                           "legacy_stage1",
                           "round_robin_gradients",
                           "zero_hpz_partition_size",
                           "zero_quantized_weights",
                           "zero_quantized_nontrainable_weights",
                           "zero_quantized_gradients",
                           "zeropp_loco_param",
                           "mics_shard_size",
                           "mics_hierarchical_params_gather",
                           "memory_efficient_linear",
                           "pipeline_loading_checkpoint",
                           "override_module_apply",
                           "log_trace_cache_warnings",
                           "enable_sanity_checks",
                           "save_muon_momentum_buffer_in_memory",
                           "leaf_module"};
  const Set param_fields = {"device", "nvme_path", "buffer_count", "buffer_size", "max_in_cpu", "pin_memory"};
  const Set opt_fields = {"device",         "nvme_path", "buffer_count", "pin_memory",    "pipeline_read",
                          "pipeline_write", "fast_init", "ratio",        "super_offload", "cpuadam_cores_perc"};
  const Set fp16_fields = {"enabled",
                           "auto_cast",
                           "loss_scale",
                           "initial_scale_power",
                           "loss_scale_window",
                           "hysteresis",
                           "consecutive_hysteresis",
                           "min_loss_scale",
                           "fp16_master_weights_and_grads"};
  const Set bf16_fields = {"enabled", "immediate_grad_update", "check_grad_overflow", "bf16_master_weights_and_grads",
                           "bf16_optimizer_states"};
  const Set aio_keys = {"block_size",    "queue_depth",    "intra_op_parallelism",
                        "single_submit", "overlap_events", "use_gds"};
  const Set ckpt_keys = {"partition_activations",
                         "contiguous_memory_optimization",
                         "cpu_checkpointing",
                         "number_checkpoints",
                         "profile",
                         "synchronize_checkpoint_boundary"};
  // engine.py _configure_basic_optimizer pops torch_adam / adam_w_mode, the rest go to FusedAdam / DeepSpeedCPUAdam.
  const Set adam_params = {"lr",      "betas",       "eps",       "weight_decay", "bias_correction",
                           "amsgrad", "adam_w_mode", "torch_adam"};

  for (int stage : {1, 2, 3}) {
    std::string offload = stage == 3 ? R"(, "offload_param": {"device": "cpu"})" : "";
    Strategy s = ok(cfg(R"("fp16": {"enabled": true}, "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}},
        "scheduler": {"type": "WarmupLR"}, "steps_per_print": 5, "wall_clock_breakdown": false,
        "tensorboard": {"enabled": false}, "checkpoint": {"load_universal": false},
        "data_types": {"grad_accum_dtype": "fp32"}, "communication_data_type": "fp32",
        "activation_checkpointing": {"partition_activations": true},
        "zero_optimization": {"stage": )" +
                        std::to_string(stage) + R"(, "offload_optimizer": {"device": "cpu"})" + offload + "}"),
                    run_of(8));
    const auto j = nlohmann::json::parse(resolved_config_json(s));
    auto subset = [](const nlohmann::json& o, const Set& allowed, const std::string& where) {
      for (auto it = o.begin(); it != o.end(); ++it) {
        INFO(where << "." << it.key());
        CHECK(allowed.count(it.key()) == 1);
      }
    };
    subset(j, top, "top");
    subset(j["zero_optimization"], zero_fields, "zero_optimization");
    subset(j["zero_optimization"]["offload_param"], param_fields, "offload_param");
    subset(j["zero_optimization"]["offload_optimizer"], opt_fields, "offload_optimizer");
    subset(j["fp16"], fp16_fields, "fp16");
    subset(j["bf16"], bf16_fields, "bf16");
    subset(j["aio"], aio_keys, "aio");
    subset(j["activation_checkpointing"], ckpt_keys, "activation_checkpointing");
    subset(j["optimizer"]["params"], adam_params, "optimizer.params");
  }
}

// Features DeepSpeed runs that zerosim does not model are refused by name (exit 2), after DeepSpeed's own checks.
TEST_CASE("rule 5: unmodelled features are refused with a clear message, never silently ignored", "[strategy][rules]") {
  struct Case {
    std::string body, message;
  };
  const Case cases[] = {
      {R"("zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}, "zenflow": {"topk_ratio": 0.1}})",
       "zero_optimization.zenflow: zerosim does not model ZenFlow (CPU optimizer steps overlapped with backward) yet; "
       "remove the key to get numbers for the plain ZeRO-Offload run"},
      {R"("zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "super_offload": true}})",
       "zero_optimization.offload_optimizer.super_offload: zerosim does not model SuperOffload yet"},
      {R"("zero_optimization": {"stage": 3, "zero_quantized_weights": true})", "does not model ZeRO++ qwZ"},
      {R"("zero_optimization": {"stage": 3, "zero_quantized_gradients": true})", "does not model ZeRO++ qgZ"},
      {R"("zero_optimization": {"stage": 3, "zero_quantized_nontrainable_weights": true})",
       "does not model quantized frozen weights"},
      {R"("sequence_parallel_size": 2)", "sequence_parallel_size: zerosim does not model Ulysses sequence parallelism"},
      {R"("tensor_parallel": {"autotp_size": 2})", "does not model AutoTP tensor parallelism"},
      {R"("tensor_parallel": {"tp": {"tp_size": 2}})", "tensor_parallel.tp.tp_size: zerosim does not model tensor"},
      {R"("pipeline": {"stages": 2})", "pipeline.stages: zerosim does not model pipeline parallelism"},
      {R"("expert_parallel": {"enabled": true, "autoep_size": 2})", "does not model AutoEP expert parallelism"},
      {R"("hybrid_engine": {"enabled": true})", "does not model the hybrid engine"},
      {R"("elasticity": {"enabled": true})", "does not model elastic training"},
      {R"("torch_autocast": {"enabled": true, "dtype": "bf16"})", "does not model torch_autocast"},
      {R"("amp": {"enabled": true, "opt_level": "O1"})", "amp.enabled: zerosim does not model apex AMP"},
      {R"("compile": {"deepcompile": true})", "does not model DeepCompile"},
      {R"("progressive_layer_drop": {"enabled": true})", "does not model progressive layer drop"},
      {R"("curriculum_learning": {"enabled": true})", "does not model curriculum learning"},
      {R"("data_efficiency": {"enabled": true})", "does not model data efficiency"},
      {R"("weight_quantization": {"num_bits": 4})", "does not model weight quantization"},
      {R"("managed_gradient_accumulation": false)", "does not model client-managed gradient accumulation"},
  };
  for (const auto& c : cases) CHECK_THAT(err(cfg(c.body)), Catch::Contains(c.message));

  // Modelled (read into the Strategy, not refused): MiCS and GDS; and off / size-1 settings of the features above.
  Strategy m = ok(zero(R"("stage": 3, "mics_shard_size": 8, "mics_hierarchical_params_gather": true)"));
  CHECK(m.zero.mics_shard_size == 8);
  CHECK(m.zero.mics_hierarchical_params_gather);
  Strategy g = ok(cfg(R"("aio": {"use_gds": true}, "zero_optimization": {"stage": 3,
      "offload_param": {"device": "nvme", "nvme_path": "/nvme"}})"));
  CHECK(g.aio.use_gds);
  Strategy off = ok(cfg(R"("sequence_parallel_size": 1, "tensor_parallel": {"autotp_size": 1},
      "hybrid_engine": {"enabled": false}, "amp": {"enabled": false}, "pipeline": {"stages": "auto"},
      "zero_optimization": {"stage": 3, "zero_quantized_weights": false, "zeropp_loco_param": {"err_beta": 0.8}})"));
  CHECK(has_note(off, "hybrid_engine: accepted, not modelled"));
  // Routine blocks stay quiet.
  Strategy routine = ok(cfg(R"("scheduler": {"type": "WarmupLR"}, "tensorboard": {"enabled": true},
      "wandb": {"enabled": false}, "checkpoint": {"tag_validation": "Warn"}, "flops_profiler": {"enabled": false})"));
  for (const char* k : {"scheduler", "tensorboard", "wandb", "checkpoint", "flops_profiler"})
    CHECK_FALSE(has_note(routine, k));
  // DeepSpeed's own refusal is reported first: here the unknown key, not the unmodelled feature.
  CHECK_THAT(err(zero(R"("stage": 3, "zero_quantized_weights": true, "zero_quantised_gradients": true)")),
             Catch::Contains("zero_quantised_gradients: unknown key"));
}

// Refusals DeepSpeed makes itself, outside the pydantic models: engine.py _configure_zero_optimizer (legacy_stage1),
// _configure_optimizer (ZERO_SUPPORTED_OPTIMIZERS in zero/utils.py), _configure_basic_optimizer (max_grad_norm,
// 1-bit optimizers with ZeRO), _assert_valid_mixed_precision_config (data_types.param_dtype), runtime/config.py
// _do_error_check (gradient_allreduce_op sum with ZeRO-3, 16-bit master weights), precision_config.py
// DeepSpeedFP16Config._validate_dynamic_loss_scale_params.
TEST_CASE("DeepSpeed's own asserts outside the pydantic models", "[strategy][rules]") {
  CHECK_THAT(err(zero(R"("stage": 1, "legacy_stage1": true)")),
             Catch::Contains("zero_optimization.legacy_stage1: true: DeepSpeed raises"));
  CHECK_THAT(err(zero(R"("stage": 2}, "optimizer": {"type": "SGD", "params": {"lr": 0.1})")),
             Catch::Contains("optimizer.type: \"SGD\" is not one of ZeRO's tested optimizers"));
  CHECK(
      ok(zero(
             R"("stage": 2}, "zero_allow_untested_optimizer": true, "optimizer": {"type": "SGD", "params": {"lr": 0.1})"))
          .optimizer.type == "SGD");
  CHECK_THAT(err(zero(R"("stage": 1}, "optimizer": {"type": "OneBitAdam")")),
             Catch::Contains("is not compatible with ZeRO"));
  CHECK_THAT(err(cfg(R"("optimizer": {"type": "AdamW", "params": {"max_grad_norm": 1.0}})")),
             Catch::Contains("optimizer.params.max_grad_norm: not supported as an optimizer parameter"));
  CHECK_THAT(err(cfg(R"("bf16": {"enabled": true}, "data_types": {"param_dtype": "fp16"})")),
             Catch::Contains("data_types.param_dtype: \"fp16\" conflicts with the enabled precision"));
  CHECK(ok(cfg(R"("bf16": {"enabled": true}, "data_types": {"param_dtype": "bf16"})")).model_dtype() ==
        Precision::bf16);
  CHECK_THAT(err(cfg(R"("zero_optimization": {"stage": 3}, "gradient_allreduce_op": "sum")")),
             Catch::Contains("gradient_allreduce_op: \"sum\" is not supported with ZeRO stage 3"));
  CHECK_THAT(err(cfg(R"("bf16": {"enabled": true, "bf16_master_weights_and_grads": true})")),
             Catch::Contains("bf16.bf16_master_weights_and_grads: true needs ZeRO stage 1, 2 or 3"));
  CHECK_THAT(err(cfg(R"("fp16": {"enabled": true, "loss_scale_window": 0})")),
             Catch::Contains("fp16.loss_scale_window: 0: must be > 0 when dynamic loss scaling is enabled"));
  CHECK(ok(cfg(R"("fp16": {"enabled": true, "loss_scale": 128, "loss_scale_window": 0})")).fp16.loss_scale == 128);
}
