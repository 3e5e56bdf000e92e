// The ds_configs of public fine-tuning repositories (tests/data/ds_configs/public, provenance in its README.md),
// each read with the run settings its repository's scripts pass, and the result DeepSpeed v0.19.6 gives: accepted
// (stage, offload devices, batch, precision checked) or refused, for DeepSpeed's reason or because zerosim does
// not model a feature the file turns on.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/strategy.h"

using namespace zs::core;

namespace {

const std::string kDir = std::string(ZS_TEST_DATA) + "/ds_configs/public/";

struct Hf {  // HF TrainingArguments as the repository's scripts pass them (unset: HF's defaults)
  std::optional<int64_t> micro, grad_accum;
  std::optional<Precision> precision;
};

RunSettings run_of(int64_t gpus, const Hf& hf) {
  RunSettings r;
  r.nodes = 1;
  r.gpus_per_node = gpus;
  r.hidden = 4096;
  r.hf_micro_batch = hf.micro;
  r.hf_grad_accum = hf.grad_accum;
  r.hf_precision = hf.precision;
  return r;
}

struct Accepted {
  int stage;
  OffloadDevice optimizer, param;
  int64_t micro, grad_accum, train_batch;
  Precision dtype;
};

Strategy accepted(const std::string& file, int64_t gpus, const Hf& hf, const Accepted& want) {
  INFO(file);
  auto s = load_ds_config(kDir + file, run_of(gpus, hf));
  if (!s) FAIL(s.error().message);
  CHECK(s->zero.stage == want.stage);
  CHECK(s->zero.offload_optimizer.device == want.optimizer);
  CHECK(s->zero.offload_param.device == want.param);
  CHECK(s->micro_batch_per_gpu == want.micro);
  CHECK(s->gradient_accumulation_steps == want.grad_accum);
  CHECK(s->train_batch_size == want.train_batch);
  CHECK(s->model_dtype() == want.dtype);
  // The resolved config reads back to the same config (it is what DeepSpeed would be given).
  auto again = parse_ds_config_text(resolved_config_json(*s), file + " (resolved)", run_of(gpus, hf));
  if (!again) FAIL(again.error().message);
  CHECK(resolved_config_json(*again) == resolved_config_json(*s));
  return *s;
}

std::string refused(const std::string& file, int64_t gpus, const Hf& hf) {
  INFO(file);
  auto s = load_ds_config(kDir + file, run_of(gpus, hf));
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().kind == ErrorKind::bad_input);  // exit 2
  return s.error().message;
}

bool has_note(const Strategy& s, const std::string& fragment) {
  return std::any_of(s.notes.begin(), s.notes.end(),
                     [&](const std::string& n) { return n.find(fragment) != std::string::npos; });
}

const Hf kHfFp16{std::nullopt, std::nullopt, Precision::fp16};  // HF defaults: micro 8, GA 1
const Hf kHfBf16{std::nullopt, std::nullopt, Precision::bf16};
constexpr auto none = OffloadDevice::none;
constexpr auto cpu = OffloadDevice::cpu;

}  // namespace

TEST_CASE("public configs: huggingface/transformers tests/deepspeed", "[strategy][public]") {
  // HF Trainer with --fp16 and its defaults (per_device_train_batch_size 8, gradient_accumulation_steps 1).
  accepted("transformers__ds_config_zero2.json", 8, kHfFp16, {2, cpu, none, 8, 1, 64, Precision::fp16});
  Strategy z3 = accepted("transformers__ds_config_zero3.json", 8, kHfFp16, {3, cpu, cpu, 8, 1, 64, Precision::fp16});
  CHECK(z3.zero.sub_group_size == 100000000000000);
  CHECK(z3.zero.prefetch_bucket_size == 15099494);  // HF: int(0.9 · hidden²)
  CHECK(z3.zero.gather_16bit_weights_on_model_save);
  CHECK(has_note(z3, "stage3_gather_fp16_weights_on_model_save is deprecated"));  // zero/config.py new_param
  // "bfloat16" is the old name, still read by get_bfloat16_config when "bf16" is absent.
  accepted("transformers__ds_config_zero3_bf16.json", 8, kHfBf16, {3, cpu, cpu, 8, 1, 64, Precision::bf16});
}

