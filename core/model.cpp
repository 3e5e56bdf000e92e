#include "core/model.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>
#include <utility>

#include "core/json_reader.h"
#include "core/model_table.h"
#include "core/paths.h"

namespace zs::core {
namespace {

int64_t head_dim_of(const ModelSpec& m) {
  if (m.head_dim > 0) return m.head_dim;
  return m.heads > 0 ? m.hidden / m.heads : 0;
}

// GPT-2 (GPT2LMHeadModel without the "transformer." prefix). Conv1D stores weights as [in, out].
void gpt_tensors(const ModelSpec& m, TableBuilder& b) {
  const int64_t h = m.hidden, q = m.heads * head_dim_of(m), kv = m.kv_heads * head_dim_of(m);
  const int64_t f = m.ffn_hidden;
  // SwiGLU on a GPT layout fuses gate and up into one c_fc, as GPT-2's c_attn fuses q, k and v.
  const int64_t fc = m.activation == Activation::swiglu ? 2 * f : f;
  b.add("wte", "weight", -1, {m.vocab, h}, false, ModuleRole::embedding);
  if (m.position == Position::learned) b.add("wpe", "weight", -1, {m.max_seq_len, h}, false, ModuleRole::positions);
  for (int64_t i = 0; i < m.layers; ++i) {
    const std::string p = "h." + std::to_string(i) + ".";
    b.norm(p + "ln_1", i);
    b.linear(p + "attn.c_attn", i, {h, q + 2 * kv}, m.qkv_bias, q + 2 * kv, ModuleRole::qkv);
    b.linear(p + "attn.c_proj", i, {q, h}, m.attn_out_bias, h, ModuleRole::attn_out);
    b.norm(p + "ln_2", i);
    b.linear(p + "mlp.c_fc", i, {h, fc}, m.mlp_bias, fc, ModuleRole::mlp_in);
    b.linear(p + "mlp.c_proj", i, {f, h}, m.mlp_bias, h, ModuleRole::mlp_out);
  }
  b.norm("ln_f", -1);
  b.add("lm_head", "weight", -1, {m.vocab, h}, true, ModuleRole::head, m.tied_embeddings);
}

// LlamaForCausalLM (also Mistral and Qwen2). nn.Linear stores weights as [out, in].
void llama_tensors(const ModelSpec& m, TableBuilder& b) {
  const int64_t h = m.hidden, q = m.heads * head_dim_of(m), kv = m.kv_heads * head_dim_of(m);
  const int64_t f = m.ffn_hidden;
  b.add("model.embed_tokens", "weight", -1, {m.vocab, h}, false, ModuleRole::embedding);
  if (m.position == Position::learned)
    b.add("model.embed_positions", "weight", -1, {m.max_seq_len, h}, false, ModuleRole::positions);
  for (int64_t i = 0; i < m.layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    b.norm(p + "input_layernorm", i);
    b.linear(p + "self_attn.q_proj", i, {q, h}, m.qkv_bias, q, ModuleRole::qkv);
    b.linear(p + "self_attn.k_proj", i, {kv, h}, m.qkv_bias, kv, ModuleRole::qkv);
    b.linear(p + "self_attn.v_proj", i, {kv, h}, m.qkv_bias, kv, ModuleRole::qkv);
    b.linear(p + "self_attn.o_proj", i, {h, q}, m.attn_out_bias, h, ModuleRole::attn_out);
    b.norm(p + "post_attention_layernorm", i);
    // HF runs down(act(gate(x)) * up(x)): gate before up.
    if (m.activation == Activation::swiglu) b.linear(p + "mlp.gate_proj", i, {f, h}, m.mlp_bias, f, ModuleRole::mlp_gate);
    b.linear(p + "mlp.up_proj", i, {f, h}, m.mlp_bias, f, ModuleRole::mlp_in);
    b.linear(p + "mlp.down_proj", i, {h, f}, m.mlp_bias, h, ModuleRole::mlp_out);
  }
  b.norm("model.norm", -1);
  b.add("lm_head", "weight", -1, {m.vocab, h}, true, ModuleRole::head, m.tied_embeddings);
}

Status fail_at(const std::string& file, const std::string& key, const std::string& what) {
  return bad_input(file + ": " + key + ": " + what);
}

Status check_range(const std::string& file, const char* key, int64_t v, int64_t max) {
  if (v < 1 || v > max)
    return fail_at(file, key,
                   std::to_string(v) + " is out of range: expected an integer in [1, " + std::to_string(max) + "]");
  return {};
}

}  // namespace

TensorInfo& TableBuilder::add(const std::string& module, const char* leaf, int64_t layer, std::vector<int64_t> shape,
                              bool matmul, ModuleRole role, bool tied) {
  TensorInfo t;
  t.name = module + "." + leaf;
  t.module = module;
  t.layer = layer;
  t.numel = 1;
  for (int64_t d : shape) t.numel *= d;
  t.params = t.numel;
  t.shape = std::move(shape);
  t.is_matmul = matmul;
  t.tied = tied;
  t.role = role;
  out_.push_back(std::move(t));
  return out_.back();
}

void TableBuilder::linear(const std::string& module, int64_t layer, std::vector<int64_t> shape, bool bias,
                          int64_t bias_len, ModuleRole role) {
  add(module, "weight", layer, std::move(shape), true, role);
  if (bias) add(module, "bias", layer, {bias_len}, false, role);
}

void TableBuilder::norm(const std::string& module, int64_t layer, int64_t width) {
  const int64_t w = width > 0 ? width : m_.hidden;
  add(module, "weight", layer, {w}, false, ModuleRole::norm);
  if (m_.norm_bias) add(module, "bias", layer, {w}, false, ModuleRole::norm);
}

std::vector<TensorInfo> tensor_table(const ModelSpec& m) {
  TableBuilder b(m);
  if (m.arch == Arch::gpt)
    gpt_tensors(m, b);
  else if (m.arch == Arch::llama)
    llama_tensors(m, b);
  else if (is_moe_family(m.arch))
    moe_family_tensors(m, b);
  else
    dense_family_tensors(m, b);
  std::vector<TensorInfo> t = b.take();
  apply_adapter(m, t);
  return t;
}

namespace {
std::vector<ModuleInfo> modules_of(const std::vector<TensorInfo>& tensors) {
  std::vector<ModuleInfo> out;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorInfo& t = tensors[i];
    if (out.empty() || out.back().name != t.module) out.push_back(ModuleInfo{t.module, t.layer, 0, {}, t.role});
    out.back().direct_params += t.numel;  // tied included: DeepSpeed sums module.parameters(recurse=False)
    out.back().tensors.push_back(i);
  }
  return out;
}

// What the tables depend on: every field but the name, description and source (a new ModelSpec field goes here).
std::string shape_key(const ModelSpec& m) {
  std::string k;
  auto put = [&k](auto v) { k += std::to_string(v) + ","; };
  auto put_list = [&k](const std::vector<std::string>& v) {
    for (const auto& x : v) k += x + ";";
    k += "|";
  };
  for (int64_t v : {m.layers, m.hidden, m.heads, m.kv_heads, m.head_dim, m.ffn_hidden, m.vocab, m.max_seq_len,
                    m.block_norms, m.position_offset, m.embed_proj_dim})
    put(v);
  for (int v : {static_cast<int>(m.arch), static_cast<int>(m.activation), static_cast<int>(m.norm),
                static_cast<int>(m.position)})
    put(v);
  for (bool v : {m.tied_embeddings, m.qkv_bias, m.mlp_bias, m.attn_out_bias, m.norm_bias, m.dropout,
                 m.parallel_residual, m.qk_norm, m.embedding_norm, m.head_bias})
    put(static_cast<int>(v));
  const MoeSpec& e = m.moe;
  for (int64_t v : {e.experts, e.top_k, e.expert_ffn, e.shared_experts, e.shared_ffn, e.first_dense_layers,
                    e.sparse_step, static_cast<int64_t>(e.shared_expert_gate), static_cast<int64_t>(e.router_bias)})
    put(v);
  for (int64_t v : e.dense_layers) put(v);
  const MlaSpec& a = m.mla;
  for (int64_t v : {a.q_lora_rank, a.kv_lora_rank, a.qk_nope_head_dim, a.qk_rope_head_dim, a.v_head_dim}) put(v);
  const AdapterSpec& ad = m.adapter;
  put(static_cast<int>(ad.kind));
  put(ad.lora.r);
  put(ad.lora.dropout);
  put(static_cast<int>(ad.lora.all_linear));
  put(static_cast<int>(ad.lora.use_dora));
  put_list(ad.lora.target_modules);
  put_list(ad.lora.modules_to_save);
  k += ad.lora.bias + "|" + ad.quant.storage + "|";
  put(static_cast<int>(ad.quant.kind));
  put(static_cast<int>(ad.quant.double_quant));
  put_list(ad.quant.skip_modules);
  return k;
}
struct Tables {
  std::shared_ptr<const std::vector<TensorInfo>> tensors;
  std::shared_ptr<const std::vector<ModuleInfo>> modules;
};
Tables tables_of(const ModelSpec& m) {
  static std::mutex mu;
  static std::map<std::string, Tables> cache;
  const std::string key = shape_key(m);
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  Tables t;
  auto tensors = std::make_shared<const std::vector<TensorInfo>>(tensor_table(m));
  t.modules = std::make_shared<const std::vector<ModuleInfo>>(modules_of(*tensors));
  t.tensors = std::move(tensors);
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() >= 64) cache.clear();  // a sweep over many shapes: start over rather than grow without bound
  return cache.emplace(key, t).first->second;
}
}  // namespace

