// Strategy: ds_config reading with DeepSpeed v0.19 code semantics (defaults, aliases, deprecations, batch
// inference, HF "auto"), every bad-input message, and every shipped configs/deepspeed/*.json.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <limits>

#include "core/paths.h"
#include "core/strategy.h"

using namespace zs::core;

namespace {

RunSettings world_of(int64_t nodes, int64_t gpus, int64_t hidden = 0) {
  RunSettings r;
  r.nodes = nodes;
  r.gpus_per_node = gpus;
  r.hidden = hidden;
  return r;
}

Strategy parse_ok(const std::string& text, const RunSettings& run = world_of(1, 1)) {
  auto s = parse_ds_config_text(text, "cfg.json", run);
  INFO(text);
  if (!s) FAIL(s.error().message);
  return *s;
}

// The error message; fails the test when parsing succeeds.
std::string parse_err(const std::string& text, const RunSettings& run = world_of(1, 1)) {
  auto s = parse_ds_config_text(text, "cfg.json", run);
  INFO(text);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().kind == ErrorKind::bad_input);
  CHECK(s.error().message.rfind("cfg.json", 0) == 0);  // every message starts with the file name
  return s.error().message;
}

bool has_note(const Strategy& s, const std::string& fragment) {
  return std::any_of(s.notes.begin(), s.notes.end(),
                     [&](const std::string& n) { return n.find(fragment) != std::string::npos; });
}

const std::string kMicro1 = R"("train_micro_batch_size_per_gpu": 1)";

}  // namespace

TEST_CASE("stage 3 empty block takes DeepSpeed's code defaults", "[strategy]") {
  Strategy s = parse_ok("{" + kMicro1 + R"(, "zero_optimization": {"stage": 3}})");
  const ZeroConfig& z = s.zero;
  CHECK(z.stage == 3);
  CHECK(z.overlap_comm);  // None → true for stage 3
  CHECK(z.contiguous_gradients);
  CHECK(z.reduce_scatter);
  CHECK(z.reduce_bucket_size == 500000000);
  CHECK(z.allgather_bucket_size == 500000000);
  CHECK(z.prefetch_bucket_size == 50000000);  // docs say 5e8; code 5e7
  CHECK(z.param_persistence_threshold == 100000);
  CHECK(z.model_persistence_threshold == std::numeric_limits<int64_t>::max());
  CHECK(z.max_live_parameters == 1000000000);
  CHECK(z.max_reuse_distance == 1000000000);
  CHECK(z.sub_group_size == 1000000000);
  CHECK_FALSE(z.gather_16bit_weights_on_model_save);
  CHECK(z.offload_param.device == OffloadDevice::none);
  CHECK(z.offload_optimizer.device == OffloadDevice::none);
  CHECK_FALSE(z.offload_param_given);
  CHECK(z.offload_param.buffer_count == 5);
  CHECK(z.offload_param.buffer_size == 100000000);
  CHECK(z.offload_param.max_in_cpu == 1000000000);
  CHECK(z.offload_param.pin_memory);
  CHECK(z.offload_optimizer.buffer_count == 4);
  CHECK(z.offload_optimizer.pin_memory);
  CHECK(z.offload_optimizer.ratio == 1.0);
  CHECK(z.memory_efficient_linear);
  CHECK(z.mics_shard_size == -1);
  CHECK(s.aio.block_size == 1048576);
  CHECK(s.aio.queue_depth == 8);
  CHECK(s.aio.intra_op_parallelism == 1);
  CHECK(s.aio.overlap_events);
  CHECK_FALSE(s.aio.single_submit);
  CHECK(s.gradient_clipping == 1.0);  // since PR #8068
  CHECK(s.zero_force_ds_cpu_optimizer);
  CHECK_FALSE(s.fp16.enabled);
  CHECK_FALSE(s.bf16.enabled);
  CHECK(s.fp16.initial_scale_power == 16);
  CHECK(s.fp16.hysteresis == 2);
  CHECK(s.model_dtype() == Precision::fp32);
  CHECK_FALSE(s.optimizer.given);
  CHECK_FALSE(s.grad_accum_dtype.has_value());
}

