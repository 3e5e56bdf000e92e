// HuggingFace config.json → ModelSpec, for the model types whose parameter layout model.cpp reproduces exactly.
#include <algorithm>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "core/json_reader.h"
#include "core/model.h"
#include "core/model_table.h"

namespace zs::core {
namespace {


std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// `_name_or_path` is a hub id ("meta-llama/Llama-2-7b-hf") or a local folder; its last component names the
// model. Without it, a checkpoint's config.json is named by its folder, any other file by its stem.
std::string model_name(ObjectReader& r, const std::string& path) {
  std::string n = r.string({"_name_or_path"}, "");
  while (!n.empty() && n.back() == '/') n.pop_back();
  if (auto slash = n.rfind('/'); slash != std::string::npos) n = n.substr(slash + 1);
  if (!n.empty()) return n;
  std::filesystem::path p(path);
  if (p.filename() == "config.json") {
    std::string parent = std::filesystem::absolute(p).parent_path().filename().string();
    if (!parent.empty()) return parent;
  }
  return p.stem().string();
}

void read_gpt2(ObjectReader& r, ModelSpec& m) {
  namespace lim = model_limits;
  m.arch = Arch::gpt;
  m.layers = r.req_integer("n_layer", 1, lim::layers);
  m.hidden = r.req_integer("n_embd", 1, lim::hidden);
  m.heads = r.req_integer("n_head", 1, lim::heads);
  m.kv_heads = m.heads;
  // GPT2Config writes n_inner: null for the default 4·n_embd.
  m.ffn_hidden = r.opt_integer({"n_inner"}, 1, lim::ffn_hidden).value_or(4 * m.hidden);
  m.vocab = r.req_integer("vocab_size", 1, lim::vocab);
  m.max_seq_len = r.req_integer("n_positions", 1, lim::max_seq_len);
  // Every pointwise activation in HF's ACT2FN that GPT2MLP can use has the same shapes and GEMMs: "gelu"
  // stands for all non-gated ones.
  r.choice({"activation_function"}, "gelu_new",
           {"gelu_new", "gelu", "gelu_fast", "gelu_pytorch_tanh", "quick_gelu", "relu", "silu", "swish", "tanh"});
  m.activation = Activation::gelu;
  m.tied_embeddings = r.boolean({"tie_word_embeddings"}, true);
  m.norm = Norm::layernorm;
  m.norm_bias = m.qkv_bias = m.mlp_bias = m.attn_out_bias = true;
  m.position = Position::learned;
  m.dropout = true;  // resid_pdrop, embd_pdrop, attn_pdrop 0.1 (GPT2Config defaults)
}

// LlamaConfig and its relatives; `type` picks the defaults each HF class hard-codes.
void read_llama_like(ObjectReader& r, ModelSpec& m, const std::string& type) {
  namespace lim = model_limits;
  m.arch = Arch::llama;
  m.layers = r.req_integer("num_hidden_layers", 1, lim::layers);
  m.hidden = r.req_integer("hidden_size", 1, lim::hidden);
  m.heads = r.req_integer("num_attention_heads", 1, lim::heads);
  m.kv_heads = r.opt_integer({"num_key_value_heads"}, 1, lim::heads).value_or(m.heads);
  m.head_dim = r.integer({"head_dim"}, 0, 1, lim::head_dim);
  m.ffn_hidden = r.req_integer("intermediate_size", 1, lim::ffn_hidden);
  m.vocab = r.req_integer("vocab_size", 1, lim::vocab);
  m.max_seq_len = r.req_integer("max_position_embeddings", 1, lim::max_seq_len);
  m.tied_embeddings = r.boolean({"tie_word_embeddings"}, false);
  // The MLP is gated whatever hidden_act says; only SiLU makes it SwiGLU, the one gated form we name.
  r.choice({"hidden_act"}, "silu", {"silu", "swish"});
  m.activation = Activation::swiglu;
  m.norm = Norm::rmsnorm;
  m.norm_bias = false;
  m.position = Position::rope;
  if (type == "llama") {
    // LlamaAttention puts attention_bias on q, k, v and o alike.
    m.qkv_bias = m.attn_out_bias = r.boolean({"attention_bias"}, false);
    m.mlp_bias = r.boolean({"mlp_bias"}, false);
  } else if (type == "qwen2") {
    m.qkv_bias = true;  // Qwen2Attention: q/k/v with bias, o_proj without, whatever the config says
  }
}

// validate_model names zerosim's keys; a person editing an HF file needs HF's.
Status in_hf_terms(Status s, const std::string& path, const std::string& type) {
  if (s.ok()) return s;
  static const std::vector<std::pair<std::string, std::string>> gpt2 = {
      {"heads", "n_head"}, {"hidden", "n_embd"}, {"layers", "n_layer"}, {"ffn_hidden", "n_inner"},
      {"vocab", "vocab_size"}, {"max_seq_len", "n_positions"}};
  static const std::vector<std::pair<std::string, std::string>> llama = {
      {"heads", "num_attention_heads"}, {"kv_heads", "num_key_value_heads"}, {"hidden", "hidden_size"},
      {"layers", "num_hidden_layers"}, {"ffn_hidden", "intermediate_size"}, {"vocab", "vocab_size"},
      {"max_seq_len", "max_position_embeddings"}};
  for (const auto& [ours, theirs] : type == "gpt2" ? gpt2 : llama) {
    const std::string prefix = path + ": " + ours + ": ";
    if (s.message().rfind(prefix, 0) == 0)
      return bad_input(path + ": " + theirs + ": " + s.message().substr(prefix.size()));
  }
  return s;
}

const std::vector<std::string> kLlamaLike = {"gpt2", "llama", "mistral", "qwen2"};

}  // namespace

const std::vector<std::string>& supported_hf_model_types() {
  static const std::vector<std::string> all = [] {
    std::vector<std::string> v = kLlamaLike;
    for (const auto& t : dense_family_types()) v.push_back(t);
    for (const auto& t : moe_family_types()) v.push_back(t);
    return v;
  }();
  return all;
}

Result<ModelSpec> import_hf_config(const std::string& path) {
  auto j = read_json_file(path);
  if (!j) return j.error();
  ObjectReader r(*j, path, "");
  // HF configs carry dozens of keys of their own (torch_dtype, rope_theta, ...): they are HF's to check,
  // so every key is known and only the ones read below are type- and range-checked.
  if (j->is_object())
    for (auto it = j->begin(); it != j->end(); ++it) r.accept({it.key().c_str()});
  std::string type = r.req_string("model_type");
  if (r.failed()) return r.finish();
  const auto& supported = supported_hf_model_types();
  if (std::find(supported.begin(), supported.end(), type) == supported.end())
    return bad_input(path + ": model_type: \"" + type + "\" is not supported; supported: " + join(supported));

  ModelSpec m;
  m.source = path;
  m.name = model_name(r, path);
  m.description = "imported from HuggingFace config.json (model_type " + type + ")";
  const auto is = [&type](const std::vector<std::string>& types) {
    return std::find(types.begin(), types.end(), type) != types.end();
  };
  if (type == "gpt2")
    read_gpt2(r, m);
  else if (is(kLlamaLike))
    read_llama_like(r, m, type);
  else if (is(moe_family_types()))
    read_moe_family(r, m, type);
  else
    read_dense_family(r, m, type);
  ZS_TRY(read_quantization_config(r, m.adapter.quant));
  ZS_TRY(r.finish());
  ZS_TRY(in_hf_terms(validate_model(m, path), path, type));
  if (m.head_dim == 0) m.head_dim = m.hidden / m.heads;
  return m;
}

}  // namespace zs::core