std::vector<ModuleInfo> module_table(const ModelSpec& m) { return *tables_of(m).modules; }

namespace {
bool ends_with(const std::string& s, const char* suffix) {
  const std::string x(suffix);
  return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
}
}  // namespace

ModuleRole module_role(const ModuleInfo& mod) {
  if (mod.role != ModuleRole::none) return mod.role;
  const std::string& n = mod.name;
  if (n == "wte" || n == "model.embed_tokens") return ModuleRole::embedding;
  if (n == "wpe" || n == "model.embed_positions") return ModuleRole::positions;
  if (n == "lm_head") return ModuleRole::head;
  if (ends_with(n, "ln_1") || ends_with(n, "ln_2") || n == "ln_f" || ends_with(n, "layernorm") || n == "model.norm")
    return ModuleRole::norm;
  if (ends_with(n, "attn.c_attn") || ends_with(n, "q_proj") || ends_with(n, "k_proj") || ends_with(n, "v_proj"))
    return ModuleRole::qkv;
  if (ends_with(n, "attn.c_proj") || ends_with(n, "o_proj")) return ModuleRole::attn_out;
  if (ends_with(n, "mlp.c_fc") || ends_with(n, "up_proj")) return ModuleRole::mlp_in;
  if (ends_with(n, "gate_proj")) return ModuleRole::mlp_gate;
  if (ends_with(n, "mlp.c_proj") || ends_with(n, "down_proj")) return ModuleRole::mlp_out;
  return ModuleRole::none;
}

