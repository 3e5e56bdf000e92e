// Building a model's tensor table (model.h tensor_table): the builder every family's layout uses, and the
// families' builders and HF readers, each in a file of its own. Internal to core/.
//   TableBuilder b(m);  b.linear("model.layers.0.self_attn.q_proj", 0, {q, h}, false, q, ModuleRole::qkv);
#pragma once

#include <string>
#include <vector>

#include "core/json_reader.h"
#include "core/model.h"

namespace zs::core {

// Appends tensors in forward order. Names follow the HF checkpoints so a reader can match them against
// `model.named_parameters()` line by line.
class TableBuilder {
 public:
  explicit TableBuilder(const ModelSpec& m) : m_(m) {}

  TensorInfo& add(const std::string& module, const char* leaf, int64_t layer, std::vector<int64_t> shape, bool matmul,
                  ModuleRole role, bool tied = false);
  // A Linear/Conv1D: weight of `shape`, and a bias of `bias_len` when `bias`.
  void linear(const std::string& module, int64_t layer, std::vector<int64_t> shape, bool bias, int64_t bias_len,
              ModuleRole role);
  // A norm of `width` (hidden when 0): weight, and a bias when the model's norms have one (m.norm_bias).
  void norm(const std::string& module, int64_t layer, int64_t width = 0);
  const ModelSpec& model() const { return m_; }
  std::vector<TensorInfo> take() { return std::move(out_); }

 private:
  const ModelSpec& m_;
  std::vector<TensorInfo> out_;
};

// The families' layouts (model_families.cpp: gemma … bloom; model_moe.cpp: mixtral … deepseek_v3).
void dense_family_tensors(const ModelSpec& m, TableBuilder& b);
void moe_family_tensors(const ModelSpec& m, TableBuilder& b);
bool is_moe_family(Arch a);

// HF config.json readers for the families (hf_import_families.cpp, hf_import_moe.cpp): fill `m` from `r` for
// model_type `type`; errors go to r (its finish() reports them).
void read_dense_family(ObjectReader& r, ModelSpec& m, const std::string& type);
void read_moe_family(ObjectReader& r, ModelSpec& m, const std::string& type);
// The model types each reader takes (HF's spelling).
const std::vector<std::string>& dense_family_types();
const std::vector<std::string>& moe_family_types();

// The model config's quantization_config (transformers' BitsAndBytesConfig): bitsandbytes 4-bit or 8-bit (adapter.cpp);
// absent leaves q as it is, any other quant_method is refused by name.
Status read_quantization_config(ObjectReader& r, QuantSpec& q);

// A LoRA adapter and a quantised base applied to a built table (adapter_table.cpp): targeted Linear layers become
// base_layer (frozen, quantised) + lora_A + lora_B, every other tensor frozen unless modules_to_save or bias say.
void apply_adapter(const ModelSpec& m, std::vector<TensorInfo>& tensors);

}  // namespace zs::core
