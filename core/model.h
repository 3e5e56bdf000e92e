// ModelSpec: a decoder-only transformer's architecture, and what is derived from it exactly — parameter
// count, DeepSpeed's largest_layer_params, the per-module tensor table, FLOPs per token.
//   Result<ModelSpec> m = load_model_file("models/gpt2-1.5b.json");   // or import_hf_config(".../config.json")
//   int64_t n = parameter_count(*m);  auto t = tensor_table(*m);
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace zs::core {

enum class Arch { gpt, llama };
enum class Activation { gelu, swiglu };
enum class Norm { layernorm, rmsnorm };
enum class Position { learned, rope };

struct ModelSpec {
  std::string name;
  Arch arch = Arch::gpt;
  int64_t layers = 0;
  int64_t hidden = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;     // == heads for MHA; < heads for GQA/MQA
  int64_t head_dim = 0;     // hidden / heads unless the file says otherwise (0 here means "derive"; loaders fill it)
  int64_t ffn_hidden = 0;   // MLP inner size (per projection for SwiGLU)
  int64_t vocab = 0;
  int64_t max_seq_len = 0;
  bool tied_embeddings = true;
  Activation activation = Activation::gelu;
  Norm norm = Norm::layernorm;
  bool qkv_bias = false;
  bool mlp_bias = false;       // biases on MLP linears (GPT-2: true; LLaMA: false)
  bool attn_out_bias = false;  // bias on the attention output projection (GPT-2: true)
  bool norm_bias = true;       // LayerNorm has a bias; RMSNorm never does
  Position position = Position::learned;  // learned adds a [max_seq_len, hidden] table; rope has no parameters
  std::string description;     // free text from the file, for people
  std::string source;          // where the file came from (path), for provenance
};

// Largest sizes a file may give. At these caps every count stays below 2^60 (a block is at most
// ~8·hidden·max(ffn, heads·head_dim) ≤ 2^45 parameters, times 10^4 layers), so int64 arithmetic never overflows.
namespace model_limits {
inline constexpr int64_t layers = 10000;
inline constexpr int64_t hidden = int64_t{1} << 20;
inline constexpr int64_t heads = int64_t{1} << 16;
inline constexpr int64_t head_dim = int64_t{1} << 16;
inline constexpr int64_t attn_width = int64_t{1} << 22;  // heads · head_dim
inline constexpr int64_t ffn_hidden = int64_t{1} << 22;
inline constexpr int64_t vocab = int64_t{1} << 24;
inline constexpr int64_t max_seq_len = int64_t{1} << 24;
}  // namespace model_limits

// One parameter tensor. `module` is the DeepSpeed sub-module that owns it directly
// (e.g. "h.3.attn.c_attn"); `layer` is the block index, or -1 for embeddings/final norm/head.
struct TensorInfo {
  std::string name;    // "h.3.attn.c_attn.weight"
  std::string module;  // "h.3.attn.c_attn"
  int64_t layer = -1;
  std::vector<int64_t> shape;
  int64_t numel = 0;
  bool is_matmul = false;  // a GEMM weight (counts toward 2·numel FLOPs per token)
  bool tied = false;       // shares storage with an earlier tensor (LM head tied to wte): not counted again
};

// One DeepSpeed sub-module (a leaf nn.Module with direct parameters), in forward execution order.
struct ModuleInfo {
  std::string name;
  int64_t layer = -1;
  int64_t direct_params = 0;  // sum of numel of its own parameters (tied ones included, as DeepSpeed counts them)
  std::vector<size_t> tensors;  // indices into the tensor table
};

// What a module does in the block, from its name (GPT-2's and Llama's): its compute's cost formula, and the key of
// a measured per-role time scale (hardware measured.module_time_scale). none: no compute of its own.
enum class ModuleRole : uint8_t { none, embedding, positions, norm, qkv, attn_out, mlp_in, mlp_gate, mlp_out, head };
inline constexpr int kModuleRoles = 10;
ModuleRole module_role(const ModuleInfo& mod);
const char* to_string(ModuleRole r);
// The role named `name` (to_string's spelling); none when no role has that name.
ModuleRole module_role_from(const std::string& name);

// Every parameter tensor in forward order, tied tensors included and flagged.
std::vector<TensorInfo> tensor_table(const ModelSpec& m);
// Leaf modules in forward order (embedding, per block: norm1, attn(qkv), attn out, norm2, mlp..., final norm, head).
std::vector<ModuleInfo> module_table(const ModelSpec& m);
// The same two tables built once per model shape and shared, immutable (thread-safe; a few dozen shapes are kept).
// For hot paths: fit's fixes evaluate the memory model dozens of times, each walking the tables several times.
std::shared_ptr<const std::vector<TensorInfo>> shared_tensor_table(const ModelSpec& m);
std::shared_ptr<const std::vector<ModuleInfo>> shared_module_table(const ModelSpec& m);
// Parameters counted once (tied tensors once), as HF's num_parameters() and DeepSpeed's model_to_params.
int64_t parameter_count(const ModelSpec& m);
// DeepSpeed's largest_layer_params: max over modules of their direct parameter numel.
int64_t largest_layer_params(const ModelSpec& m);
// Parameters of one transformer block (all blocks are identical).
int64_t block_params(const ModelSpec& m);
// Embedding parameters (token + learned positions) and the untied head, counted once.
int64_t embedding_params(const ModelSpec& m);

// FLOPs for one token at sequence length `seq_len` (multiply-add = 2 FLOPs).
// gemm: 2 × (matmul weights, LM head included); attention: QK^T and AV = 4 · layers · seq_len · (heads·head_dim)
// (full, not causal-halved, as Megatron and PaLM count it). Backward = 2 × forward; recompute adds one forward.
struct FlopsPerToken {
  double forward_gemm = 0;
  double forward_attention = 0;
  double forward() const { return forward_gemm + forward_attention; }
  double backward() const { return 2.0 * forward(); }
  double training(bool recompute) const { return forward() * (recompute ? 4.0 : 3.0); }
};
FlopsPerToken flops_per_token(const ModelSpec& m, int64_t seq_len);

// The sequence length a run uses when none is given: the model's max_seq_len, capped at kDefaultSeqLenCap.
// max_seq_len (HF max_position_embeddings) is the longest context a model accepts (131072 for Llama-3.1 and
// Qwen2), not what a run trains at; transformers' run_clm.py likewise caps its default block_size (at 1024) when
// the tokenizer allows more. 4096 is Llama-2's context; models with max_seq_len <= 4096 keep their full length.
inline constexpr int64_t kDefaultSeqLenCap = 4096;
int64_t default_seq_len(const ModelSpec& m);

// Checks internal consistency (hidden % heads, heads % kv_heads, positive sizes); `file` names the source.
Status validate_model(const ModelSpec& m, const std::string& file);

// zerosim's own model JSON (models/*.json); every error names the file and key.
Result<ModelSpec> load_model_file(const std::string& path);
// A HuggingFace config.json with model_type gpt2, llama, mistral or qwen2; any other is a clear error.
Result<ModelSpec> import_hf_config(const std::string& path);
// Either format: a JSON with "model_type" is read as HF, otherwise as zerosim's.
Result<ModelSpec> load_model_any(const std::string& path);
// Resolve a name or path (see paths.h) and load it.
Result<ModelSpec> load_model(const std::string& name_or_path);
// zerosim's model JSON for `m` (every key written, head_dim explicit): turns an imported HF config into a
// models/*.json file that load_model_file reads back to the same spec.
std::string model_to_json(const ModelSpec& m);

std::string to_string(Arch a);
std::string to_string(Activation a);
std::string to_string(Norm n);
std::string to_string(Position p);

}  // namespace zs::core
