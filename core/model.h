// ModelSpec: a decoder-only transformer's architecture (dense or mixture-of-experts, optionally with a LoRA adapter
// on a 16-bit or bitsandbytes-quantised base), and what is derived from it exactly — parameter count, DeepSpeed's
// largest_layer_params, the per-module tensor table, FLOPs per token.
//   Result<ModelSpec> m = load_model_file("models/gpt2-1.5b.json");   // or import_hf_config(".../config.json")
//   int64_t n = parameter_count(*m);  auto t = tensor_table(*m);
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/adapter.h"
#include "core/status.h"

namespace zs::core {

// The parameter layout family: names and shapes of the tensors follow HF's modeling_<family>.py. gpt and llama are
// zerosim's own model files' two layouts (GPT-2 names; LLaMA names, also Mistral and Qwen2); the others are read
// from HF config.json only, and to_string gives their HF model_type.
enum class Arch {
  gpt, llama, gemma, gemma2, gemma3, phi3, qwen3, gpt_neox, falcon, gptj, opt, bloom,
  mixtral, qwen2_moe, qwen3_moe, deepseek_v2, deepseek_v3
};
enum class Activation { gelu, swiglu };  // swiglu: any gated MLP (SiLU or GELU gate: Gemma's GeGLU has its shapes)
enum class Norm { layernorm, rmsnorm };
enum class Position { learned, rope, alibi };  // only learned has parameters

// Mixture of experts (HF's sparse MoE blocks: Mixtral, Qwen2-MoE, Qwen3-MoE, DeepSeek-V2/V3). Under ZeRO the experts
// are ordinary parameters; the sparse block is one DeepSpeed leaf module (set_z3_leaf_modules, as LLaMA-Factory and
// accelerate set it for these models), so ZeRO-3 gathers all its experts at once.
struct MoeSpec {
  int64_t experts = 0;             // routed experts per MoE layer (0: dense model)
  int64_t top_k = 0;               // experts each token is routed to
  int64_t expert_ffn = 0;          // per-expert MLP inner size (moe_intermediate_size; Mixtral: intermediate_size)
  int64_t shared_experts = 0;      // DeepSeek n_shared_experts: one MLP of shared_experts × expert_ffn
  int64_t shared_ffn = 0;          // Qwen2-MoE shared_expert_intermediate_size (its shared expert's inner size)
  bool shared_expert_gate = false; // Qwen2-MoE: a [1, hidden] sigmoid gate on the shared expert
  bool router_bias = false;        // DeepSeek-V3 e_score_correction_bias [experts]
  int64_t first_dense_layers = 0;  // DeepSeek first_k_dense_replace: the first layers keep a dense MLP (ffn_hidden)
  int64_t sparse_step = 1;         // Qwen decoder_sparse_step: layer i is MoE when (i + 1) % step == 0
  std::vector<int64_t> dense_layers;  // Qwen mlp_only_layers
  bool enabled() const { return experts > 0; }
};

// DeepSeek's multi-head latent attention (q_lora_rank 0: q_proj directly).
struct MlaSpec {
  int64_t q_lora_rank = 0, kv_lora_rank = 0, qk_nope_head_dim = 0, qk_rope_head_dim = 0, v_head_dim = 0;
  bool enabled() const { return kv_lora_rank > 0; }
};

// Every field but name, description and source shapes the tensor table: shape_key (model.cpp) lists them all.
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
  // Family details (HF's config keys); zero/false where a family has none. The family's table builder reads them.
  bool dropout = false;           // trains with dropout (GPT-2, OPT: p = 0.1): one-byte masks are stored
  bool parallel_residual = false; // attention and MLP read the same block input (gpt_neox, gptj, falcon parallel_attn)
  int64_t block_norms = 2;        // norms per block: 1 (gptj, falcon-7b), 2, or 4 (gemma2/3 sandwich norms)
  bool qk_norm = false;           // RMSNorm over head_dim on q and k (qwen3, gemma3)
  bool embedding_norm = false;    // a norm right after the token embedding (bloom word_embeddings_layernorm)
  bool head_bias = false;         // the LM head has a bias (gptj)
  int64_t position_offset = 0;    // learned position rows beyond max_seq_len (OPT: 2)
  int64_t embed_proj_dim = 0;     // OPT word_embed_proj_dim != hidden: embeddings of this width, project_in/out
  MoeSpec moe;
  MlaSpec mla;
  // What is trained: the whole model (adapter.kind none) or a LoRA adapter on a frozen, possibly quantised base.
  AdapterSpec adapter;
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

// What a module does in the block: its compute's cost formula, and the key of a measured per-role time scale
// (hardware measured.module_time_scale). none: no compute of its own. moe: a sparse MoE block (router and experts,
// one DeepSpeed leaf module). A LoRA layer's base_layer, lora_A and lora_B keep the role of the layer they adapt.
// The table builders set it; module_role reads GPT-2's and Llama's names for a module without one.
enum class ModuleRole : uint8_t { none, embedding, positions, norm, qkv, attn_out, mlp_in, mlp_gate, mlp_out, head, moe };
inline constexpr int kModuleRoles = 11;

// One parameter tensor. `module` is the DeepSpeed sub-module that owns it directly
// (e.g. "h.3.attn.c_attn"); `layer` is the block index, or -1 for embeddings/final norm/head.
// `numel` is what DeepSpeed partitions, gathers and stores, in elements of the model dtype; `params` is what HF
// counts (num_parameters). They differ only for a quantised weight: 4-bit NF4 stores params / 2 bytes, so with a
// bf16 bnb_4bit_quant_storage numel = params / 4.
struct TensorInfo {
  std::string name;    // "h.3.attn.c_attn.weight"
  std::string module;  // "h.3.attn.c_attn"
  int64_t layer = -1;
  std::vector<int64_t> shape;
  int64_t numel = 0;
  int64_t params = 0;
  bool is_matmul = false;  // a GEMM weight (counts toward 2·params·token_fraction FLOPs per token)
  bool tied = false;       // shares storage with an earlier tensor (LM head tied to wte): not counted again
  bool trainable = true;   // requires_grad: has a gradient and optimizer states (false: a LoRA run's frozen base)
  int quant_bits = 0;      // bitsandbytes storage bits of a quantised weight (4 or 8); 0: the model dtype
  double token_fraction = 1.0;  // share of the tokens its GEMM sees: top_k / experts for a routed expert
  ModuleRole role = ModuleRole::none;  // its module's role (the builder sets it)
};

// One DeepSpeed sub-module (a leaf nn.Module with direct parameters), in forward execution order.
struct ModuleInfo {
  std::string name;
  int64_t layer = -1;
  int64_t direct_params = 0;  // sum of numel of its own parameters (tied ones included, as DeepSpeed counts them)
  std::vector<size_t> tensors;  // indices into the tensor table
  ModuleRole role = ModuleRole::none;  // its first tensor's role
};

ModuleRole module_role(const ModuleInfo& mod);  // mod.role when set, else from the name
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
// Parameters counted once (tied tensors once), as HF's num_parameters() and DeepSpeed's model_to_params; a LoRA
// model's count includes its adapter (PEFT's print_trainable_parameters "all params").
int64_t parameter_count(const ModelSpec& m);
// Parameters that train (requires_grad): all of them without an adapter; PEFT's "trainable params" with one.
int64_t trainable_parameter_count(const ModelSpec& m);
// Parameters one token's forward multiplies by: a mixture of experts' top-k experts, not all (HF's "active").
int64_t active_parameter_count(const ModelSpec& m);
// For headers: "6.74B params"; a mixture of experts adds ", 12.88B active (top-2 of 8 experts)"; an adapter run
// ", 0.040B trainable (LoRA r 16 on nf4 4-bit)".
std::string parameter_summary(const ModelSpec& m);
// DeepSpeed's largest_layer_params: max over modules of their direct parameter numel.
int64_t largest_layer_params(const ModelSpec& m);
// Parameters of the first transformer block (a dense model's blocks are identical; DeepSeek's first dense layers and
// Qwen-MoE's mlp_only_layers differ from the rest).
int64_t block_params(const ModelSpec& m);
// Embedding parameters (token + learned positions) and the untied head, counted once.
int64_t embedding_params(const ModelSpec& m);

// FLOPs for one token at sequence length `seq_len` (multiply-add = 2 FLOPs).
// gemm: 2 × params × token_fraction of each matmul weight (LM head included; a routed expert sees top_k / experts
// of the tokens); attention: QK^T and AV = 4 · layers · seq_len · (heads·head_dim) (full, not causal-halved, as
// Megatron and PaLM count it; MLA: 2 · layers · seq_len · heads · (qk_nope + qk_rope + v_head_dim)). Backward = 2 × forward, less the weight gradients a frozen weight does not need;
// recompute adds one forward.
struct FlopsPerToken {
  double forward_gemm = 0;
  double forward_attention = 0;
  double frozen_gemm = 0;  // of forward_gemm: frozen weights' GEMMs (backward computes only their input gradient)
  double forward() const { return forward_gemm + forward_attention; }
  double backward() const { return 2.0 * forward() - frozen_gemm; }
  double training(bool recompute) const { return forward() * (recompute ? 2.0 : 1.0) + backward(); }
};
FlopsPerToken flops_per_token(const ModelSpec& m, int64_t seq_len);

// The sequence length a run uses when none is given: the model's max_seq_len, capped at kDefaultSeqLenCap.
// max_seq_len (HF max_position_embeddings) is the longest context a model accepts (131072 for Llama-3.1 and
// Qwen2), not what a run trains at; transformers' run_clm.py likewise caps its default block_size (at 1024) when
// the tokenizer allows more. 4096 is Llama-2's context; models with max_seq_len <= 4096 keep their full length.
inline constexpr int64_t kDefaultSeqLenCap = 4096;
int64_t default_seq_len(const ModelSpec& m);

// Whether exec's engine (exec/gpt_model) can train this model: the gpt and llama layouts, full fine-tuning only.
// Empty when it can, else why not, naming the family.
std::string engine_refusal(const ModelSpec& m);

// What a run can train of `m`, as PEFT and transformers would allow: a bitsandbytes-quantised base needs a LoRA
// adapter (its packed weights have no gradients), and every LoRA target must name some layer (PEFT raises
// "Target modules ... not found in the base model"). Errors name the model or adapter file.
Status validate_adapter(const ModelSpec& m);

// Checks internal consistency (hidden % heads, heads % kv_heads, positive sizes); `file` names the source.
Status validate_model(const ModelSpec& m, const std::string& file);

// zerosim's own model JSON (models/*.json); every error names the file and key.
Result<ModelSpec> load_model_file(const std::string& path);
// A HuggingFace config.json of a supported model_type (supported_hf_model_types); any other is a clear error.
// Its quantization_config (bitsandbytes) sets adapter.quant.
Result<ModelSpec> import_hf_config(const std::string& path);
const std::vector<std::string>& supported_hf_model_types();
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
