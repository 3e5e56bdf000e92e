// Mixture-of-experts families (mixtral … deepseek_v3): their HF parameter layouts, tensor by tensor, in the order of
// each *ForCausalLM's named_parameters().
//
// The sparse MoE block — router gate, every routed expert, any shared expert and its gate — is ONE DeepSpeed leaf
// module named as HF names the block ("model.layers.N.block_sparse_moe" for Mixtral, "model.layers.N.mlp" for the
// others), role moe. Why: ZeRO-3 users mark these blocks with deepspeed.utils.set_z3_leaf_modules so that all
// experts are gathered at once rather than hooked one by one (a token touches only top_k of them, which would leave
// ZeRO-3's prefetch waiting on experts that never run). LLaMA-Factory does it for exactly these model types:
// hiyouga/LLaMA-Factory src/llamafactory/model/model_utils/moe.py add_z3_leaf_module (MixtralSparseMoeBlock,
// Qwen2MoeSparseMoeBlock, Qwen3MoeSparseMoeBlock, "DeepseekV2MoE", "DeepseekV3MoE"); DeepSpeed v0.19 makes the first
// three leaves by default (runtime/zero/leaf_module_config.py DEFAULT_LEAF_MODULE_CLASSES, zero_optimization.leaf_module).
// Expert names follow transformers' per-expert nn.ModuleList layout ("experts.3.w1.weight"); releases that fuse the
// experts into 3-D gate_up_proj / down_proj tensors hold the same number of parameters.
#include <algorithm>
#include <array>
#include <string>

#include "core/model_table.h"

