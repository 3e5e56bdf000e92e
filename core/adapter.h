// What a run trains: the whole model, or a LoRA adapter (PEFT's adapter_config.json) on a frozen base that may be
// quantised by bitsandbytes (the model config's quantization_config: QLoRA). model.h's tensor table applies it:
// targeted Linear layers become base_layer + lora_A + lora_B, the base is frozen, quantised weights are stored in
// 4 or 8 bits with their quantisation constants.
//   Result<LoraSpec> l = load_peft_config("adapter_config.json");   m.adapter.lora = *l; m.adapter.kind = lora;
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace zs::core {

enum class AdapterKind : uint8_t { none, lora };

// PEFT LoraConfig fields that change memory or compute (peft/tuners/lora/config.py defaults).
struct LoraSpec {
  int64_t r = 8;
  double alpha = 8;
  double dropout = 0.0;                     // lora_dropout > 0 keeps a dropped copy of each targeted input
  std::vector<std::string> target_modules;  // module-name suffixes PEFT matches ("q_proj", "self_attn.o_proj")
  bool all_linear = false;                  // target_modules "all-linear": every Linear but the output layer
  std::vector<std::string> modules_to_save; // trained in full: PEFT keeps the frozen original and a trainable copy
  std::string bias = "none";                // "none", "all" (every bias trains) or "lora_only" (targeted layers')
  bool use_dora = false;                    // DoRA adds a magnitude vector [out] per targeted layer
  std::string source;                       // the adapter_config.json it came from
};

// bitsandbytes quantisation of the base (transformers' BitsAndBytesConfig, read from quantization_config).
enum class QuantKind : uint8_t { none, nf4, fp4, int8 };
struct QuantSpec {
  QuantKind kind = QuantKind::none;
  bool double_quant = false;          // bnb_4bit_use_double_quant: 8-bit absmax with an fp32 absmax per 256 blocks
  std::string storage = "uint8";      // bnb_4bit_quant_storage: the dtype the packed weight is stored as
  std::string compute_dtype = "float32";  // bnb_4bit_compute_dtype
  std::vector<std::string> skip_modules;  // llm_int8_skip_modules: kept in 16 bits (lm_head always is)
  bool enabled() const { return kind != QuantKind::none; }
  int bits() const { return kind == QuantKind::int8 ? 8 : kind == QuantKind::none ? 0 : 4; }
};

inline constexpr int64_t kBnb4bitBlockSize = 64;        // bitsandbytes quantize_4bit blocksize (Params4bit)
inline constexpr int64_t kBnbDoubleQuantBlockSize = 256; // the absmax's own blocks under double quantisation

struct AdapterSpec {
  AdapterKind kind = AdapterKind::none;
  LoraSpec lora;
  QuantSpec quant;
  bool lora_enabled() const { return kind == AdapterKind::lora; }
};

// PEFT's adapter_config.json (peft_type "LORA"); every error names the file and key. Other PEFT methods are refused
// by name.
Result<LoraSpec> load_peft_config(const std::string& path);
// The bytes a bitsandbytes-quantised weight of `params` elements with `out_rows` output rows keeps beside its
// packed storage: 4-bit absmax per 64-element block (fp32, or 8-bit + fp32 per 256 blocks with double
// quantisation); int8's fp32 row scales (SCB). Not parameters: DeepSpeed neither partitions nor counts them.
int64_t quant_constant_bytes(const QuantSpec& q, int64_t params, int64_t out_rows);
// The packed weight's bytes: params / 2 for 4-bit, params for int8.
int64_t quant_storage_bytes(const QuantSpec& q, int64_t params);

std::string to_string(QuantKind k);

}  // namespace zs::core
