// PEFT's adapter_config.json (load_peft_config) and transformers' quantization_config (read_quantization_config):
// what is read, PEFT's and BitsAndBytesConfig's defaults, and each refusal naming the file, key and reason.
#include <catch2/catch.hpp>

#include "core/adapter.h"
#include "core/model.h"
#include "core/model_table.h"

using namespace zs::core;
using Catch::Matchers::Contains;

namespace {

std::string peft(const std::string& name) { return std::string(ZS_TEST_DATA) + "/peft/" + name; }

// read_quantization_config on a config.json body given inline; the file is named "cfg.json" in messages.
Result<QuantSpec> quant(const std::string& text) {
  auto j = parse_json_text(text, "cfg.json");
  if (!j) return j.error();
  ObjectReader r(*j, "cfg.json", "");
  r.accept({"model_type"});
  QuantSpec q;
  ZS_TRY(read_quantization_config(r, q));
  ZS_TRY(r.finish());
  return q;
}

std::string error_of(const Result<QuantSpec>& q) { return q ? std::string("(no error)") : q.error().message; }

}  // namespace

TEST_CASE("a PEFT-saved LoRA adapter_config.json is read with every key PEFT writes", "[adapter]") {
  auto l = load_peft_config(peft("lora_llama_attn.json"));
  REQUIRE(l);
  CHECK(l->r == 16);
  CHECK(l->alpha == 32);
  CHECK(l->dropout == 0.05);
  CHECK(l->target_modules == std::vector<std::string>{"v_proj", "k_proj", "q_proj", "o_proj"});
  CHECK_FALSE(l->all_linear);
  CHECK(l->modules_to_save.empty());
  CHECK(l->bias == "none");
  CHECK_FALSE(l->use_dora);
  CHECK(l->source == peft("lora_llama_attn.json"));
}

TEST_CASE("LoRA defaults are PEFT's LoraConfig defaults", "[adapter]") {
  auto l = load_peft_config(peft("minimal.json"));
  REQUIRE(l);
  CHECK(l->r == 8);
  CHECK(l->alpha == 8);
  CHECK(l->dropout == 0.0);
  CHECK(l->bias == "none");
  CHECK(l->target_modules == std::vector<std::string>{"q_proj", "v_proj"});
}

TEST_CASE("all-linear, modules_to_save, DoRA and an unknown (newer PEFT) key", "[adapter]") {
  auto l = load_peft_config(peft("qlora_all_linear.json"));
  REQUIRE(l);
  CHECK(l->all_linear);
  CHECK(l->target_modules.empty());
  CHECK(l->r == 64);
  CHECK(l->modules_to_save == std::vector<std::string>{"lm_head", "embed_tokens"});
  CHECK(l->use_dora);
}

TEST_CASE("PEFT methods other than LoRA are refused by name", "[adapter]") {
  auto l = load_peft_config(peft("ia3.json"));
  REQUIRE_FALSE(l);
  CHECK(l.error().kind == ErrorKind::bad_input);
  CHECK_THAT(l.error().message, Contains("ia3.json: peft_type: \"IA3\" is not modelled; zerosim models LoRA"));
}

TEST_CASE("adapter configs zerosim cannot model are refused naming the file and key", "[adapter]") {
  struct Case {
    const char* file;
    const char* says;
  } cases[] = {
      {"regex_target.json", "regex_target.json: target_modules: \".*decoder"},
      {"layers_to_transform.json", "layers_to_transform.json: layers_to_transform: [0,1,2] is not modelled"},
      {"rank_pattern.json", "rank_pattern.json: rank_pattern: {\"q_proj\":32} is not modelled"},
      {"bad_bias.json", "bad_bias.json: bias: \"some\" is not one of none, all, lora_only"},
      {"null_targets.json", "null_targets.json: target_modules: null: PEFT then picks"},
  };
  for (const auto& c : cases) {
    INFO(c.file);
    auto l = load_peft_config(peft(c.file));
    REQUIRE_FALSE(l);
    CHECK(l.error().kind == ErrorKind::bad_input);
    CHECK_THAT(l.error().message, Contains(c.says));
  }
  auto regex = load_peft_config(peft("regex_target.json"));
  CHECK_THAT(regex.error().message, Contains("a regular-expression target is not supported"));
  CHECK_THAT(regex.error().message, Contains("as a list"));
}