TEST_CASE("overlap_comm defaults to false below stage 3 and zero_optimization defaults to stage 0", "[strategy]") {
  for (int stage : {0, 1, 2}) {
    Strategy s = parse_ok("{" + kMicro1 + R"(, "zero_optimization": {"stage": )" + std::to_string(stage) + "}}");
    CHECK(s.zero.stage == stage);
    CHECK_FALSE(s.zero.overlap_comm);
  }
  CHECK(parse_ok("{" + kMicro1 + "}").zero.stage == 0);
  CHECK_FALSE(
      parse_ok("{" + kMicro1 + R"(, "zero_optimization": {"stage": 3, "overlap_comm": false}})").zero.overlap_comm);
}

TEST_CASE("stage3_* names and their short aliases are the same field", "[strategy]") {
  Strategy a = parse_ok("{" + kMicro1 + R"(, "zero_optimization": {"stage": 3, "prefetch_bucket_size": 1e6,
      "param_persistence_threshold": 7, "max_live_parameters": 3e8, "max_reuse_distance": 2e8,
      "model_persistence_threshold": 1000, "gather_16bit_weights_on_model_save": true}})");
  CHECK(a.zero.prefetch_bucket_size == 1000000);
  CHECK(a.zero.param_persistence_threshold == 7);
  CHECK(a.zero.max_live_parameters == 300000000);
  CHECK(a.zero.max_reuse_distance == 200000000);
  CHECK(a.zero.model_persistence_threshold == 1000);
  CHECK(a.zero.gather_16bit_weights_on_model_save);
  Strategy b = parse_ok("{" + kMicro1 + R"(, "zero_optimization": {"stage": 3, "stage3_prefetch_bucket_size": 1e6}})");
  CHECK(b.zero.prefetch_bucket_size == 1000000);
  std::string e =
      parse_err("{" + kMicro1 +
                R"(, "zero_optimization": {"stage": 3, "stage3_prefetch_bucket_size": 1, "prefetch_bucket_size": 2}})");
  CHECK_THAT(e, Catch::Contains("zero_optimization.prefetch_bucket_size: given twice"));
}

TEST_CASE("deprecated keys map to their replacements with a note", "[strategy]") {
  Strategy s = parse_ok("{" + kMicro1 + R"(, "zero_optimization": {"stage": 2, "cpu_offload": true}})");
  CHECK(s.zero.offload_optimizer.device == OffloadDevice::cpu);
  CHECK(s.zero.offload_optimizer_given);
  CHECK(has_note(s, "zero_optimization.cpu_offload is deprecated"));

  Strategy p =
      parse_ok("{" + kMicro1 + R"(, "zero_optimization": {"stage": 3, "cpu_offload_param": true, "cpu_offload": true,
      "cpu_offload_use_pin_memory": false}})");
  CHECK(p.zero.offload_param.device == OffloadDevice::cpu);
  CHECK(p.zero.offload_optimizer.device == OffloadDevice::cpu);
  CHECK(p.zero.offload_param.pin_memory);  // DeepSpeed ignores cpu_offload_use_pin_memory (set_new_param=False)
  CHECK(has_note(p, "cpu_offload_use_pin_memory is deprecated and DeepSpeed ignores it"));

  Strategy off = parse_ok("{" + kMicro1 + R"(, "zero_optimization": {"stage": 2, "cpu_offload": false}})");
  CHECK(off.zero.offload_optimizer.device == OffloadDevice::none);

  Strategy g = parse_ok("{" + kMicro1 +
                        R"(, "zero_optimization": {"stage": 3, "stage3_gather_fp16_weights_on_model_save": true}})");
  CHECK(g.zero.gather_16bit_weights_on_model_save);
  CHECK(has_note(g, "stage3_gather_fp16_weights_on_model_save is deprecated"));

  Strategy b = parse_ok("{" + kMicro1 + R"(, "bfloat16": {"enabled": true}})");
  CHECK(b.bf16.enabled);
  CHECK(b.model_dtype() == Precision::bf16);
  CHECK(has_note(b, "bfloat16 is the old name"));

  Strategy legacy = parse_ok("{" + kMicro1 + R"(, "zero_optimization": true, "allgather_size": 1e8})");
  CHECK(legacy.zero.stage == 1);
  CHECK(legacy.zero.allgather_bucket_size == 100000000);

  CHECK_THAT(
      parse_err("{" + kMicro1 + R"(, "zero_optimization": {"stage": 2, "cpu_offload": true,
      "offload_optimizer": {"device": "cpu"}}})"),
      Catch::Contains("zero_optimization.cpu_offload: deprecated key given together with \"offload_optimizer\""));
  // precision_config.py get_bfloat16_config: "bf16" wins, "bfloat16" is read only when "bf16" is absent.
  Strategy both = parse_ok("{" + kMicro1 + R"(, "bf16": {"enabled": false}, "bfloat16": {"enabled": true}})");
  CHECK_FALSE(both.bf16.enabled);
  CHECK(has_note(both, "bfloat16: ignored, because bf16 is given"));
}