const char* to_string(ModuleRole r) {
  static constexpr const char* kNames[kModuleRoles] = {"none",     "embedding", "positions", "norm",    "qkv", "attn_out",
                                                       "mlp_in",   "mlp_gate",  "mlp_out",   "head",    "moe"};
  const auto i = static_cast<size_t>(r);
  return i < static_cast<size_t>(kModuleRoles) ? kNames[i] : "none";
}

ModuleRole module_role_from(const std::string& name) {
  for (int i = 1; i < kModuleRoles; ++i)
    if (name == to_string(static_cast<ModuleRole>(i))) return static_cast<ModuleRole>(i);
  return ModuleRole::none;
}
std::shared_ptr<const std::vector<TensorInfo>> shared_tensor_table(const ModelSpec& m) { return tables_of(m).tensors; }
std::shared_ptr<const std::vector<ModuleInfo>> shared_module_table(const ModelSpec& m) { return tables_of(m).modules; }

int64_t parameter_count(const ModelSpec& m) {
  int64_t n = 0;
  for (const auto& t : *shared_tensor_table(m))
    if (!t.tied) n += t.params;
  return n;
}

int64_t trainable_parameter_count(const ModelSpec& m) {
  int64_t n = 0;
  for (const auto& t : *shared_tensor_table(m))
    if (!t.tied && t.trainable) n += t.params;
  return n;
}

int64_t active_parameter_count(const ModelSpec& m) {
  double n = 0;
  for (const auto& t : *shared_tensor_table(m))
    if (!t.tied) n += static_cast<double>(t.params) * t.token_fraction;
  return static_cast<int64_t>(n + 0.5);
}

int64_t largest_layer_params(const ModelSpec& m) {
  int64_t best = 0;
  for (const auto& mod : *shared_module_table(m)) best = std::max(best, mod.direct_params);
  return best;
}

int64_t block_params(const ModelSpec& m) {
  int64_t n = 0;
  for (const auto& t : *shared_tensor_table(m))
    if (t.layer == 0) n += t.params;
  return n;
}

int64_t embedding_params(const ModelSpec& m) {
  int64_t n = 0;
  // Outside the blocks, the 2-D tensors are the embeddings and the head; the 1-D ones are the final norm.
  for (const auto& t : *shared_tensor_table(m))
    if (t.layer < 0 && t.shape.size() == 2 && !t.tied) n += t.params;
  return n;
}