TEST_CASE("a missing adapter_config.json is bad input naming the path", "[adapter]") {
  auto l = load_peft_config(peft("nope.json"));
  REQUIRE_FALSE(l);
  CHECK_THAT(l.error().message, Contains("nope.json"));
}

TEST_CASE("bitsandbytes 4-bit: BitsAndBytesConfig's defaults (fp4, float32 compute, uint8 storage)", "[adapter]") {
  auto q = quant(R"({"quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": true}})");
  REQUIRE(q);
  CHECK(q->kind == QuantKind::fp4);
  CHECK_FALSE(q->double_quant);
  CHECK(q->compute_dtype == "float32");
  CHECK(q->storage == "uint8");
  CHECK(q->bits() == 4);
}

TEST_CASE("bitsandbytes as transformers serialises it (QLoRA: nf4, double quant, bf16 storage)", "[adapter]") {
  auto m = import_hf_config(peft("llama3_8b_bnb_nf4.json"));
  REQUIRE(m);
  const QuantSpec& q = m->adapter.quant;
  CHECK(q.kind == QuantKind::nf4);
  CHECK(q.double_quant);
  CHECK(q.compute_dtype == "bfloat16");
  CHECK(q.storage == "bfloat16");
  CHECK(q.skip_modules.empty());
  CHECK_FALSE(m->adapter.lora_enabled());  // the base is quantised; the adapter comes from --peft
}

TEST_CASE("bitsandbytes 8-bit, skip modules, a legacy config without quant_method", "[adapter]") {
  auto q = quant(R"({"quantization_config": {"quant_method": "bitsandbytes", "load_in_8bit": true,
                     "bnb_4bit_use_double_quant": true, "llm_int8_skip_modules": ["lm_head", "router"]}})");
  REQUIRE(q);
  CHECK(q->kind == QuantKind::int8);
  CHECK(q->bits() == 8);
  CHECK_FALSE(q->double_quant);  // a 4-bit key: no effect on 8-bit
  CHECK(q->skip_modules == std::vector<std::string>{"lm_head", "router"});
  auto legacy = quant(R"({"quantization_config": {"load_in_4bit": true, "bnb_4bit_quant_type": "nf4"}})");
  REQUIRE(legacy);
  CHECK(legacy->kind == QuantKind::nf4);
  auto none = quant("{}");
  REQUIRE(none);
  CHECK(none->kind == QuantKind::none);
}

TEST_CASE("quantization_config errors name the file, key and what is allowed", "[adapter]") {
  CHECK_THAT(error_of(quant(R"({"quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": true,
                                "load_in_8bit": true}})")),
             Contains("cfg.json: quantization_config.load_in_4bit: true with load_in_8bit true"));
  CHECK_THAT(error_of(quant(R"({"quantization_config": {"quant_method": "gptq", "bits": 4}})")),
             Contains("cfg.json: quantization_config.quant_method: \"gptq\" is not modelled"));
  CHECK_THAT(error_of(quant(R"({"quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": true,
                                "bnb_4bit_quant_type": "int4"}})")),
             Contains("bnb_4bit_quant_type: \"int4\" is not one of fp4, nf4"));
  CHECK_THAT(error_of(quant(R"({"quantization_config": {"quant_method": "bitsandbytes"}})")),
             Contains("nothing is quantised"));
  CHECK_THAT(error_of(quant(R"({"quantization_config": {"quant_method": "bitsandbytes", "load_in_8bit": true,
                                "llm_int8_has_fp16_weight": true}})")),
             Contains("llm_int8_has_fp16_weight: true is not modelled"));
}

TEST_CASE("DeepSeek-V3's fp8 quantization_config: refused with the way to model bf16, accepted dequantised",
          "[adapter]") {
  const std::string fp8 = R"({"quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3",
                              "quant_method": "fp8", "weight_block_size": [128, 128]}})";
  const std::string e = error_of(quant(fp8));
  CHECK_THAT(e, Contains("cfg.json: quantization_config.quant_method: \"fp8\""));
  CHECK_THAT(e, Contains("\"dequantize\": true"));
  CHECK_THAT(e, Contains("remove quantization_config"));
  auto deq = quant(R"({"quantization_config": {"quant_method": "fp8", "dequantize": true,
                       "weight_block_size": [128, 128]}})");
  REQUIRE(deq);
  CHECK(deq->kind == QuantKind::none);
}