TEST_CASE("batch sizes are inferred as DeepSpeed's _set_batch_related_parameters does", "[strategy]") {
  const RunSettings w8 = world_of(2, 4);  // world 8
  struct Case {
    std::string keys;
    int64_t tbs, micro, ga;
  };
  const Case cases[] = {
      {R"("train_batch_size": 64, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2)", 64, 4, 2},
      {R"("train_batch_size": 64, "train_micro_batch_size_per_gpu": 4)", 64, 4, 2},
      {R"("train_batch_size": 64, "gradient_accumulation_steps": 4)", 64, 2, 4},
      {R"("train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 3)", 96, 4, 3},
      {R"("train_batch_size": 32)", 32, 4, 1},
      {R"("train_micro_batch_size_per_gpu": 4)", 32, 4, 1},
  };
  for (const auto& c : cases) {
    Strategy s = parse_ok("{" + c.keys + "}", w8);
    CHECK(s.train_batch_size == c.tbs);
    CHECK(s.micro_batch_per_gpu == c.micro);
    CHECK(s.gradient_accumulation_steps == c.ga);
    CHECK(s.world() == 8);
  }
  CHECK(has_note(parse_ok(R"({"train_batch_size": 64, "train_micro_batch_size_per_gpu": 4})", w8),
                 "gradient_accumulation_steps inferred: 2"));

  std::string e = parse_err(
      R"({"train_batch_size": 64, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 4})", w8);
  CHECK_THAT(e, Catch::Contains("cfg.json: train_batch_size: 64 != train_micro_batch_size_per_gpu 4 × "
                                "gradient_accumulation_steps 4 × world size 8 (= 128)"));
  CHECK_THAT(parse_err(R"({"train_batch_size": 60, "train_micro_batch_size_per_gpu": 4})", w8),
             Catch::Contains("gradient_accumulation_steps: cannot infer: train_batch_size 60 is not divisible by "
                             "train_micro_batch_size_per_gpu 4 × world size 8"));
  CHECK_THAT(parse_err(R"({"train_batch_size": 12})", w8),
             Catch::Contains(
                 "train_micro_batch_size_per_gpu: cannot infer: train_batch_size 12 is not divisible by world size 8"));
  CHECK_THAT(parse_err(R"({"train_batch_size": 64, "gradient_accumulation_steps": 3})", w8),
             Catch::Contains("cannot infer"));
  CHECK_THAT(
      parse_err(R"({"gradient_accumulation_steps": 2})", w8),
      Catch::Contains("cfg.json: train_batch_size: missing: set train_batch_size or train_micro_batch_size_per_gpu"));
  CHECK_THAT(parse_err("{}", w8), Catch::Contains("missing"));
  CHECK_THAT(parse_err(R"({"train_micro_batch_size_per_gpu": 0})", w8),
             Catch::Contains("train_micro_batch_size_per_gpu: 0 is out of range"));
}