TEST_CASE("public configs: hiyouga/LLaMA-Factory examples/deepspeed", "[strategy][public]") {
  // examples/train_full/llama3_full_sft.yaml: per_device_train_batch_size 1, gradient_accumulation_steps 2, bf16.
  const Hf lf{1, 2, Precision::bf16};
  Strategy z0 = accepted("LLaMA-Factory__ds_z0_config.json", 8, lf, {0, none, none, 1, 2, 16, Precision::bf16});
  // comms_config and monitor_config are not DeepSpeed keys: DeepSpeedConfig never reads them (runtime/config.py).
  CHECK(has_note(z0, "comms_config: not a DeepSpeed key; DeepSpeed ignores unknown top-level keys"));
  CHECK(has_note(z0, "monitor_config: not a DeepSpeed key"));
  CHECK_THAT(resolved_config_json(z0), !Catch::Contains("comms_config"));
  accepted("LLaMA-Factory__ds_z2_config.json", 8, lf, {2, none, none, 1, 2, 16, Precision::bf16});
  accepted("LLaMA-Factory__ds_z2_offload_config.json", 8, lf, {2, cpu, none, 1, 2, 16, Precision::bf16});
  Strategy z3 = accepted("LLaMA-Factory__ds_z3_config.json", 8, lf, {3, none, none, 1, 2, 16, Precision::bf16});
  CHECK(z3.zero.reduce_bucket_size == 4096 * 4096);
  accepted("LLaMA-Factory__ds_z3_offload_config.json", 8, lf, {3, cpu, cpu, 1, 2, 16, Precision::bf16});
  // An fp8 example: "fp8" is not a DeepSpeed key (the precision comes from elsewhere), fp16/bf16 are off.
  Strategy fp8 = accepted("LLaMA-Factory__ds_z3_fp8_config.json", 8, {1, std::nullopt, std::nullopt},
                          {3, cpu, none, 1, 1, 8, Precision::fp32});
  CHECK(has_note(fp8, "fp8: not a DeepSpeed key"));
  CHECK_FALSE(fp8.zero.offload_optimizer.pin_memory);
  // DeepSpeed runs AutoTP (tensor_parallel.autotp_size 2); zerosim does not model it.
  CHECK_THAT(refused("LLaMA-Factory__ds_z2_autotp_config.json", 8, lf),
             Catch::Contains("tensor_parallel.autotp_size: zerosim does not model AutoTP tensor parallelism yet"));
  // DeepSpeedBF16Config (runtime/precision_config.py) has no auto_cast, loss_scale, ...: extra="forbid" refuses it.
  CHECK_THAT(refused("LLaMA-Factory__ds_z3_alst_config.json", 8, lf),
             Catch::Contains("LLaMA-Factory__ds_z3_alst_config.json: bf16.auto_cast: unknown key"));
}

TEST_CASE("public configs: axolotl-ai-cloud/axolotl deepspeed_configs", "[strategy][public]") {
  accepted("axolotl__zero1.json", 8, kHfBf16, {1, none, none, 8, 1, 64, Precision::bf16});
  accepted("axolotl__zero2.json", 8, kHfBf16, {2, cpu, none, 8, 1, 64, Precision::bf16});
  Strategy z3 = accepted("axolotl__zero3_bf16.json", 8, kHfBf16, {3, none, none, 8, 1, 64, Precision::bf16});
  // The short field names are not the keys HF fills ("zero_optimization.stage3_prefetch_bucket_size"), so their
  // "auto" reaches DeepSpeed, whose pydantic model drops it: the code defaults apply.
  CHECK(z3.zero.prefetch_bucket_size == 50000000);
  CHECK(z3.zero.param_persistence_threshold == 100000);
  CHECK(z3.zero.sub_group_size == 0);
  CHECK(z3.zero.max_live_parameters == 0);
  accepted("axolotl__zero3_bf16_cpuoffload_all.json", 8, kHfBf16, {3, cpu, cpu, 8, 1, 64, Precision::bf16});
  accepted("axolotl__zero3_bf16_cpuoffload_params.json", 8, kHfBf16, {3, none, cpu, 8, 1, 64, Precision::bf16});
  // compile/config.py CompileConfig (a DeepSpeedConfigModel) has no "disable" or "backend".
  CHECK_THAT(refused("axolotl__zero1_torch_compile.json", 8, kHfBf16),
             Catch::Contains("compile.backend: unknown key"));  // the first of disable, backend
}

