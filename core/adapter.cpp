// PEFT adapter_config.json and transformers' quantization_config.
#include "core/adapter.h"

#include <initializer_list>

#include "core/model_table.h"

namespace zs::core {

namespace {

// A list of strings, or null (absent). Anything else is an error naming the key.
std::vector<std::string> string_list(ObjectReader& r, const char* key) {
  std::vector<std::string> out;
  const Json* v = r.raw({key});
  if (!v || v->is_null()) return out;
  if (!v->is_array()) {
    r.fail(key, "expected a list of module names or null, got " + v->dump());
    return out;
  }
  for (const auto& e : *v) {
    if (!e.is_string() || e.get<std::string>().empty()) {
      r.fail(key, "expected a list of module names, got the element " + e.dump());
      return {};
    }
    out.push_back(e.get<std::string>());
  }
  return out;
}

// A key whose value changes what trains in a way the tensor table does not model: refused unless it holds its
// default (null, false, an empty list or object).
void refuse_if_set(ObjectReader& r, const char* key, const std::string& why) {
  const Json* v = r.raw({key});
  if (!v || v->is_null() || (v->is_boolean() && !v->get<bool>()) || (v->is_structured() && v->empty())) return;
  r.fail(key, v->dump() + " is not modelled: " + why);
}

// target_modules: a list of module-name suffixes, or "all-linear". PEFT reads any other string as a regular
// expression matched in full against every module name (peft/tuners/tuners_utils.py check_target_module_exists),
// which the tensor table cannot evaluate faithfully; null makes PEFT pick per-architecture defaults.
void read_targets(ObjectReader& r, LoraSpec& l) {
  const Json* v = r.raw({"target_modules"});
  if (v && v->is_string()) {
    const std::string s = v->get<std::string>();
    if (s == "all-linear")
      l.all_linear = true;
    else
      r.fail("target_modules",
             "\"" + s + "\": a regular-expression target is not supported; give the module names as a list, e.g. "
             "[\"q_proj\", \"k_proj\", \"v_proj\", \"o_proj\"], or \"all-linear\"");
    return;
  }
  if (!v || v->is_null()) {
    r.fail("target_modules",
           "null: PEFT then picks the architecture's defaults (q_proj, v_proj for Llama; c_attn for GPT-2); list "
           "the modules, e.g. [\"q_proj\", \"v_proj\"], or give \"all-linear\"");
    return;
  }
  l.target_modules = string_list(r, "target_modules");
  if (!r.failed() && l.target_modules.empty()) r.fail("target_modules", "[] targets nothing: list at least one module");
}

// LoraConfig fields that change the layers PEFT builds or which of their tensors train, in ways the tensor table
// does not model (peft/tuners/lora/config.py).
void refuse_unmodelled(ObjectReader& r) {
  const std::string every_layer = "zerosim adapts every layer; remove it to model the adapter on all of them";
  refuse_if_set(r, "layers_to_transform", every_layer);
  refuse_if_set(r, "layers_pattern", every_layer);
  refuse_if_set(r, "rank_pattern", "zerosim models one rank r for every target");
  refuse_if_set(r, "alpha_pattern", "zerosim models one lora_alpha for every target");
  refuse_if_set(r, "exclude_modules", "zerosim adapts every module target_modules matches");
  refuse_if_set(r, "layer_replication", "it changes the base model's layers");
  refuse_if_set(r, "trainable_token_indices", "it trains rows of the embedding beside the adapter");
  refuse_if_set(r, "target_parameters", "zerosim adapts Linear modules, not parameters");
  refuse_if_set(r, "lora_bias", "it adds a trained bias to each lora_B");
  refuse_if_set(r, "use_qalora", "QA-LoRA pools the adapter's input");
  refuse_if_set(r, "megatron_config", "zerosim models HF Linear layers, not Megatron's parallel ones");
  for (const char* variant : {"velora_config", "monteclora_config", "use_bdlora", "kasa_config"})
    refuse_if_set(r, variant, "a LoRA variant with layers of its own");
  // "mica" freezes lora_B (only lora_A trains); the other initialisations change values, not shapes.
  const Json* init = r.raw({"init_lora_weights"});
  if (init && init->is_string() && init->get<std::string>() == "mica")
    r.fail("init_lora_weights", "\"mica\" is not modelled: MiCA freezes lora_B and trains lora_A only");
}

}  // namespace

// PEFT drops keys its LoraConfig does not know with a warning (PeftConfigMixin.from_peft_type,
// _check_and_remove_unused_kwargs), so unknown keys are accepted here too. inference_mode is accepted either way:
// PeftModel.save_pretrained writes it as true for every saved adapter, and PeftModel.from_pretrained(...,
// is_trainable=True) — how a run resumes training an adapter — overwrites it with false (peft/peft_model.py).
Result<LoraSpec> load_peft_config(const std::string& path) {
  auto j = read_json_file(path);
  if (!j) return j.error();
  ObjectReader r(*j, path, "");
  if (r.failed()) return r.finish();
  const std::string type = r.req_string("peft_type");
  if (r.failed()) return r.finish();
  if (type != "LORA")
    return bad_input(path + ": peft_type: \"" + type + "\" is not modelled; zerosim models LoRA (peft_type \"LORA\")");
  LoraSpec l;
  l.source = path;
  l.r = r.integer({"r"}, 8, 1, int64_t{1} << 20);
  l.alpha = r.number({"lora_alpha"}, 8, -1e9, 1e9);
  l.dropout = r.number({"lora_dropout"}, 0.0, 0.0, 1.0);
  read_targets(r, l);
  l.modules_to_save = string_list(r, "modules_to_save");
  l.bias = r.choice({"bias"}, "none", {"none", "all", "lora_only"});
  l.use_dora = r.boolean({"use_dora"}, false);
  r.boolean({"use_rslora"}, false);  // scaling lora_alpha / sqrt(r): no memory or compute effect
  r.boolean({"inference_mode"}, false);
  r.boolean({"fan_in_fan_out"}, false);
  refuse_unmodelled(r);
  r.accept_unknown();
  ZS_TRY(r.finish());
  return l;
}

namespace {

// transformers' BitsAndBytesConfig (utils/quantization_config.py): both flags are refused there too.
void read_bitsandbytes(ObjectReader& q, QuantSpec& out) {
  const bool b4 = q.boolean({"load_in_4bit", "_load_in_4bit"}, false);
  const bool b8 = q.boolean({"load_in_8bit", "_load_in_8bit"}, false);
  q.number({"llm_int8_threshold"}, 6.0, 0.0, 1e9);
  q.boolean({"llm_int8_enable_fp32_cpu_offload"}, false);  // accelerate's device_map, which DeepSpeed replaces
  const bool fp16_weight = q.boolean({"llm_int8_has_fp16_weight"}, false);
  const std::vector<std::string> skip = string_list(q, "llm_int8_skip_modules");
  // The 4-bit keys are written by to_dict whichever mode is on; they are checked always and apply to 4-bit only.
  const std::string type = q.choice({"bnb_4bit_quant_type"}, "fp4", {"fp4", "nf4"});
  const bool double_quant = q.boolean({"bnb_4bit_use_double_quant"}, false);
  const std::string compute = q.choice({"bnb_4bit_compute_dtype"}, "float32", {"float32", "bfloat16", "float16"});
  const std::string storage = q.choice({"bnb_4bit_quant_storage"}, "uint8",
                                       {"uint8", "int8", "bfloat16", "float16", "float32", "float64"});
  if (q.failed()) return;
  if (b4 && b8) return q.fail("load_in_4bit", "true with load_in_8bit true: bitsandbytes loads one or the other");
  if (!b4 && !b8)
    return q.fail("load_in_4bit", "false and load_in_8bit false: nothing is quantised; remove quantization_config");
  if (b8 && fp16_weight)
    return q.fail("llm_int8_has_fp16_weight", "true is not modelled: the 8-bit layers then keep 16-bit weights");
  out = QuantSpec{};
  out.kind = b8 ? QuantKind::int8 : type == "nf4" ? QuantKind::nf4 : QuantKind::fp4;
  out.skip_modules = skip;
  if (b4) {
    out.double_quant = double_quant;
    out.compute_dtype = compute;
    out.storage = storage;
  }
}

}  // namespace

// transformers picks the quantizer by quant_method (quantizers/auto.py AutoQuantizationConfig.from_dict); a config
// written before quant_method existed is bitsandbytes when it has load_in_4bit or load_in_8bit.
Status read_quantization_config(ObjectReader& r, QuantSpec& q) {
  ObjectReader c = r.object({"quantization_config"});
  if (!c.present() || c.failed()) return c.finish();
  const bool legacy_bnb = c.has({"load_in_4bit", "load_in_8bit", "_load_in_4bit", "_load_in_8bit"});
  const std::string method = c.string({"quant_method"}, legacy_bnb ? "bitsandbytes" : "");
  if (method == "fp8" && c.boolean({"dequantize"}, false)) {
    // FineGrainedFP8Config(dequantize=True): transformers dequantises the fp8 checkpoint to bf16 as it loads, so
    // the model trains as an unquantised one.
    c.accept_unknown();
    return c.finish();
  }
  if (method == "fp8")
    c.fail("quant_method",
           "\"fp8\" (a fine-grained fp8 checkpoint, as DeepSeek-V3 ships) is not modelled: its fp8 weights have no "
           "gradients and bitsandbytes LoRA does not apply to them. To model bf16 training, as after DeepSeek's "
           "fp8_cast_bf16.py or loading with FineGrainedFP8Config(dequantize=True), set \"dequantize\": true in "
           "quantization_config or remove quantization_config");
  else if (method.empty())
    c.fail("quant_method", "missing: expected \"bitsandbytes\" (load_in_4bit or load_in_8bit)");
  else if (method != "bitsandbytes")
    c.fail("quant_method", "\"" + method +
                               "\" is not modelled; zerosim models bitsandbytes quantisation (load_in_4bit, "
                               "load_in_8bit: QLoRA)");
  if (c.failed()) return c.finish();
  read_bitsandbytes(c, q);
  c.accept_unknown();  // BitsAndBytesConfig logs and ignores keys it does not know
  return c.finish();
}

int64_t quant_storage_bytes(const QuantSpec& q, int64_t params) {
  return q.kind == QuantKind::int8 ? params : (params + 1) / 2;
}

int64_t quant_constant_bytes(const QuantSpec& q, int64_t params, int64_t out_rows) {
  if (q.kind == QuantKind::none) return 0;
  if (q.kind == QuantKind::int8) return 4 * out_rows;
  const int64_t blocks = (params + kBnb4bitBlockSize - 1) / kBnb4bitBlockSize;
  if (!q.double_quant) return 4 * blocks;
  return blocks + 4 * ((blocks + kBnbDoubleQuantBlockSize - 1) / kBnbDoubleQuantBlockSize);
}

std::string to_string(QuantKind k) {
  switch (k) {
    case QuantKind::none: return "none";
    case QuantKind::nf4: return "nf4";
    case QuantKind::fp4: return "fp4";
    case QuantKind::int8: return "int8";
  }
  return "?";
}

}  // namespace zs::core