TEST_CASE("HF \"auto\" values resolve as the HF Trainer does, each with a note", "[strategy][auto]") {
  RunSettings run = world_of(1, 8, 4096);
  auto s = load_strategy("zero3-hf-auto", run);
  REQUIRE(s.ok());
  CHECK(s->micro_batch_per_gpu == 8);  // HF per_device_train_batch_size default
  CHECK(s->gradient_accumulation_steps == 1);
  CHECK(s->train_batch_size == 64);
  CHECK(s->gradient_clipping == 1.0);
  CHECK(s->optimizer.lr == Approx(5e-5));
  CHECK(s->optimizer.beta1 == 0.9);
  CHECK(s->optimizer.beta2 == 0.999);
  CHECK(s->optimizer.eps == 1e-8);
  CHECK(s->optimizer.weight_decay == 0.0);
  CHECK_FALSE(s->fp16.enabled);
  CHECK_FALSE(s->bf16.enabled);
  CHECK(s->zero.reduce_bucket_size == 4096 * 4096);
  CHECK(s->zero.prefetch_bucket_size == 15099494);  // int(0.9 * 4096 * 4096)
  CHECK(s->zero.param_persistence_threshold == 40960);
  CHECK(has_note(*s, "zero_optimization.reduce_bucket_size: \"auto\" → 16777216 (hidden² as HF Trainer)"));
  CHECK(has_note(*s, "train_micro_batch_size_per_gpu: \"auto\" → 8 (HF per_device_train_batch_size default)"));
  CHECK(has_note(*s, "zero_optimization.stage3_param_persistence_threshold: \"auto\" → 40960"));
  CHECK(has_note(*s, "scheduler.params.warmup_num_steps: \"auto\" left as is"));

  run.hf_micro_batch = 2;
  run.hf_grad_accum = 4;
  run.hf_precision = Precision::bf16;
  run.nodes = 2;
  auto t = load_strategy("zero3-hf-auto", run);
  REQUIRE(t.ok());
  CHECK(t->micro_batch_per_gpu == 2);
  CHECK(t->gradient_accumulation_steps == 4);
  CHECK(t->train_batch_size == 16 * 2 * 4);
  CHECK(t->bf16.enabled);
  CHECK(t->model_dtype() == Precision::bf16);

  // Explicit micro batch + auto train_batch_size. The HF argument fills "auto" only: an explicit value stands (the
  // CLI's --micro-batch overrides it through batch_setting_changes, test_strategy_run_settings.cpp).
  Strategy u = parse_ok(R"({"train_micro_batch_size_per_gpu": 3, "train_batch_size": "auto"})", world_of(1, 4));
  CHECK(u.train_batch_size == 12);
  RunSettings given = world_of(1, 4);
  given.hf_micro_batch = 2;
  Strategy v = parse_ok(R"({"train_micro_batch_size_per_gpu": 3, "train_batch_size": "auto"})", given);
  CHECK(v.micro_batch_per_gpu == 3);
  CHECK(v.train_batch_size == 12);
}

TEST_CASE("\"auto\" that HF leaves: DeepSpeed's default in zero_optimization, an error elsewhere", "[strategy][auto]") {
  // Under stage 2 HF fills only reduce_bucket_size; the stage3_* "auto" is dropped by DeepSpeed.
  Strategy s = parse_ok("{" + kMicro1 + R"(, "zero_optimization": {"stage": 2, "reduce_bucket_size": "auto",
      "stage3_prefetch_bucket_size": "auto", "sub_group_size": "auto", "offload_optimizer": {"device": "cpu", "buffer_count": "auto"}}})",
                        world_of(1, 1, 1024));
  CHECK(s.zero.reduce_bucket_size == 1024 * 1024);
  CHECK(s.zero.prefetch_bucket_size == 50000000);
  CHECK(s.zero.sub_group_size == 1000000000);
  CHECK(s.zero.offload_optimizer.buffer_count == 4);
  CHECK(has_note(s, "zero_optimization.sub_group_size: \"auto\" → default"));
  CHECK(has_note(s, "zero_optimization.offload_optimizer.buffer_count: \"auto\" → default"));

  CHECK_THAT(parse_err("{" + kMicro1 + R"(, "zero_optimization": {"stage": 3, "reduce_bucket_size": "auto"}})"),
             Catch::Contains("cfg.json: zero_optimization.reduce_bucket_size: \"auto\" needs the model's hidden size"));
  // fp16 is a pydantic model too (DeepSpeedFP16Config): "auto" is dropped and the default applies.
  Strategy fp16 = parse_ok("{" + kMicro1 + R"(, "fp16": {"enabled": true, "loss_scale": "auto"}})");
  CHECK(fp16.fp16.loss_scale == 0);
  CHECK(has_note(fp16, "fp16.loss_scale: \"auto\" → default"));
  // aio is read key by key (get_aio_config): "auto" would reach DeepSpeed as a string.
  CHECK_THAT(parse_err("{" + kMicro1 + R"(, "aio": {"block_size": "auto"}})"),
             Catch::Contains("cfg.json: aio.block_size: \"auto\" is not filled by the HF Trainer"));
  CHECK_THAT(
      parse_err("{" + kMicro1 + R"(, "zero_optimization": {"stage": 3, "reduce_bucket_sise": "auto"}})",
                world_of(1, 1, 64)),
      Catch::Contains("zero_optimization.reduce_bucket_sise: unknown key; did you mean \"reduce_bucket_size\"?"));
}

