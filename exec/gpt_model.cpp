// GptModel (gpt_model.h): module roles from the module table, arena layouts, one module's forward and backward
// on the reference kernels, GPT-2 initialisation, and the plain whole-model reference.
#include "exec/gpt_model.h"

#include "exec/gpt_model_run.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace zs::exec {
namespace {

using core::Result;

bool ends_with(const std::string& s, const std::string& x) {
  return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
}

Result<ModuleRole> role_of(const std::string& n) {
  if (n == "wte" || n == "model.embed_tokens") return ModuleRole::tok_embedding;
  if (n == "wpe" || n == "model.embed_positions") return ModuleRole::pos_embedding;
  if (n == "ln_f" || n == "model.norm") return ModuleRole::final_norm;
  if (n == "lm_head") return ModuleRole::lm_head;
  if (ends_with(n, ".ln_1") || ends_with(n, ".input_layernorm")) return ModuleRole::norm1;
  if (ends_with(n, ".ln_2") || ends_with(n, ".post_attention_layernorm")) return ModuleRole::norm2;
  if (ends_with(n, ".attn.c_attn")) return ModuleRole::qkv;
  if (ends_with(n, ".q_proj")) return ModuleRole::q;
  if (ends_with(n, ".k_proj")) return ModuleRole::k;
  if (ends_with(n, ".v_proj")) return ModuleRole::v;
  if (ends_with(n, ".attn.c_proj") || ends_with(n, ".o_proj")) return ModuleRole::attn_out;
  if (ends_with(n, ".mlp.c_fc") || ends_with(n, ".up_proj")) return ModuleRole::mlp_in;
  if (ends_with(n, ".gate_proj")) return ModuleRole::mlp_gate;
  if (ends_with(n, ".mlp.c_proj") || ends_with(n, ".down_proj")) return ModuleRole::mlp_out;
  return core::Error{core::ErrorKind::unsupported, "engine: module '" + n + "' has no kernel (unknown role)"};
}

// splitmix64: a counter-based generator, so a value depends only on (seed, parameter, element).
uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

float normal(uint64_t seed, uint64_t p, uint64_t i) {
  const uint64_t r = mix(mix(seed ^ (p * 0x632be59bd9b4e019ull)) ^ i);
  const double u1 = (static_cast<double>(r >> 40) + 1.0) / 16777217.0;  // (0, 1]
  const double u2 = static_cast<double>((r >> 16) & 0xffffff) / 16777216.0;
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
}

}  // namespace

Result<GptModel> GptModel::create(const core::ModelSpec& m, DType dtype, int64_t micro_batch, int64_t seq_len) {
  if (micro_batch < 1 || seq_len < 1)
    return core::bad_input("engine: micro batch " + std::to_string(micro_batch) + " and seq len " +
                           std::to_string(seq_len) + " must be positive");
  if (seq_len > m.max_seq_len)
    return core::bad_input("engine: seq len " + std::to_string(seq_len) + " exceeds the model's max_seq_len " +
                           std::to_string(m.max_seq_len));
  GptModel g;
  g.m_ = m;
  g.dtype_ = dtype;
  g.B_ = micro_batch;
  g.T_ = seq_len;
  g.C_ = m.hidden;
  g.NH_ = m.heads;
  g.NKV_ = m.kv_heads;
  g.HD_ = m.head_dim > 0 ? m.head_dim : m.hidden / m.heads;
  g.F_ = m.ffn_hidden;
  g.V_ = m.vocab;
  g.fused_qkv_ = m.arch == core::Arch::gpt;
  const bool swiglu = m.activation == core::Activation::swiglu;
  g.FC_ = swiglu ? 2 * g.F_ : g.F_;
  if (m.position == core::Position::rope && g.HD_ % 2 != 0)
    return core::bad_input("engine: rotary positions need an even head_dim, got " + std::to_string(g.HD_));

  const auto tensors = core::tensor_table(m);
  std::vector<int32_t> t2p(tensors.size(), 0);
  for (size_t t = 0; t < tensors.size(); ++t) {
    if (tensors[t].tied) {
      t2p[t] = t2p[0];
      continue;
    }
    t2p[t] = static_cast<int32_t>(g.params_.size());
    g.params_.push_back({tensors[t].name, static_cast<int32_t>(tensors[t].layer), tensors[t].shape, tensors[t].numel});
  }
  for (const auto& mod : core::module_table(m)) {
    auto role = role_of(mod.name);
    if (!role) return role.error();
    ModuleInfo mi;
    mi.name = mod.name;
    mi.role = *role;
    mi.layer = static_cast<int32_t>(mod.layer);
    for (size_t t : mod.tensors) mi.params.push_back(t2p[t]);
    g.modules_.push_back(std::move(mi));
  }
  return g;
}