FlopsPerToken flops_per_token(const ModelSpec& m, int64_t seq_len) {
  FlopsPerToken f;
  // A tied head still runs its GEMM: tied saves memory, not compute.
  for (const auto& t : *shared_tensor_table(m)) {
    if (!t.is_matmul) continue;
    const double flops = 2.0 * static_cast<double>(t.params) * t.token_fraction;
    f.forward_gemm += flops;
    if (!t.trainable) f.frozen_gemm += flops;
  }
  // QKᵀ over the query/key head dim, AV over the value head dim: both heads·head_dim, except under DeepSeek's MLA
  // (queries and keys of qk_nope + qk_rope, values of v_head_dim).
  const double qk_dim = m.mla.enabled() ? static_cast<double>(m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim)
                                        : static_cast<double>(head_dim_of(m));
  const double v_dim = m.mla.enabled() ? static_cast<double>(m.mla.v_head_dim) : static_cast<double>(head_dim_of(m));
  f.forward_attention = 2.0 * static_cast<double>(m.layers) * static_cast<double>(seq_len) *
                        static_cast<double>(m.heads) * (qk_dim + v_dim);
  return f;
}

Status validate_model(const ModelSpec& m, const std::string& file) {
  namespace lim = model_limits;
  if (m.name.empty()) return fail_at(file, "name", "must not be empty");
  ZS_TRY(check_range(file, "layers", m.layers, lim::layers));
  ZS_TRY(check_range(file, "hidden", m.hidden, lim::hidden));
  ZS_TRY(check_range(file, "heads", m.heads, lim::heads));
  ZS_TRY(check_range(file, "kv_heads", m.kv_heads, lim::heads));
  ZS_TRY(check_range(file, "ffn_hidden", m.ffn_hidden, lim::ffn_hidden));
  ZS_TRY(check_range(file, "vocab", m.vocab, lim::vocab));
  ZS_TRY(check_range(file, "max_seq_len", m.max_seq_len, lim::max_seq_len));
  if (m.head_dim != 0) {
    ZS_TRY(check_range(file, "head_dim", m.head_dim, lim::head_dim));
  } else if (m.hidden % m.heads != 0) {
    return fail_at(file, "heads",
                   std::to_string(m.heads) + " does not divide hidden " + std::to_string(m.hidden) +
                       "; give head_dim explicitly for heads narrower or wider than hidden / heads");
  }
  if (m.heads * head_dim_of(m) > lim::attn_width)
    return fail_at(file, "heads", "heads × head_dim = " + std::to_string(m.heads * head_dim_of(m)) + " exceeds " +
                                      std::to_string(lim::attn_width));
  if (m.kv_heads > m.heads || m.heads % m.kv_heads != 0)
    return fail_at(file, "kv_heads",
                   std::to_string(m.kv_heads) + " does not divide heads " + std::to_string(m.heads) +
                       " (grouped-query attention shares each KV head among heads / kv_heads query heads)");
  if (m.norm == Norm::rmsnorm && m.norm_bias)
    return fail_at(file, "norm_bias", "true is not allowed with norm \"rmsnorm\" (RMSNorm has no bias)");
  return {};
}

int64_t default_seq_len(const ModelSpec& m) { return std::min(m.max_seq_len, kDefaultSeqLenCap); }