namespace zs::core {
namespace {

std::string layer_prefix(int64_t i) { return "model.layers." + std::to_string(i) + "."; }

int64_t attn_head_dim(const ModelSpec& m) { return m.head_dim > 0 ? m.head_dim : m.hidden / m.heads; }

// HF's decoder layers: DeepSeek keeps a dense MLP for layer < first_k_dense_replace; Qwen2/3-MoE use the sparse
// block when the layer is not in mlp_only_layers and (layer + 1) % decoder_sparse_step == 0 (Qwen2MoeDecoderLayer).
bool is_sparse_layer(const ModelSpec& m, int64_t i) {
  const MoeSpec& e = m.moe;
  if (!e.enabled() || i < e.first_dense_layers) return false;
  if (std::find(e.dense_layers.begin(), e.dense_layers.end(), i) != e.dense_layers.end()) return false;
  return e.sparse_step > 0 && (i + 1) % e.sparse_step == 0;
}

// q/k/v/o as MixtralAttention, Qwen2MoeAttention (qkv bias, o without) and Qwen3MoeAttention (attention_bias on all
// four, then q_norm and k_norm: RMSNorms over head_dim).
void gqa_attention(const ModelSpec& m, TableBuilder& b, const std::string& p, int64_t i) {
  const int64_t h = m.hidden, q = m.heads * attn_head_dim(m), kv = m.kv_heads * attn_head_dim(m);
  b.linear(p + "self_attn.q_proj", i, {q, h}, m.qkv_bias, q, ModuleRole::qkv);
  b.linear(p + "self_attn.k_proj", i, {kv, h}, m.qkv_bias, kv, ModuleRole::qkv);
  b.linear(p + "self_attn.v_proj", i, {kv, h}, m.qkv_bias, kv, ModuleRole::qkv);
  b.linear(p + "self_attn.o_proj", i, {h, q}, m.attn_out_bias, h, ModuleRole::attn_out);
  if (m.qk_norm) {
    b.norm(p + "self_attn.q_norm", i, attn_head_dim(m));
    b.norm(p + "self_attn.k_norm", i, attn_head_dim(m));
  }
}

// DeepSeek's multi-head latent attention (DeepseekV2Attention / DeepseekV3Attention): queries through q_proj, or
// the low-rank q_a_proj → q_a_layernorm → q_b_proj; keys and values through one compressed kv_a_proj_with_mqa
// (kv_lora_rank + the shared rope key) → kv_a_layernorm → kv_b_proj (per head: the no-rope key and the value).
// attention_bias puts a bias on q_a_proj, kv_a_proj_with_mqa and o_proj only.
void mla_attention(const ModelSpec& m, TableBuilder& b, const std::string& p, int64_t i) {
  const MlaSpec& a = m.mla;
  const int64_t h = m.hidden, qk_head = a.qk_nope_head_dim + a.qk_rope_head_dim;
  const bool bias = m.qkv_bias;
  if (a.q_lora_rank == 0) {
    b.linear(p + "self_attn.q_proj", i, {m.heads * qk_head, h}, false, 0, ModuleRole::qkv);
  } else {
    b.linear(p + "self_attn.q_a_proj", i, {a.q_lora_rank, h}, bias, a.q_lora_rank, ModuleRole::qkv);
    b.norm(p + "self_attn.q_a_layernorm", i, a.q_lora_rank);
    b.linear(p + "self_attn.q_b_proj", i, {m.heads * qk_head, a.q_lora_rank}, false, 0, ModuleRole::qkv);
  }
  const int64_t kv_a = a.kv_lora_rank + a.qk_rope_head_dim;
  b.linear(p + "self_attn.kv_a_proj_with_mqa", i, {kv_a, h}, bias, kv_a, ModuleRole::qkv);
  b.norm(p + "self_attn.kv_a_layernorm", i, a.kv_lora_rank);
  const int64_t kv_b = m.heads * (a.qk_nope_head_dim + a.v_head_dim);
  b.linear(p + "self_attn.kv_b_proj", i, {kv_b, a.kv_lora_rank}, false, 0, ModuleRole::qkv);
  b.linear(p + "self_attn.o_proj", i, {h, m.heads * a.v_head_dim}, m.attn_out_bias, h, ModuleRole::attn_out);
}

// A dense layer's gated MLP of ffn_hidden (Qwen2MoeMLP, DeepseekV3MLP): three leaf modules of their own.
void dense_mlp(const ModelSpec& m, TableBuilder& b, const std::string& p, int64_t i) {
  const int64_t h = m.hidden, f = m.ffn_hidden;
  b.linear(p + "mlp.gate_proj", i, {f, h}, m.mlp_bias, f, ModuleRole::mlp_gate);
  b.linear(p + "mlp.up_proj", i, {f, h}, m.mlp_bias, f, ModuleRole::mlp_in);
  b.linear(p + "mlp.down_proj", i, {h, f}, m.mlp_bias, h, ModuleRole::mlp_out);
}

// One weight inside the sparse block: `leaf` is its path below the block ("experts.3.w1.weight").
void block_weight(TableBuilder& b, const std::string& block, const std::string& leaf, int64_t i,
                  std::vector<int64_t> shape, double token_fraction) {
  b.add(block, leaf.c_str(), i, std::move(shape), true, ModuleRole::moe).token_fraction = token_fraction;
}

// A gated MLP of inner size f inside the block, under `path` ("experts.3." or "shared_experts."): its three weights
// in HF's registration order. Mixtral's MixtralBlockSparseTop2MLP names them w1 (gate), w2 (down), w3 (up).
enum class Proj { gate, up, down };
struct ExpertWeight {
  const char* name;
  Proj proj;
};
using ExpertLayout = std::array<ExpertWeight, 3>;
constexpr ExpertLayout kMixtralExpert = {{{"w1", Proj::gate}, {"w2", Proj::down}, {"w3", Proj::up}}};
constexpr ExpertLayout kProjExpert = {{{"gate_proj", Proj::gate}, {"up_proj", Proj::up}, {"down_proj", Proj::down}}};

void block_swiglu(const ModelSpec& m, TableBuilder& b, const std::string& block, const std::string& path, int64_t i,
                  int64_t f, const ExpertLayout& layout, double fraction) {
  const int64_t h = m.hidden;
  for (const ExpertWeight& w : layout) {
    std::vector<int64_t> shape = w.proj == Proj::down ? std::vector<int64_t>{h, f} : std::vector<int64_t>{f, h};
    block_weight(b, block, path + w.name + ".weight", i, std::move(shape), fraction);
  }
}

void routed_experts(const ModelSpec& m, TableBuilder& b, const std::string& block, int64_t i,
                    const ExpertLayout& layout) {
  const double fraction = static_cast<double>(m.moe.top_k) / static_cast<double>(m.moe.experts);
  for (int64_t e = 0; e < m.moe.experts; ++e)
    block_swiglu(m, b, block, "experts." + std::to_string(e) + ".", i, m.moe.expert_ffn, layout, fraction);
}

// The router: a [experts, hidden] linear every token goes through. DeepSeek-V3's e_score_correction_bias
// (router_bias) is a buffer in DeepseekV3TopkRouter (register_buffer), not a parameter: HF's num_parameters() and
// ZeRO do not count it, so it has no row here.
void router(const ModelSpec& m, TableBuilder& b, const std::string& block, int64_t i) {
  block_weight(b, block, "gate.weight", i, {m.moe.experts, m.hidden}, 1.0);
}

// MixtralSparseMoeBlock (gate, experts), Qwen3MoeSparseMoeBlock (gate, experts) and Qwen2MoeSparseMoeBlock (gate,
// experts, shared_expert, shared_expert_gate [1, hidden]).
void qwen_mixtral_block(const ModelSpec& m, TableBuilder& b, const std::string& block, int64_t i) {
  router(m, b, block, i);
  routed_experts(m, b, block, i, m.arch == Arch::mixtral ? kMixtralExpert : kProjExpert);
  if (m.moe.shared_ffn > 0) block_swiglu(m, b, block, "shared_expert.", i, m.moe.shared_ffn, kProjExpert, 1.0);
  if (m.moe.shared_expert_gate) block_weight(b, block, "shared_expert_gate.weight", i, {1, m.hidden}, 1.0);
}

// DeepseekV2MoE / DeepseekV3MoE register experts, then gate, then shared_experts (one MLP of
// n_shared_experts × moe_intermediate_size).
void deepseek_block(const ModelSpec& m, TableBuilder& b, const std::string& block, int64_t i) {
  routed_experts(m, b, block, i, kProjExpert);
  router(m, b, block, i);
  if (m.moe.shared_experts > 0)
    block_swiglu(m, b, block, "shared_experts.", i, m.moe.shared_experts * m.moe.expert_ffn, kProjExpert, 1.0);
}

void decoder_layer(const ModelSpec& m, TableBuilder& b, int64_t i) {
  const std::string p = layer_prefix(i);
  const bool deepseek = m.arch == Arch::deepseek_v2 || m.arch == Arch::deepseek_v3;
  b.norm(p + "input_layernorm", i);
  if (m.mla.enabled())
    mla_attention(m, b, p, i);
  else
    gqa_attention(m, b, p, i);
  b.norm(p + "post_attention_layernorm", i);
  if (!is_sparse_layer(m, i))
    dense_mlp(m, b, p, i);
  else if (deepseek)
    deepseek_block(m, b, p + "mlp", i);
  else
    qwen_mixtral_block(m, b, p + (m.arch == Arch::mixtral ? "block_sparse_moe" : "mlp"), i);
}

}  // namespace

bool is_moe_family(Arch a) {
  return a == Arch::mixtral || a == Arch::qwen2_moe || a == Arch::qwen3_moe || a == Arch::deepseek_v2 ||
         a == Arch::deepseek_v3;
}

// DeepSeek-V3's multi-token-prediction layers (num_nextn_predict_layers, checkpoint layer 61) are not loaded by HF's
// DeepseekV3ForCausalLM (DeepseekV3Model ignores "model.layers.61.*" on load): they have no rows here.
void moe_family_tensors(const ModelSpec& m, TableBuilder& b) {
  b.add("model.embed_tokens", "weight", -1, {m.vocab, m.hidden}, false, ModuleRole::embedding);
  for (int64_t i = 0; i < m.layers; ++i) decoder_layer(m, b, i);
  b.norm("model.norm", -1);
  b.add("lm_head", "weight", -1, {m.vocab, m.hidden}, true, ModuleRole::head, m.tied_embeddings);
}

}  // namespace zs::core