int64_t GptModel::parameter_count() const {
  int64_t n = 0;
  for (const auto& p : params_) n += p.numel;
  return n;
}

int64_t GptModel::layer_bytes() const {
  const int64_t N = tokens(), e = dtype_bytes(dtype_);
  const int64_t q = NH_ * HD_, kv = NKV_ * HD_;
  return 4 * B_ * NH_ * T_ + e * N * (4 * C_ + (q + 2 * kv) + q + FC_ + F_);
}

int64_t GptModel::checkpoint_bytes() const { return dtype_bytes(dtype_) * tokens() * C_; }

int64_t GptModel::head_bytes() const {
  const int64_t N = tokens(), e = dtype_bytes(dtype_);
  return 4 * N * V_ + 4 * N + e * N * (2 * C_ + V_);
}

int64_t GptModel::residual_grad_bytes() const { return dtype_bytes(dtype_) * tokens() * C_; }

bool GptModel::parks_in_arena() const { return F_ >= C_ && NH_ * HD_ >= C_; }

LayerActs GptModel::layer_view(void* arena) const {
  const int64_t N = tokens(), e = dtype_bytes(dtype_);
  const int64_t q = NH_ * HD_, kv = NKV_ * HD_;
  auto* p = static_cast<unsigned char*>(arena);
  LayerActs a;
  a.lse = reinterpret_cast<float*>(p);  // fp32 first: the arena base is aligned
  p += 4 * B_ * NH_ * T_;
  auto take = [&](int64_t width) {
    void* r = p;
    p += e * N * width;
    return r;
  };
  a.x = take(C_);
  a.ln1 = take(C_);
  a.qkv = take(q + 2 * kv);
  a.att = take(q);
  a.x2 = take(C_);
  a.ln2 = take(C_);
  a.fc = take(FC_);
  a.act = take(F_);
  return a;
}

HeadActs GptModel::head_view(void* arena) const {
  const int64_t N = tokens(), e = dtype_bytes(dtype_);
  auto* p = static_cast<unsigned char*>(arena);
  HeadActs h;
  h.probs = reinterpret_cast<float*>(p);
  p += 4 * N * V_;
  h.losses = reinterpret_cast<float*>(p);
  p += 4 * N;
  h.xf = p;
  p += e * N * C_;
  h.xfn = p;
  p += e * N * C_;
  h.logits = p;
  return h;
}

namespace {

}  // namespace

void GptModel::forward(size_t module, Call& c) const {
  RefKernels k;
  run_module(*this, module, c, false, k);
}

void GptModel::backward(size_t module, Call& c) const {
  RefKernels k;
  run_module(*this, module, c, true, k);
}

void GptModel::init_param(size_t p, void* out, uint64_t seed) const {
  init_param(p, out, seed, 0, params_[p].numel);
}

