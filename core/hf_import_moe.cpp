// HF config.json readers for the mixture-of-experts families (mixtral … deepseek_v3). A key a config leaves out takes
// the default of its transformers config class (configuration_<family>.py): from_pretrained builds the model that way.
#include <string>
#include <vector>

#include "core/model_table.h"

namespace zs::core {
namespace {

namespace lim = model_limits;
inline constexpr int64_t kMaxExperts = int64_t{1} << 16;

// The sizes every family's config class has, with that class's defaults.
struct Defaults {
  int64_t vocab, hidden, ffn, layers, heads, kv_heads, max_pos;
};

// LlamaConfig-like keys, shared by all five; norm, activation and position are fixed by the modeling files
// (RMSNorm, a SiLU-gated MLP, RoPE).
void read_common(ObjectReader& r, ModelSpec& m, const Defaults& d) {
  m.vocab = r.integer({"vocab_size"}, d.vocab, 1, lim::vocab);
  m.hidden = r.integer({"hidden_size"}, d.hidden, 1, lim::hidden);
  m.ffn_hidden = r.integer({"intermediate_size"}, d.ffn, 1, lim::ffn_hidden);
  m.layers = r.integer({"num_hidden_layers"}, d.layers, 1, lim::layers);
  m.heads = r.integer({"num_attention_heads"}, d.heads, 1, lim::heads);
  // A null num_key_value_heads means multi-head attention in every one of these classes.
  m.kv_heads = r.opt_integer({"num_key_value_heads"}, 1, lim::heads).value_or(d.kv_heads > 0 ? d.kv_heads : m.heads);
  m.max_seq_len = r.integer({"max_position_embeddings"}, d.max_pos, 1, lim::max_seq_len);
  m.tied_embeddings = r.boolean({"tie_word_embeddings"}, false);
  r.choice({"hidden_act"}, "silu", {"silu", "swish"});  // other gates keep the shapes but are not SwiGLU
  m.activation = Activation::swiglu;
  m.norm = Norm::rmsnorm;
  m.norm_bias = false;
  m.position = Position::rope;
}

// Routed experts and top-k; `experts_key` names the config's spelling of the expert count. top_k_dflt 0: the class
// defaults num_experts_per_tok to None (DeepseekV2Config), a model HF builds but cannot run, so the config must say it.
void read_routing(ObjectReader& r, ModelSpec& m, std::initializer_list<const char*> experts_key,
                  int64_t experts_dflt, int64_t top_k_dflt) {
  m.moe.experts = r.integer(experts_key, experts_dflt, 0, kMaxExperts);
  const auto top_k = r.opt_integer({"num_experts_per_tok"}, 1, kMaxExperts);
  if (!top_k && top_k_dflt == 0 && !r.failed())
    r.fail("num_experts_per_tok", "missing or null: the config class's default None routes tokens to no expert");
  m.moe.top_k = top_k.value_or(top_k_dflt);
  if (m.moe.experts > 0 && m.moe.top_k > m.moe.experts)
    r.fail("num_experts_per_tok", std::to_string(m.moe.top_k) + " exceeds the " + std::to_string(m.moe.experts) +
                                      " routed experts");
}

// Qwen's mlp_only_layers: layer indices that keep the dense MLP.
void read_dense_layer_list(ObjectReader& r, ModelSpec& m) {
  const Json* v = r.raw({"mlp_only_layers"});
  if (!v || v->is_null()) return;
  const std::string allowed = "a list of layer indices in [0, " + std::to_string(m.layers - 1) + "]";
  if (!v->is_array()) return r.fail("mlp_only_layers", "is not " + allowed);
  for (const Json& x : *v) {
    if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() >= m.layers)
      return r.fail("mlp_only_layers", x.dump() + " is not " + allowed);
    m.moe.dense_layers.push_back(x.get<int64_t>());
  }
}

// MixtralConfig: every layer is a MixtralSparseMoeBlock of num_local_experts experts of intermediate_size.
void read_mixtral(ObjectReader& r, ModelSpec& m) {
  read_common(r, m, {32000, 4096, 14336, 32, 32, 8, 4096 * 32});
  m.head_dim = r.integer({"head_dim"}, 0, 1, lim::head_dim);  // null: hidden / heads
  read_routing(r, m, {"num_local_experts", "num_experts"}, 8, 2);
  m.moe.expert_ffn = m.ffn_hidden;
  if (m.moe.experts == 0) r.fail("num_local_experts", "0 is out of range: a Mixtral has at least one expert");
}

// Qwen2MoeConfig and Qwen3MoeConfig: sparse every decoder_sparse_step layers outside mlp_only_layers. Qwen2-MoE adds
// a shared expert with its sigmoid gate and biases q/k/v (qkv_bias); Qwen3-MoE has attention_bias and q/k norms.
void read_qwen_moe(ObjectReader& r, ModelSpec& m, bool qwen3) {
  if (qwen3)
    read_common(r, m, {151936, 2048, 6144, 24, 32, 4, 32768});
  else
    read_common(r, m, {151936, 2048, 5632, 24, 16, 16, 32768});
  m.head_dim = r.integer({"head_dim"}, 0, 1, lim::head_dim);  // absent: hidden / heads (getattr in the attention)
  read_routing(r, m, {"num_experts", "num_local_experts"}, qwen3 ? 128 : 60, qwen3 ? 8 : 4);
  m.moe.expert_ffn = r.integer({"moe_intermediate_size"}, qwen3 ? 768 : 1408, 1, lim::ffn_hidden);
  m.moe.sparse_step = r.integer({"decoder_sparse_step"}, 1, 1, lim::layers);
  read_dense_layer_list(r, m);
  if (qwen3) {
    m.qk_norm = true;
    m.qkv_bias = m.attn_out_bias = r.boolean({"attention_bias"}, false);
  } else {
    m.qkv_bias = r.boolean({"qkv_bias"}, true);  // Qwen2MoeAttention: o_proj never has a bias
    m.moe.shared_ffn = r.integer({"shared_expert_intermediate_size"}, 5632, 0, lim::ffn_hidden);
    m.moe.shared_expert_gate = true;
  }
}

// DeepseekV2Config / DeepseekV3Config: MLA attention, first_k_dense_replace dense layers, then MoE layers with
// n_shared_experts shared experts.
void read_mla(ObjectReader& r, ModelSpec& m) {
  MlaSpec& a = m.mla;
  a.q_lora_rank = r.opt_integer({"q_lora_rank"}, 1, lim::hidden).value_or(0);  // null: q_proj directly
  if (!r.has("q_lora_rank")) a.q_lora_rank = 1536;                             // both classes' default
  a.kv_lora_rank = r.integer({"kv_lora_rank"}, 512, 1, lim::hidden);
  a.qk_nope_head_dim = r.integer({"qk_nope_head_dim"}, 128, 0, lim::head_dim);
  a.qk_rope_head_dim = r.integer({"qk_rope_head_dim"}, 64, 0, lim::head_dim);
  a.v_head_dim = r.integer({"v_head_dim"}, 128, 1, lim::head_dim);
  if (a.qk_nope_head_dim + a.qk_rope_head_dim < 1) r.fail("qk_nope_head_dim", "with qk_rope_head_dim sums to 0");
  // zerosim's head_dim is the query/key head width; the value heads (v_head_dim) are MlaSpec's.
  m.head_dim = a.qk_nope_head_dim + a.qk_rope_head_dim;
  m.qkv_bias = m.attn_out_bias = r.boolean({"attention_bias"}, false);
}

void read_deepseek(ObjectReader& r, ModelSpec& m, bool v3) {
  if (v3)
    read_common(r, m, {129280, 7168, 18432, 61, 128, 128, 4096});
  else
    read_common(r, m, {32000, 4096, 11008, 32, 32, 0, 2048});
  read_mla(r, m);
  read_routing(r, m, {"n_routed_experts", "num_local_experts", "num_experts"}, v3 ? 256 : 64, v3 ? 8 : 0);
  if (m.moe.experts == 0) r.fail("n_routed_experts", "0 is out of range: DeepSeek MoE layers have routed experts");
  m.moe.expert_ffn = r.integer({"moe_intermediate_size"}, v3 ? 2048 : 1407, 1, lim::ffn_hidden);
  // n_shared_experts null: DeepseekV2Moe builds no shared experts.
  const int64_t shared_dflt = r.has("n_shared_experts") ? 0 : v3 ? 1 : 2;
  m.moe.shared_experts = r.opt_integer({"n_shared_experts"}, 0, kMaxExperts).value_or(shared_dflt);
  m.moe.first_dense_layers = r.integer({"first_k_dense_replace"}, v3 ? 3 : 0, 0, lim::layers);
  m.moe.router_bias = v3;  // DeepseekV3TopkRouter's e_score_correction_bias (a buffer: no parameter)
  // DeepSeek's own modeling code (trust_remote_code) makes only every moe_layer_freq-th layer sparse; HF's classes
  // read no such key and would build a different model than the checkpoint holds.
  if (r.integer({"moe_layer_freq"}, 1, 1, lim::layers) != 1)
    r.fail("moe_layer_freq", "only 1 is modelled (every layer from first_k_dense_replace on is MoE, as HF builds it)");
  if (r.boolean({"mlp_bias"}, false))
    r.fail("mlp_bias", "true is not modelled: HF's DeepSeek experts and dense MLPs disagree on where it applies");
  // V2's routing choices add no parameters; noaux_tc adds DeepSeek-V3's correction bias, which V2's HF class lacks.
  if (!v3) r.choice({"topk_method"}, "greedy", {"greedy", "group_limited_greedy"});
}

}  // namespace

const std::vector<std::string>& moe_family_types() {
  static const std::vector<std::string> t = {"mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v2", "deepseek_v3"};
  return t;
}

void read_moe_family(ObjectReader& r, ModelSpec& m, const std::string& type) {
  if (type == "mixtral") {
    m.arch = Arch::mixtral;
    read_mixtral(r, m);
  } else if (type == "qwen2_moe" || type == "qwen3_moe") {
    m.arch = type == "qwen3_moe" ? Arch::qwen3_moe : Arch::qwen2_moe;
    read_qwen_moe(r, m, type == "qwen3_moe");
  } else if (type == "deepseek_v2" || type == "deepseek_v3") {
    m.arch = type == "deepseek_v3" ? Arch::deepseek_v3 : Arch::deepseek_v2;
    read_deepseek(r, m, type == "deepseek_v3");
  } else {
    r.fail("model_type", "\"" + type + "\" is not a mixture-of-experts family");
  }
}

}  // namespace zs::core