TEST_CASE("offload_optimizer nvme under stage 1/2 is recorded as cpu, as engine.py does", "[strategy]") {
  Strategy s =
      parse_ok("{" + kMicro1 + R"(, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "nvme"}}})");
  CHECK(s.zero.offload_optimizer.device == OffloadDevice::cpu);
  CHECK(has_note(s, "stage 1/2 treat nvme as cpu (engine.py)"));
}

TEST_CASE("bad input names the file, the JSON path, the value and what is allowed", "[strategy][errors]") {
  auto z = [](const std::string& zero_body) {
    return "{" + kMicro1 + R"(, "zero_optimization": {)" + zero_body + "}}";
  };
  CHECK_THAT(parse_err(z(R"("stage": 3, "stage3_prefech_bucket_size": 5)")),
             Catch::Contains("cfg.json: zero_optimization.stage3_prefech_bucket_size: unknown key; did you mean "
                             "\"stage3_prefetch_bucket_size\"?"));
  CHECK_THAT(parse_err("{" + kMicro1 + R"(, "fp16": {"enabled": true, "loss_scael": 128}})"),
             Catch::Contains("cfg.json: fp16.loss_scael: unknown key; did you mean \"loss_scale\"?"));
  CHECK_THAT(parse_err(z(R"("stage": 2, "grad_hooks": true)")),
             Catch::Contains("zero_optimization.grad_hooks: unknown key; it is documented"));
  CHECK_THAT(parse_err(z(R"("stage": 2, "overlap_comm": "yes")")),
             Catch::Contains("cfg.json: zero_optimization.overlap_comm: \"yes\" is not a boolean"));
  CHECK_THAT(parse_err(z(R"("stage": 2, "reduce_bucket_size": 1.5)")),
             Catch::Contains("zero_optimization.reduce_bucket_size: 1.5 is not an integer"));
  CHECK_THAT(parse_err(z(R"("stage": 4)")), Catch::Contains("cfg.json: zero_optimization.stage: 4 is out of range"));
  CHECK_THAT(parse_err(z(R"("stage": 3, "offload_optimizer": {"ratio": 1.5})")),
             Catch::Contains("zero_optimization.offload_optimizer.ratio: 1.5 is out of range"));
  CHECK_THAT(
      parse_err(z(R"("stage": 3, "offload_optimizer": {"device": "nvmee"})")),
      Catch::Contains("cfg.json: zero_optimization.offload_optimizer.device: \"nvmee\" is not one of none, cpu, nvme"));
  CHECK_THAT(parse_err(z(R"("stage": 3, "offload_param": "cpu")")),
             Catch::Contains("zero_optimization.offload_param: expected a JSON object"));
  CHECK_THAT(parse_err("[1, 2]"), Catch::Contains("cfg.json: top level: expected a JSON object"));
}

