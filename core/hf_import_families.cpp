// HF config.json readers for the dense families (gemma … bloom). Each key is read with the default its HF class's
// `__init__` gives it (configuration_<family>.py), under every name the class accepts (attribute_map aliases, the
// popped `n_embed`); only what changes the parameter layout is read, and type- and range-checked. A config whose
// layout model_families.cpp cannot reproduce exactly is refused, naming the key.
#include <initializer_list>
#include <string>
#include <utility>

#include "core/model_table.h"

namespace zs::core {
namespace {

namespace lim = model_limits;

// A size under its HF names, the first present winning (aliases first: HF's attribute_map lets them override).
int64_t size_of(ObjectReader& r, std::initializer_list<const char*> names, int64_t dflt, int64_t max) {
  return r.integer(names, dflt, 1, max);
}

// The name a config used for a key (for messages): the first of `names` present, else the canonical last one.
const char* used_name(const ObjectReader& r, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (r.has(n)) return n;
  return *(names.end() - 1);
}

// Trains with dropout when any of the config's dropout probabilities (HF default each) is above 0.
bool any_dropout(ObjectReader& r, std::initializer_list<std::pair<const char*, double>> probs) {
  bool any = false;
  for (const auto& [key, dflt] : probs) any = r.number({key}, dflt, 0.0, 1.0) > 0.0 || any;
  return any;
}

// A config value that changes the parameter layout in a way the tensor table does not reproduce.
void refuse(ObjectReader& r, const char* key, const std::string& what) {
  r.fail(key, what + " is not supported: zerosim cannot reproduce this parameter layout exactly");
}

// The head checks validate_model makes, here with the config's own key names (validate_model's messages name
// LLaMA's keys): hidden divisible by heads where the family derives head_dim, kv heads dividing heads.
void check_heads(ObjectReader& r, const ModelSpec& m, const char* hidden_key, const char* heads_key,
                 const char* kv_key) {
  if (r.failed()) return;
  if (m.head_dim == 0 && m.hidden % m.heads != 0)
    r.fail(heads_key, std::to_string(m.heads) + " does not divide " + hidden_key + " " + std::to_string(m.hidden));
  else if (kv_key && (m.kv_heads > m.heads || m.heads % m.kv_heads != 0))
    r.fail(kv_key, std::to_string(m.kv_heads) + " does not divide " + heads_key + " " + std::to_string(m.heads));
}

// The gated RMSNorm/RoPE families (Gemma, Phi3, Qwen3) name their sizes as LLaMA does. Defaults are the class's.
struct LlamaDefaults {
  int64_t vocab, hidden, ffn, layers, heads, kv_heads /* 0: heads */, head_dim /* 0: hidden / heads */, max_pos;
  bool tied;
};
void read_llama_sizes(ObjectReader& r, ModelSpec& m, const LlamaDefaults& d) {
  m.vocab = size_of(r, {"vocab_size"}, d.vocab, lim::vocab);
  m.hidden = size_of(r, {"hidden_size"}, d.hidden, lim::hidden);
  m.ffn_hidden = size_of(r, {"intermediate_size"}, d.ffn, lim::ffn_hidden);
  m.layers = size_of(r, {"num_hidden_layers"}, d.layers, lim::layers);
  m.heads = size_of(r, {"num_attention_heads"}, d.heads, lim::heads);
  m.kv_heads = size_of(r, {"num_key_value_heads"}, d.kv_heads > 0 ? d.kv_heads : m.heads, lim::heads);
  m.head_dim = r.integer({"head_dim"}, d.head_dim, 1, lim::head_dim);
  m.max_seq_len = size_of(r, {"max_position_embeddings"}, d.max_pos, lim::max_seq_len);
  m.tied_embeddings = r.boolean({"tie_word_embeddings"}, d.tied);
  m.activation = Activation::swiglu;  // gated MLP whatever the activation (Gemma's GELU gate included)
  m.norm = Norm::rmsnorm;
  m.norm_bias = false;
  m.position = Position::rope;
  check_heads(r, m, "hidden_size", "num_attention_heads", "num_key_value_heads");
}

// GemmaConfig / Gemma2Config / Gemma3TextConfig. Gemma2/3 add sandwich norms; Gemma3 q_norm/k_norm. Their
// query_pre_attn_scalar, sliding window and logit soft-capping have no parameters.
void read_gemma(ObjectReader& r, ModelSpec& m, const std::string& type) {
  if (type == "gemma") {
    m.arch = Arch::gemma;
    read_llama_sizes(r, m, {256000, 3072, 24576, 28, 16, 16, 256, 8192, true});
  } else if (type == "gemma2") {
    m.arch = Arch::gemma2;
    read_llama_sizes(r, m, {256000, 2304, 9216, 26, 8, 4, 256, 8192, true});
  } else {
    m.arch = Arch::gemma3;
    read_llama_sizes(r, m, {262208, 2304, 9216, 26, 8, 4, 256, 131072, true});
  }
  r.opt_string({"hidden_act"});  // any activation: the MLP is gated (GeGLU) and its shapes do not change
  r.opt_string({"hidden_activation"});
  m.qkv_bias = m.attn_out_bias = r.boolean({"attention_bias"}, false);  // on q, k, v and o alike
  m.dropout = any_dropout(r, {{"attention_dropout", 0.0}});
  m.block_norms = m.arch == Arch::gemma ? 2 : 4;
  m.qk_norm = m.arch == Arch::gemma3;
}

// Phi3Config: fused qkv_proj and gate_up_proj, no biases.
void read_phi3(ObjectReader& r, ModelSpec& m) {
  m.arch = Arch::phi3;
  read_llama_sizes(r, m, {32064, 3072, 8192, 32, 32, 0, 0, 4096, false});
  r.opt_string({"hidden_act"});
  m.dropout = any_dropout(r, {{"resid_pdrop", 0.0}, {"embd_pdrop", 0.0}, {"attention_dropout", 0.0}});
}

// Qwen3Config: q_norm/k_norm over head_dim (128 by default); attention_bias on q, k, v and o.
void read_qwen3(ObjectReader& r, ModelSpec& m) {
  m.arch = Arch::qwen3;
  read_llama_sizes(r, m, {151936, 4096, 22016, 32, 32, 32, 128, 32768, false});
  r.opt_string({"hidden_act"});
  m.qkv_bias = m.attn_out_bias = r.boolean({"attention_bias"}, false);
  m.dropout = any_dropout(r, {{"attention_dropout", 0.0}});
  m.qk_norm = true;
}

// The LayerNorm, non-gated families share these settings; biases and norms per family.
void layernorm_mlp(ModelSpec& m) {
  m.activation = Activation::gelu;  // any pointwise activation: one up projection, same shapes
  m.norm = Norm::layernorm;
  m.norm_bias = true;
}

// GPTNeoXConfig (Pythia): fused query_key_value; rotary_pct rotates part of each head (no parameters).
void read_gpt_neox(ObjectReader& r, ModelSpec& m) {
  m.arch = Arch::gpt_neox;
  m.vocab = size_of(r, {"vocab_size"}, 50432, lim::vocab);
  m.hidden = size_of(r, {"hidden_size"}, 6144, lim::hidden);
  m.layers = size_of(r, {"num_hidden_layers"}, 44, lim::layers);
  m.heads = m.kv_heads = size_of(r, {"num_attention_heads"}, 64, lim::heads);
  m.ffn_hidden = size_of(r, {"intermediate_size"}, 24576, lim::ffn_hidden);
  m.max_seq_len = size_of(r, {"max_position_embeddings"}, 2048, lim::max_seq_len);
  m.tied_embeddings = r.boolean({"tie_word_embeddings"}, false);
  r.number({"rotary_pct"}, 0.25, 0.0, 1.0);
  r.number({"partial_rotary_factor"}, 0.25, 0.0, 1.0);
  r.opt_string({"hidden_act"});
  layernorm_mlp(m);
  m.qkv_bias = m.attn_out_bias = r.boolean({"attention_bias"}, true);  // query_key_value and dense
  m.mlp_bias = true;
  m.position = Position::rope;
  m.parallel_residual = r.boolean({"use_parallel_residual"}, true);
  m.dropout = any_dropout(r, {{"attention_dropout", 0.0}, {"hidden_dropout", 0.0}});
  check_heads(r, m, "hidden_size", "num_attention_heads", nullptr);
}

// FalconConfig. Three layouts: multi_query (falcon-7b: one K/V head, one norm shared by the parallel attention and
// MLP), new_decoder_architecture (falcon-40b/180b: num_kv_heads K/V heads, ln_attn and ln_mlp unless
// num_ln_in_parallel_attn is 1), and sequential blocks (parallel_attn false, falcon-rw-1b: input_layernorm and
// post_attention_layernorm, full K/V). HF ignores multi_query and num_kv_heads where the layout has no use for them.
void read_falcon(ObjectReader& r, ModelSpec& m) {
  m.arch = Arch::falcon;
  m.vocab = size_of(r, {"vocab_size"}, 65024, lim::vocab);
  m.hidden = size_of(r, {"n_embed", "hidden_size"}, 4544, lim::hidden);  // FalconConfig pops n_embed first
  m.layers = size_of(r, {"num_hidden_layers"}, 32, lim::layers);
  m.heads = size_of(r, {"num_attention_heads"}, 71, lim::heads);
  const int64_t kv = size_of(r, {"num_kv_heads"}, m.heads, lim::heads);
  const bool new_arch = r.boolean({"new_decoder_architecture"}, false);
  const bool multi_query = r.boolean({"multi_query"}, true);
  const bool parallel = r.boolean({"parallel_attn"}, true);
  const auto norms = r.opt_integer({"num_ln_in_parallel_attn"}, 1, 2);
  const bool bias = r.boolean({"bias"}, false);
  const bool alibi = r.boolean({"alibi"}, false);
  m.ffn_hidden = size_of(r, {"ffn_hidden_size"}, 4 * m.hidden, lim::ffn_hidden);
  m.max_seq_len = size_of(r, {"max_position_embeddings"}, 2048, lim::max_seq_len);
  m.tied_embeddings = r.boolean({"tie_word_embeddings"}, true);  // PretrainedConfig's default
  r.opt_string({"activation"});
  layernorm_mlp(m);
  m.kv_heads = new_arch ? kv : multi_query ? 1 : m.heads;
  m.qkv_bias = m.attn_out_bias = m.mlp_bias = bias;
  m.position = alibi ? Position::alibi : Position::rope;
  m.parallel_residual = parallel;
  // FalconDecoderLayer: num_ln_in_parallel_attn defaults to 2 under the new architecture; ln_attn/ln_mlp exist
  // only in parallel blocks and are used only by the new architecture.
  const int64_t parallel_norms = norms.value_or(new_arch ? 2 : 1);
  if (new_arch && !parallel)
    refuse(r, "parallel_attn",
           "false with new_decoder_architecture true (HF's FalconDecoderLayer has no norms for it)");
  else if (parallel && !new_arch && parallel_norms == 2)
    refuse(r, "num_ln_in_parallel_attn",
           "2 without new_decoder_architecture (HF builds ln_attn/ln_mlp and runs input_layernorm)");
  m.block_norms = parallel ? parallel_norms : 2;
  m.dropout = any_dropout(r, {{"hidden_dropout", 0.0}, {"attention_dropout", 0.0}});
  check_heads(r, m, used_name(r, {"n_embed", "hidden_size"}), "num_attention_heads",
              new_arch ? "num_kv_heads" : nullptr);
}

// GPTJConfig (attribute_map: hidden_size, num_attention_heads, num_hidden_layers, max_position_embeddings alias the
// n_* keys). One ln_1 per block, parallel attention and MLP, biases on the MLP and the head only.
void read_gptj(ObjectReader& r, ModelSpec& m) {
  m.arch = Arch::gptj;
  m.vocab = size_of(r, {"vocab_size"}, 50400, lim::vocab);
  m.hidden = size_of(r, {"hidden_size", "n_embd"}, 4096, lim::hidden);
  m.layers = size_of(r, {"num_hidden_layers", "n_layer"}, 28, lim::layers);
  m.heads = m.kv_heads = size_of(r, {"num_attention_heads", "n_head"}, 16, lim::heads);
  m.max_seq_len = size_of(r, {"max_position_embeddings", "n_positions"}, 2048, lim::max_seq_len);
  m.ffn_hidden = r.opt_integer({"n_inner"}, 1, lim::ffn_hidden).value_or(4 * m.hidden);  // null: 4·n_embd
  m.tied_embeddings = r.boolean({"tie_word_embeddings"}, false);
  const auto rotary = r.opt_integer({"rotary_dim"}, 1, lim::head_dim);
  r.opt_string({"activation_function"});
  layernorm_mlp(m);
  m.mlp_bias = m.head_bias = true;
  m.position = Position::rope;
  m.parallel_residual = true;
  m.block_norms = 1;
  m.dropout = any_dropout(r, {{"resid_pdrop", 0.0}, {"embd_pdrop", 0.0}, {"attn_pdrop", 0.0}});
  const char* heads_key = used_name(r, {"num_attention_heads", "n_head"});
  check_heads(r, m, used_name(r, {"hidden_size", "n_embd"}), heads_key, nullptr);
  if (!r.failed() && rotary && *rotary > m.hidden / m.heads)
    r.fail("rotary_dim", std::to_string(*rotary) + " exceeds the head dimension " + std::to_string(m.hidden / m.heads));
}

// OPTConfig: learned positions with 2 extra rows (OPTLearnedPositionalEmbedding's offset), word_embed_proj_dim
// embeddings with project_in/project_out when it differs from hidden_size (opt-350m), enable_bias on every linear.
void read_opt(ObjectReader& r, ModelSpec& m) {
  m.arch = Arch::opt;
  m.vocab = size_of(r, {"vocab_size"}, 50272, lim::vocab);
  m.hidden = size_of(r, {"hidden_size"}, 768, lim::hidden);
  m.layers = size_of(r, {"num_hidden_layers"}, 12, lim::layers);
  m.heads = m.kv_heads = size_of(r, {"num_attention_heads"}, 12, lim::heads);
  m.ffn_hidden = size_of(r, {"ffn_dim"}, 3072, lim::ffn_hidden);
  m.max_seq_len = size_of(r, {"max_position_embeddings"}, 2048, lim::max_seq_len);
  const int64_t proj = size_of(r, {"word_embed_proj_dim"}, m.hidden, lim::hidden);
  m.embed_proj_dim = proj == m.hidden ? 0 : proj;
  m.tied_embeddings = r.boolean({"tie_word_embeddings"}, true);  // PretrainedConfig's default
  r.opt_string({"activation_function"});
  layernorm_mlp(m);
  m.qkv_bias = m.attn_out_bias = m.mlp_bias = r.boolean({"enable_bias"}, true);
  m.position = Position::learned;
  m.position_offset = 2;
  m.dropout = any_dropout(r, {{"dropout", 0.1}, {"attention_dropout", 0.0}, {"activation_dropout", 0.0}});
  // Post-norm blocks drop the decoder's final_layer_norm (and move each norm after its sublayer); ModelSpec has no
  // field for a missing final norm, nor for norms without parameters, so these layouts are refused.
  if (!r.boolean({"do_layer_norm_before"}, true))
    refuse(r, "do_layer_norm_before", "false (post-norm blocks without the decoder's final_layer_norm, as opt-350m)");
  else if (r.boolean({"_remove_final_layer_norm"}, false))
    refuse(r, "_remove_final_layer_norm", "true (a decoder without final_layer_norm)");
  if (!r.boolean({"layer_norm_elementwise_affine"}, true))
    refuse(r, "layer_norm_elementwise_affine", "false (LayerNorms without weight and bias)");
  check_heads(r, m, "hidden_size", "num_attention_heads", nullptr);
}

// BloomConfig (attribute_map: num_hidden_layers → n_layer, num_attention_heads → n_head; n_embed popped over
// hidden_size): ALiBi, word_embeddings_layernorm, biases everywhere, a 4·hidden MLP whatever n_inner says.
void read_bloom(ObjectReader& r, ModelSpec& m) {
  m.arch = Arch::bloom;
  m.vocab = size_of(r, {"vocab_size"}, 250880, lim::vocab);
  m.hidden = size_of(r, {"n_embed", "hidden_size"}, 64, lim::hidden);
  m.layers = size_of(r, {"num_hidden_layers", "n_layer"}, 2, lim::layers);
  m.heads = m.kv_heads = size_of(r, {"num_attention_heads", "n_head"}, 8, lim::heads);
  m.ffn_hidden = 4 * m.hidden;
  // ALiBi has no position limit; BLOOM trained at 2048 tokens (some configs carry seq_length).
  m.max_seq_len = size_of(r, {"seq_length"}, 2048, lim::max_seq_len);
  m.tied_embeddings = r.boolean({"tie_word_embeddings"}, true);  // PretrainedConfig's default
  layernorm_mlp(m);
  m.qkv_bias = m.attn_out_bias = m.mlp_bias = true;
  m.position = Position::alibi;
  m.embedding_norm = true;
  m.dropout = any_dropout(r, {{"hidden_dropout", 0.0}, {"attention_dropout", 0.0}});
  check_heads(r, m, used_name(r, {"n_embed", "hidden_size"}), used_name(r, {"num_attention_heads", "n_head"}), nullptr);
}

}  // namespace

const std::vector<std::string>& dense_family_types() {
  static const std::vector<std::string> t = {"gemma",    "gemma2", "gemma3_text", "phi3", "qwen3",
                                             "gpt_neox", "falcon", "gptj",        "opt",  "bloom"};
  return t;
}

void read_dense_family(ObjectReader& r, ModelSpec& m, const std::string& type) {
  if (type == "gemma" || type == "gemma2" || type == "gemma3_text")
    read_gemma(r, m, type);
  else if (type == "phi3")
    read_phi3(r, m);
  else if (type == "qwen3")
    read_qwen3(r, m);
  else if (type == "gpt_neox")
    read_gpt_neox(r, m);
  else if (type == "falcon")
    read_falcon(r, m);
  else if (type == "gptj")
    read_gptj(r, m);
  else if (type == "opt")
    read_opt(r, m);
  else if (type == "bloom")
    read_bloom(r, m);
  else
    r.fail("model_type", "\"" + type + "\" has no dense-family reader");
}

}  // namespace zs::core
