// A LoRA adapter on a frozen base, the base optionally quantised by bitsandbytes, applied to a model's tensor table
// as PEFT and transformers build the model:
// - peft/tuners/lora/model.py _create_and_replace: a targeted Linear (or GPT-2 Conv1D) X becomes a LoraLayer whose
//   X.base_layer keeps the original weight and bias, with X.lora_A.default [r, in] and X.lora_B.default [out, r]
//   (both nn.Linear, whatever the base's layout); DoRA adds X.lora_magnitude_vector.default [out].
// - peft/tuners/tuners_utils.py check_target_module_exists: a listed target matches a module named exactly so or
//   ending in "." + target; "all-linear" takes every Linear/Conv1D but the output layer (_maybe_include_all_linear_layers).
// - _mark_only_adapters_as_trainable: everything else is frozen; bias "all" trains every bias, "lora_only" the
//   targeted layers'. modules_to_save (ModulesToSaveWrapper) keeps X.original_module frozen beside a trainable copy
//   X.modules_to_save.default.
// - transformers' bitsandbytes integration replaces every nn.Linear of the blocks by Linear4bit / Linear8bitLt
//   except llm_int8_skip_modules and the output embedding (get_keys_to_not_convert).
// DeepSpeed then casts every floating parameter to the model dtype (engine.py _cast_module_mixed_precision): the
// adapter and the unquantised frozen weights are 16-bit; a packed 4-bit weight is untouched.
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/model_table.h"

namespace zs::core {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The nn.Module a tensor belongs to in HF's model: its name without ".weight"/".bias". This differs from
// TensorInfo::module only inside a DeepSpeed leaf module (a sparse MoE block), which holds many Linears.
std::string layer_of(const TensorInfo& t) { return t.name.substr(0, t.name.rfind('.')); }

bool matches(const std::string& layer, const std::vector<std::string>& names) {
  for (const auto& n : names)
    if (layer == n || ends_with(layer, "." + n)) return true;
  return false;
}

bool is_linear_weight(const TensorInfo& t) { return t.is_matmul && t.shape.size() == 2; }

bool targeted(const ModelSpec& m, const TensorInfo& t) {
  if (!m.adapter.lora_enabled() || !is_linear_weight(t)) return false;
  const LoraSpec& l = m.adapter.lora;
  if (l.all_linear) return t.role != ModuleRole::head;
  return matches(layer_of(t), l.target_modules);
}

bool quantised(const ModelSpec& m, const TensorInfo& t) {
  const QuantSpec& q = m.adapter.quant;
  return q.enabled() && is_linear_weight(t) && t.layer >= 0 && t.role != ModuleRole::head &&
         !matches(layer_of(t), q.skip_modules);
}

// Renames a tensor of layer X into X + inner (".base_layer", ".original_module"): the module string follows unless
// the tensor lives in a leaf module holding many layers.
TensorInfo moved(const TensorInfo& t, const std::string& inner) {
  TensorInfo c = t;
  const std::string layer = layer_of(t);
  c.name = layer + inner + t.name.substr(layer.size());
  if (t.module == layer) c.module = layer + inner;
  return c;
}

TensorInfo adapter_tensor(const TensorInfo& base, const std::string& module, const char* leaf,
                          std::vector<int64_t> shape, bool matmul) {
  TensorInfo a;
  const std::string layer = layer_of(base);
  a.module = base.module == layer ? module : base.module;
  a.name = module + "." + leaf;
  a.layer = base.layer;
  a.numel = 1;
  for (int64_t d : shape) a.numel *= d;
  a.params = a.numel;
  a.shape = std::move(shape);
  a.is_matmul = matmul;
  a.token_fraction = base.token_fraction;
  a.role = base.role;
  return a;
}

// The packed weight as DeepSpeed sees it: bnb_4bit_quant_storage's elements (16-bit storage: params / 4 elements
// for 4-bit); with uint8 storage only the bytes matter (stages 0-2 keep frozen weights whole on the GPU), counted
// in the 16-bit units the rest of the table uses.
void quantise(const QuantSpec& q, TensorInfo& t) {
  t.quant_bits = q.bits();
  t.numel = (quant_storage_bytes(q, t.params) + 1) / 2;
}

void add_lora(const ModelSpec& m, const TensorInfo& base, std::vector<TensorInfo>& out) {
  const LoraSpec& l = m.adapter.lora;
  const std::string layer = layer_of(base);
  // nn.Linear weights are [out, in]; GPT-2's Conv1D stores [in, out] (PEFT's fan_in_fan_out).
  const bool conv1d = m.arch == Arch::gpt;
  const int64_t in = conv1d ? base.shape[0] : base.shape[1], outw = conv1d ? base.shape[1] : base.shape[0];
  out.push_back(adapter_tensor(base, layer + ".lora_A.default", "weight", {l.r, in}, true));
  out.push_back(adapter_tensor(base, layer + ".lora_B.default", "weight", {outw, l.r}, true));
  if (l.use_dora) out.push_back(adapter_tensor(base, layer + ".lora_magnitude_vector", "default", {outw}, false));
}

bool bias_trains(const LoraSpec& l, const TensorInfo& t, bool layer_targeted) {
  if (!ends_with(t.name, ".bias")) return false;
  return l.bias == "all" || (l.bias == "lora_only" && layer_targeted);
}

}  // namespace