TEST_CASE("stage-3-only options under stage < 3: ignored by DeepSpeed (noted), offload under stage 0 refused",
          "[strategy][errors]") {
  auto z = [](const std::string& zero_body) {
    return "{" + kMicro1 + R"(, "zero_optimization": {)" + zero_body + "}}";
  };
  // DeepSpeedZeroConfig (runtime/zero/config.py) has these fields at every stage; stage_1_and_2.py never reads
  // them, and offload_param is read only by stage3.py / zero.Init (partition_parameters.py).
  Strategy p = parse_ok(z(R"("stage": 2, "offload_param": {"device": "cpu"})"));
  CHECK(p.zero.offload_param.device == OffloadDevice::none);
  CHECK(has_note(p, "zero_optimization.offload_param.device: \"cpu\" is ignored at stage 2"));
  Strategy k = parse_ok(z(R"("stage": 2, "stage3_max_live_parameters": 1e9, "prefetch_bucket_size": 1)"));
  CHECK(has_note(k,
                 "zero_optimization: prefetch_bucket_size, stage3_max_live_parameters: used by ZeRO stage 3 "
                 "only; DeepSpeed ignores them at stage 2"));
  CHECK_THAT(resolved_config_json(k), !Catch::Contains("stage3_"));
  Strategy d = parse_ok(z(R"("stage": 2, "cpu_offload_param": true)"));
  CHECK(d.zero.offload_param.device == OffloadDevice::none);
  CHECK(has_note(d, "cpu_offload_param is deprecated"));

  CHECK_THAT(parse_err(z(R"("stage": 2, "offload_optimizer": {"device": "cpu", "ratio": 0.5})")),
             Catch::Contains(
                 "zero_optimization.offload_optimizer.ratio: 0.5: Partial offloading only supported for ZeRO Stage 3"));
  CHECK_THAT(
      parse_err(z(R"("stage": 0, "offload_optimizer": {"device": "cpu"})")),
      Catch::Contains("zero_optimization.offload_optimizer.device: \"cpu\" needs ZeRO stage 1, 2 or 3 but stage is 0"));
  // A block with device none is a no-op and accepted at any stage.
  CHECK(parse_ok(z(R"("stage": 0, "offload_optimizer": {"device": "none"}, "offload_param": {"device": "none"})"))
            .zero.stage == 0);
}

TEST_CASE("nvme offload needs nvme_path; aio renamed keys; other cross-field rules", "[strategy][errors]") {
  auto z = [](const std::string& zero_body) {
    return "{" + kMicro1 + R"(, "zero_optimization": {)" + zero_body + "}}";
  };
  CHECK_THAT(
      parse_err(z(R"("stage": 3, "offload_param": {"device": "nvme"})")),
      Catch::Contains("cfg.json: zero_optimization.offload_param.nvme_path: missing: device \"nvme\" needs nvme_path"));
  CHECK_THAT(parse_err(z(R"("stage": 3, "offload_optimizer": {"device": "nvme"})")),
             Catch::Contains("zero_optimization.offload_optimizer.nvme_path: missing"));
  CHECK_THAT(parse_err("{" + kMicro1 + R"(, "fp16": {"enabled": true}, "bf16": {"enabled": true}})"),
             Catch::Contains("cfg.json: bf16.enabled: fp16 and bf16 are both enabled"));
  CHECK_THAT(parse_err("{" + kMicro1 + R"(, "optimizer": {"type": "Adam", "params": {"amsgrad": true}}})"),
             Catch::Contains("optimizer.params.amsgrad: true is not supported: CPU Adam doesn't support it"));
  CHECK_THAT(parse_err("{" + kMicro1 + R"(, "optimizer": {"type": "Adam", "params": {"weight_decy": 0.1}}})"),
             Catch::Contains("optimizer.params.weight_decy: unknown key; did you mean \"weight_decay\"?"));
  CHECK_THAT(parse_err("{" + kMicro1 + R"(, "optimizer": {"type": "Adam", "params": {"betas": [0.9]}}})"),
             Catch::Contains("optimizer.params.betas: [0.9] is not [beta1, beta2]"));
  CHECK_THAT(parse_err("{" + kMicro1 + R"(, "amp": {"enabled": true}, "zero_optimization": {"stage": 2}})"),
             Catch::Contains("cfg.json: amp: enabled with ZeRO stage 2"));
  CHECK_THAT(parse_err("{" + kMicro1 + R"(, "data_types": {"grad_accum_dtype": "fp8"}})"),
             Catch::Contains("data_types.grad_accum_dtype: \"fp8\" is not one of fp32, fp16, bf16"));
  CHECK_THAT(parse_err(z(R"("stage": 2, "allgather_bucket_size": 101)")),
             Catch::Contains("zero_optimization.allgather_bucket_size: 101 must be a multiple of"));
  CHECK_THAT(parse_err("{" + kMicro1 + R"(, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}},
      "optimizer": {"type": "Lamb"}})"),
             Catch::Contains("optimizer.type: \"Lamb\" has no DeepSpeed CPU implementation"));
}