void GptModel::init_param(size_t p, void* out, uint64_t seed, int64_t begin, int64_t end) const {
  const ParamInfo& pi = params_[p];
  const bool is_bias = ends_with(pi.name, ".bias");
  ModuleRole role = ModuleRole::qkv;
  for (const auto& m : modules_)
    if (std::find(m.params.begin(), m.params.end(), static_cast<int32_t>(p)) != m.params.end()) {
      role = m.role;
      break;
    }
  const bool norm = role == ModuleRole::norm1 || role == ModuleRole::norm2 || role == ModuleRole::final_norm;
  const bool out_proj = role == ModuleRole::attn_out || role == ModuleRole::mlp_out;
  const float std = out_proj ? 0.02f / std::sqrt(2.0f * static_cast<float>(m_.layers)) : 0.02f;
  dispatch(dtype_, [&](auto tag) {
    using T = decltype(tag);
    T* o = static_cast<T*>(out);
    for (int64_t i = std::max<int64_t>(0, begin); i < std::min(end, pi.numel); ++i) {
      float v = 0.0f;
      if (norm)
        v = is_bias ? 0.0f : 1.0f;
      else if (!is_bias)
        v = std * normal(seed, p, static_cast<uint64_t>(i));
      o[i] = from_f32<T>(v);
    }
  });
}

double forward_backward(const GptModel& model, const std::vector<const void*>& params, const std::vector<void*>& grads,
                        GradWrite first, const int32_t* tokens, const int32_t* targets, float dloss) {
  const int64_t L = model.spec().layers;
  auto arena = [](int64_t bytes) { return std::vector<uint64_t>(static_cast<size_t>((bytes + 7) / 8)); };
  std::vector<std::vector<uint64_t>> layers;
  for (int64_t l = 0; l < L; ++l) layers.push_back(arena(model.layer_bytes()));
  auto head_mem = arena(model.head_bytes());
  std::vector<uint64_t> dres[2] = {arena(model.residual_grad_bytes()), arena(model.residual_grad_bytes())};
  const HeadActs head = model.head_view(head_mem.data());
  auto x_of = [&](int64_t l) { return l < L ? model.layer_view(layers[static_cast<size_t>(l)].data()).x : head.xf; };
  const auto& mods = model.modules();
  std::vector<char> seen(model.params().size(), 0);

  GptModel::Call c;
  c.tokens = tokens;
  c.targets = targets;
  c.dloss = dloss;
  c.head = head;
  auto bind = [&](size_t i, bool bwd) {
    const ModuleInfo& mod = mods[i];
    c.params.clear();
    c.grads.clear();
    c.grad_write.clear();
    for (int32_t p : mod.params) {
      c.params.push_back(params[static_cast<size_t>(p)]);
      if (bwd) {
        c.grads.push_back(grads[static_cast<size_t>(p)]);
        c.grad_write.push_back(seen[static_cast<size_t>(p)] ? GradWrite::accumulate : first);
        seen[static_cast<size_t>(p)] = 1;
      }
    }
    const int64_t l = mod.layer;
    c.layer = l >= 0 ? model.layer_view(layers[static_cast<size_t>(l)].data()) : LayerActs{};
    c.x_out = nullptr;
    if (mod.role == ModuleRole::tok_embedding || mod.role == ModuleRole::pos_embedding) c.x_out = x_of(0);
    if (mod.role == ModuleRole::mlp_out) c.x_out = x_of(l + 1);
    // Residual-gradient ping-pong: the head writes buffer 0, block l reads (L-1-l)%2 and writes (L-l)%2.
    const int64_t blk = l >= 0 ? l : (mod.role == ModuleRole::final_norm || mod.role == ModuleRole::lm_head ? L : -1);
    c.dres_in = blk >= 0 ? dres[(L - 1 - blk + 2) % 2].data() : dres[L % 2].data();
    c.dres_out = blk >= 0 ? dres[(L - blk) % 2].data() : nullptr;
  };
  for (size_t i = 0; i < mods.size(); ++i) {
    bind(i, false);
    model.forward(i, c);
  }
  const double loss = c.loss_sum / static_cast<double>(model.tokens());
  if (!grads.empty())
    for (size_t i = mods.size(); i-- > 0;) {
      bind(i, true);
      model.backward(i, c);
    }
  return loss;
}

}  // namespace zs::exec