TEST_CASE("public configs: huggingface/accelerate deepspeed_config_templates", "[strategy][public]") {
  Strategy s1 = accepted("accelerate__zero_stage1_config.json", 8, kHfFp16, {1, none, none, 8, 1, 64, Precision::fp16});
  CHECK(s1.optimizer.torch_adam);
  accepted("accelerate__zero_stage2_offload_config.json", 8, kHfFp16, {2, cpu, none, 8, 1, 64, Precision::fp16});
  Strategy s3 =
      accepted("accelerate__zero_stage3_offload_config.json", 8, kHfFp16, {3, cpu, cpu, 8, 1, 64, Precision::fp16});
  // The HF Trainer does not fill this "auto"; DeepSpeedZeroConfig drops it (default false).
  CHECK_FALSE(s3.zero.gather_16bit_weights_on_model_save);
  CHECK(has_note(s3, "stage3_gather_16bit_weights_on_model_save: \"auto\" → default"));
}

TEST_CASE("public configs: FastChat, stanford_alpaca, LLaVA, open-instruct, Qwen", "[strategy][public]") {
  // No precision block: with --bf16 accelerate adds {"bf16": {"enabled": true}}.
  accepted("FastChat__deepspeed_config_s2.json", 8, kHfBf16, {2, cpu, none, 8, 1, 64, Precision::bf16});
  Strategy fc3 = accepted("FastChat__deepspeed_config_s3.json", 8, kHfBf16, {3, cpu, cpu, 8, 1, 64, Precision::bf16});
  CHECK(fc3.zero.prefetch_bucket_size == 500000000);
  CHECK(fc3.zero.param_persistence_threshold == 1000000);
  accepted("stanford_alpaca__default_offload_opt_param.json", 8, kHfBf16, {3, cpu, cpu, 8, 1, 64, Precision::bf16});
  // scripts/v1_5/pretrain.sh (zero2.json): per_device 32, GA 1; finetune.sh (zero3.json): per_device 16.
  accepted("LLaVA__zero2.json", 8, {32, 1, Precision::bf16}, {2, none, none, 32, 1, 256, Precision::bf16});
  accepted("LLaVA__zero3_offload.json", 8, {16, 1, Precision::bf16}, {3, cpu, cpu, 16, 1, 128, Precision::bf16});
  accepted("open-instruct__stage3_offloading_accelerate.json", 8, kHfBf16, {3, cpu, cpu, 8, 1, 64, Precision::bf16});
  Strategy oi = accepted("open-instruct__stage3_no_offloading_accelerate_memory_optimized.json", 8, kHfBf16,
                         {3, none, none, 8, 1, 64, Precision::bf16});
  CHECK(oi.zero.reduce_bucket_size == 50000000);
  // finetune/finetune_ds.sh: --bf16 True --per_device_train_batch_size 1 --gradient_accumulation_steps 16.
  accepted("Qwen__ds_config_zero2.json", 8, {1, 16, Precision::bf16}, {2, none, none, 1, 16, 128, Precision::bf16});
}