TEST_CASE("missing file and malformed JSON", "[strategy][errors]") {
  auto m = load_ds_config("/nonexistent/ds.json", world_of(1, 1));
  REQUIRE_FALSE(m.ok());
  CHECK(m.error().kind == ErrorKind::bad_input);
  CHECK_THAT(m.error().message, Catch::Contains("/nonexistent/ds.json: cannot open file"));
  auto n = load_strategy("no-such-config", world_of(1, 1));
  REQUIRE_FALSE(n.ok());
  CHECK_THAT(n.error().message, Catch::Contains("no-such-config: no such file"));
  CHECK_THAT(n.error().message, Catch::Contains("zero3-offload-cpu"));  // lists the shipped names
  CHECK_THAT(parse_err("{\n  \"train_micro_batch_size_per_gpu\": 1,\n  \"fp16\": {\"enabled\": tru}\n}"),
             Catch::Contains("cfg.json:3:"));
  CHECK_THAT(parse_err("{\n  \"a\": 1,\n}"), Catch::Contains("malformed JSON"));
}

TEST_CASE("optimizer, precision, activation checkpointing and other top-level keys", "[strategy]") {
  RunSettings run = world_of(1, 1);
  run.checkpoint_activations = true;
  Strategy s = parse_ok("{" + kMicro1 + R"(, "optimizer": {"type": "Adam", "params": {"lr": 3e-4, "betas": [0.8, 0.95],
      "eps": 1e-6, "weight_decay": 0.1, "adam_w_mode": false, "bias_correction": false}},
      "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 100}},
      "fp16": {"enabled": true, "loss_scale": 128, "initial_scale_power": 12},
      "activation_checkpointing": {"partition_activations": true, "cpu_checkpointing": true, "number_checkpoints": 4},
      "data_types": {"grad_accum_dtype": "fp32"}, "communication_data_type": "bf16",
      "gradient_clipping": 0.5, "steps_per_print": 100, "wall_clock_breakdown": true, "tensorboard": {"enabled": false},
      "zero_optimization": {"stage": 1, "leaf_module": {"names": ["experts"]}}})",
                        run);
  CHECK(s.optimizer.given);
  CHECK(s.optimizer.type == "Adam");
  CHECK(s.optimizer.lr == 3e-4);
  CHECK(s.optimizer.beta1 == 0.8);
  CHECK(s.optimizer.beta2 == 0.95);
  CHECK(s.optimizer.eps == 1e-6);
  CHECK(s.optimizer.weight_decay == 0.1);
  CHECK_FALSE(s.optimizer.adam_w_mode);
  CHECK_FALSE(s.optimizer.bias_correction);
  CHECK(s.fp16.enabled);
  CHECK(s.fp16.loss_scale == 128);
  CHECK(s.fp16.initial_scale_power == 12);
  CHECK(s.model_dtype() == Precision::fp16);
  CHECK(s.activation_checkpointing.enabled);
  CHECK(s.activation_checkpointing.partition_activations);
  CHECK(s.activation_checkpointing.cpu_checkpointing);
  CHECK(s.activation_checkpointing.number_checkpoints == 4);
  CHECK(has_note(s, "the block is present"));
  CHECK(s.grad_accum_dtype == Precision::fp32);
  CHECK(s.communication_data_type == Precision::bf16);
  CHECK(s.gradient_clipping == 0.5);
  CHECK(has_note(s, "zero_optimization.leaf_module: accepted, not modelled"));

  // AdamW forces decoupled weight decay; other optimizers keep their own params.
  CHECK(parse_ok("{" + kMicro1 + R"(, "optimizer": {"type": "AdamW", "params": {"adam_w_mode": false}}})")
            .optimizer.adam_w_mode);
  Strategy lamb =
      parse_ok("{" + kMicro1 + R"(, "optimizer": {"type": "LAMB", "params": {"lr": 1e-3, "max_coeff": 0.3}}})");
  CHECK(lamb.optimizer.type == "LAMB");
  CHECK(has_note(lamb, "zerosim models Adam's optimizer state"));
  CHECK_THAT(resolved_config_json(lamb), Catch::Contains("\"max_coeff\": 0.3"));
}