Result<ModelSpec> load_model_file(const std::string& path) {
  namespace lim = model_limits;
  auto j = read_json_file(path);
  if (!j) return j.error();
  ObjectReader r(*j, path, "");
  ModelSpec m;
  m.source = path;
  m.name = r.req_string("name");
  m.arch = r.req_choice("arch", {"gpt", "llama"}) == "llama" ? Arch::llama : Arch::gpt;
  m.layers = r.req_integer("layers", 1, lim::layers);
  m.hidden = r.req_integer("hidden", 1, lim::hidden);
  m.heads = r.req_integer("heads", 1, lim::heads);
  m.kv_heads = r.req_integer("kv_heads", 1, lim::heads);
  m.head_dim = r.integer({"head_dim"}, 0, 1, lim::head_dim);
  m.ffn_hidden = r.req_integer("ffn_hidden", 1, lim::ffn_hidden);
  m.vocab = r.req_integer("vocab", 1, lim::vocab);
  m.max_seq_len = r.req_integer("max_seq_len", 1, lim::max_seq_len);
  m.tied_embeddings = r.req_boolean("tied_embeddings");
  m.activation = r.req_choice("activation", {"gelu", "swiglu"}) == "swiglu" ? Activation::swiglu : Activation::gelu;
  m.norm = r.req_choice("norm", {"layernorm", "rmsnorm"}) == "rmsnorm" ? Norm::rmsnorm : Norm::layernorm;
  m.qkv_bias = r.req_boolean("qkv_bias");
  m.position = r.req_choice("position", {"learned", "rope"}) == "rope" ? Position::rope : Position::learned;
  // The optional biases default to each architecture's reference layout (GPT-2: all biases; LLaMA: none).
  m.mlp_bias = r.boolean({"mlp_bias"}, m.arch == Arch::gpt);
  m.attn_out_bias = r.boolean({"attn_out_bias"}, m.arch == Arch::gpt);
  m.norm_bias = r.boolean({"norm_bias"}, m.norm == Norm::layernorm);
  m.dropout = r.boolean({"dropout"}, m.arch == Arch::gpt);  // GPT-2's 0.1; the LLaMA family trains without
  m.description = r.string({"description"}, "");
  ZS_TRY(r.finish());
  ZS_TRY(validate_model(m, path));
  if (m.head_dim == 0) m.head_dim = m.hidden / m.heads;
  return m;
}

Result<ModelSpec> load_model_any(const std::string& path) {
  auto j = read_json_file(path);
  if (!j) return j.error();
  if (j->is_object() && j->contains("model_type")) return import_hf_config(path);
  return load_model_file(path);
}

Result<ModelSpec> load_model(const std::string& name_or_path) {
  auto p = resolve_input(name_or_path, InputKind::model);
  if (!p) return p.error();
  return load_model_any(*p);
}

std::string model_to_json(const ModelSpec& m) {
  nlohmann::ordered_json j;
  j["name"] = m.name;
  if (!m.description.empty()) j["description"] = m.description;
  j["arch"] = to_string(m.arch);
  j["layers"] = m.layers;
  j["hidden"] = m.hidden;
  j["heads"] = m.heads;
  j["kv_heads"] = m.kv_heads;
  j["head_dim"] = head_dim_of(m);
  j["ffn_hidden"] = m.ffn_hidden;
  j["vocab"] = m.vocab;
  j["max_seq_len"] = m.max_seq_len;
  j["tied_embeddings"] = m.tied_embeddings;
  j["activation"] = to_string(m.activation);
  j["norm"] = to_string(m.norm);
  j["position"] = to_string(m.position);
  j["qkv_bias"] = m.qkv_bias;
  j["mlp_bias"] = m.mlp_bias;
  j["attn_out_bias"] = m.attn_out_bias;
  j["norm_bias"] = m.norm_bias;
  j["dropout"] = m.dropout;
  return j.dump(2) + "\n";
}

std::string to_string(Arch a) {
  switch (a) {
    case Arch::gpt: return "gpt";
    case Arch::llama: return "llama";
    case Arch::gemma: return "gemma";
    case Arch::gemma2: return "gemma2";
    case Arch::gemma3: return "gemma3_text";
    case Arch::phi3: return "phi3";
    case Arch::qwen3: return "qwen3";
    case Arch::gpt_neox: return "gpt_neox";
    case Arch::falcon: return "falcon";
    case Arch::gptj: return "gptj";
    case Arch::opt: return "opt";
    case Arch::bloom: return "bloom";
    case Arch::mixtral: return "mixtral";
    case Arch::qwen2_moe: return "qwen2_moe";
    case Arch::qwen3_moe: return "qwen3_moe";
    case Arch::deepseek_v2: return "deepseek_v2";
    case Arch::deepseek_v3: return "deepseek_v3";
  }
  return "?";
}

std::string engine_refusal(const ModelSpec& m) {
  if (m.arch != Arch::gpt && m.arch != Arch::llama)
    return "the engine trains the gpt and llama layouts (GPT-2, LLaMA, Mistral, Qwen2); " + to_string(m.arch) +
           " is modelled by fit and simulate only";
  if (m.adapter.lora_enabled() || m.adapter.quant.enabled())
    return "the engine trains full fine-tunes only; a LoRA or quantised model is modelled by fit and simulate only";
  return "";
}
std::string to_string(Activation a) { return a == Activation::swiglu ? "swiglu" : "gelu"; }
std::string to_string(Norm n) { return n == Norm::rmsnorm ? "rmsnorm" : "layernorm"; }
std::string to_string(Position p) { return p == Position::rope ? "rope" : p == Position::alibi ? "alibi" : "learned"; }

}  // namespace zs::core