void apply_adapter(const ModelSpec& m, std::vector<TensorInfo>& tensors) {
  const AdapterSpec& a = m.adapter;
  if (!a.lora_enabled() && !a.quant.enabled()) return;
  std::unordered_set<std::string> targeted_layers;  // a MoE model with all-linear targets tens of thousands
  for (const auto& t : tensors)
    if (targeted(m, t)) targeted_layers.insert(layer_of(t));
  std::vector<TensorInfo> out;
  out.reserve(tensors.size() * 2);
  for (const auto& t : tensors) {
    const std::string layer = layer_of(t);
    const bool exact_target = targeted_layers.count(layer) > 0;
    if (a.lora_enabled() && !t.tied && matches(layer, a.lora.modules_to_save) && !exact_target) {
      TensorInfo original = moved(t, ".original_module");
      original.trainable = false;
      original.is_matmul = false;  // the copy computes; the original only stays in memory
      out.push_back(std::move(original));
      TensorInfo copy = moved(t, ".modules_to_save.default");
      copy.trainable = true;
      out.push_back(std::move(copy));
      continue;
    }
    TensorInfo base = exact_target ? moved(t, ".base_layer") : t;
    base.trainable = !a.lora_enabled() || bias_trains(a.lora, t, exact_target);
    if (quantised(m, t)) quantise(a.quant, base);
    out.push_back(std::move(base));
    if (exact_target && is_linear_weight(t)) add_lora(m, t, out);
  }
  tensors = std::move(out);
}

Status validate_adapter(const ModelSpec& m) {
  const AdapterSpec& a = m.adapter;
  if (a.quant.enabled() && !a.lora_enabled())
    return bad_input(m.source + ": quantization_config: a bitsandbytes " + std::to_string(a.quant.bits()) +
                     "-bit base cannot be fully fine-tuned (its packed weights have no gradients); give the LoRA "
                     "adapter with --peft adapter_config.json (QLoRA), or drop quantization_config");
  if (!a.lora_enabled()) return {};
  const auto tensors = shared_tensor_table(m);
  for (const auto& t : *tensors)
    if (t.name.find(".lora_A.") != std::string::npos) return {};
  std::string names;
  for (const auto& n : a.lora.target_modules) names += (names.empty() ? "" : ", ") + n;
  return bad_input(a.lora.source + ": target_modules: none of [" + names + "] names a Linear layer of " + m.name +
                   " (" + to_string(m.arch) + " layout): PEFT raises \"Target modules ... not found in the base "
                   "model\"");
}

}  // namespace zs::core