TEST_CASE("resolved_config_json is complete, in DeepSpeed's key names, and a fixed point", "[strategy]") {
  RunSettings run = world_of(1, 8, 2048);
  auto s = load_strategy("zero3-hf-auto", run);
  REQUIRE(s.ok());
  std::string text = resolved_config_json(*s);
  for (const char* key :
       {"\"train_batch_size\": 64", "\"stage3_prefetch_bucket_size\": 3774873",
        "\"stage3_param_persistence_threshold\": 20480", "\"reduce_bucket_size\": 4194304", "\"overlap_comm\": true",
        "\"offload_param\"", "\"nvme_path\": null", "\"pin_memory\": true", "\"gradient_clipping\": 1.0",
        "\"intra_op_parallelism\": 1", "\"WarmupLR\"", "\"warmup_num_steps\": \"auto\"", "\"steps_per_print\": 2000"})
    CHECK_THAT(text, Catch::Contains(key));
  CHECK_THAT(text, !Catch::Contains("\"lr\": \"auto\""));
  auto again = parse_ds_config_text(text, "resolved.json", run);
  REQUIRE(again.ok());
  CHECK(resolved_config_json(*again) == text);
  CHECK(again->zero.prefetch_bucket_size == s->zero.prefetch_bucket_size);

  // Below stage 3 the stage3_* keys are left out (DeepSpeed ignores them; zerosim rejects them on input).
  Strategy z2 =
      parse_ok("{" + kMicro1 + R"(, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "nvme"}}})");
  std::string t2 = resolved_config_json(z2);
  CHECK_THAT(t2, !Catch::Contains("stage3_"));
  CHECK_THAT(t2, Catch::Contains("\"device\": \"cpu\""));
  auto z2b = parse_ds_config_text(t2, "resolved.json", world_of(1, 1));
  REQUIRE(z2b.ok());
  CHECK(resolved_config_json(*z2b) == t2);
}

TEST_CASE("every shipped configs/deepspeed/*.json loads for world sizes 1, 8 and 64", "[strategy][shipped]") {
  auto files = shipped_inputs(InputKind::deepspeed);
  REQUIRE(files.size() >= 8);
  for (const auto& f : files) {
    for (auto [nodes, gpus] : {std::pair<int64_t, int64_t>{1, 1}, {1, 8}, {8, 8}}) {
      auto s = load_ds_config(f, world_of(nodes, gpus, 4096));
      INFO(f << " world " << nodes * gpus);
      if (!s) FAIL(s.error().message);
      CHECK(s->train_batch_size == s->micro_batch_per_gpu * s->gradient_accumulation_steps * nodes * gpus);
      CHECK(s->optimizer.given);
      auto again = parse_ds_config_text(resolved_config_json(*s), "resolved.json", world_of(nodes, gpus, 4096));
      if (!again) FAIL(again.error().message);
    }
  }
  auto off = load_strategy("zero2-offload-cpu", world_of(1, 1));
  REQUIRE(off.ok());
  CHECK(off->zero.stage == 2);
  CHECK(off->zero.offload_optimizer.device == OffloadDevice::cpu);
  CHECK(off->fp16.enabled);
  auto nvme = load_strategy("zero3-offload-nvme", world_of(1, 8));
  REQUIRE(nvme.ok());
  CHECK(nvme->zero.offload_param.device == OffloadDevice::nvme);
  CHECK(nvme->zero.offload_optimizer.device == OffloadDevice::nvme);
  CHECK(nvme->zero.offload_param.nvme_path == "/local_nvme");
  auto cpu3 = load_strategy("zero3-offload-cpu", world_of(1, 8));
  REQUIRE(cpu3.ok());
  CHECK(cpu3->zero.offload_param.device == OffloadDevice::cpu);
  CHECK(cpu3->model_dtype() == Precision::bf16);
}

TEST_CASE("to_string and bytes_per_element", "[strategy]") {
  CHECK(to_string(OffloadDevice::none) == "none");
  CHECK(to_string(OffloadDevice::cpu) == "cpu");
  CHECK(to_string(OffloadDevice::nvme) == "nvme");
  CHECK(to_string(Precision::fp32) == "fp32");
  CHECK(to_string(Precision::fp16) == "fp16");
  CHECK(to_string(Precision::bf16) == "bf16");
  CHECK(bytes_per_element(Precision::fp32) == 4);
  CHECK(bytes_per_element(Precision::fp16) == 2);
  CHECK(bytes_per_element(Precision::bf16) == 2);
}