TEST_CASE("public configs: deepspeedai/DeepSpeedExamples and DeepSpeed-Chat", "[strategy][public]") {
  const Hf plain{};  // deepspeed.initialize without the HF Trainer: every batch key is in the file
  // ZenFlow runs in DeepSpeed (zero/config.py zenflow: ZenFlowConfig); zerosim does not model it.
  CHECK_THAT(refused("DeepSpeedExamples__zenflow_zf_config.json", 8, plain),
             Catch::Contains("zero_optimization.zenflow: zerosim does not model ZenFlow"));
  Strategy img = accepted("DeepSpeedExamples__imagenet_ds_fp16_z1_config.json", 8, plain,
                          {1, none, none, 32, 1, 256, Precision::fp16});
  CHECK(has_note(img, "cuda_visible_devices: not a DeepSpeed key"));
  CHECK(img.gradient_clipping == 0);
  Strategy lamb = accepted("DeepSpeedExamples__bing_bert_lamb_seq128.json", 8, plain,
                           {0, none, none, 64, 128, 65536, Precision::fp16});
  CHECK(has_note(lamb, "sparse_attention: accepted, not modelled"));
  CHECK_THAT(resolved_config_json(lamb), Catch::Contains("\"max_coeff\": 0.3"));
  CHECK_THAT(resolved_config_json(lamb), !Catch::Contains("adam_w_mode"));  // FusedLamb would not take it

  // dschat/utils/ds_utils.py get_train_ds_config writes offload_param and the stage3_* keys at every stage:
  // stage_1_and_2.py never reads them.
  Strategy chat =
      accepted("DeepSpeed-Chat__train_stage2_offload_fp16.json", 8, plain, {2, cpu, none, 4, 1, 32, Precision::fp16});
  CHECK(has_note(chat, "offload_param.device: \"cpu\" is ignored at stage 2"));
  CHECK(has_note(chat, "used by ZeRO stage 3 only; DeepSpeed ignores them at stage 2"));
  CHECK(has_note(chat, "hybrid_engine: accepted, not modelled"));
  CHECK(chat.fp16.loss_scale_window == 100);
  CHECK_THAT(refused("DeepSpeed-Chat__train_stage3_bf16_hybrid_engine.json", 8, plain),
             Catch::Contains("hybrid_engine.enabled: zerosim does not model the hybrid engine"));
}

TEST_CASE("public configs: OpenRLHF, Megatron-DeepSpeed, text-generation-webui", "[strategy][public]") {
  const Hf plain{};
  Strategy orl = accepted("OpenRLHF__get_train_ds_config.json", 8, plain, {2, cpu, none, 8, 2, 128, Precision::bf16});
  CHECK(orl.zero.sub_group_size == 1000000000);   // "auto" dropped by DeepSpeedZeroConfig
  CHECK_FALSE(orl.grad_accum_dtype.has_value());  // data_types.grad_accum_dtype: null
  // DeepSpeedZeroConfig has no ignore_missing_optim_state: extra="forbid".
  CHECK_THAT(refused("Megatron-DeepSpeed__universal_checkpointing_ds_config.json", 4, plain),
             Catch::Contains("zero_optimization.ignore_missing_optim_state: unknown key"));
  // aio.thread_count was renamed intra_op_parallelism in v0.16.4: DeepSpeed 0.19.6 ignores it (default 1).
  Strategy nvme = accepted("text-generation-webui__deepspeed_parameters_nvme.json", 8, plain,
                           {3, none, OffloadDevice::nvme, 1, 1, 8, Precision::bf16});
  CHECK(has_note(nvme, "aio.thread_count: renamed intra_op_parallelism"));
  CHECK(nvme.aio.intra_op_parallelism == 1);
  CHECK(nvme.aio.block_size == 262144);
  CHECK(nvme.zero.offload_param.buffer_size == 1000000000);
}

TEST_CASE("public configs: every file in the folder is covered and listed in its README", "[strategy][public]") {
  std::set<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(kDir))
    if (e.path().extension() == ".json") files.insert(e.path().filename().string());
  CHECK(files.size() >= 30);
  std::set<std::string> repos;
  for (const auto& f : files) repos.insert(f.substr(0, f.find("__")));
  CHECK(repos.size() >= 10);
  std::ifstream in(kDir + "README.md");
  REQUIRE(in);
  const std::string readme((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const auto& f : files) {
    INFO(f);
    CHECK_THAT(readme, Catch::Contains(f));
  }
}
