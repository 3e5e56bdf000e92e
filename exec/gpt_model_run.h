// One DeepSpeed sub-module's forward or backward (GptModel::forward / backward) written once over a kernel set K:
// RefKernels below (the CPU references of kernels_ref.h, in the calling thread) or the CUDA kernels and cuBLASLt
// GEMMs on a stream (exec/cuda/cuda_kernels.cpp). K has one member per kernel of kernels_ref.h with the same
// arguments, and losses(): the lm_head's token losses into Call::loss_sum (RefKernels) or Call::host_losses.
// Internal to exec/: gpt_model.cpp and the device kernel sets include it.
//   RefKernels k;
//   run_module(model, module, call, /*backward=*/false, k);
#pragma once

#include <cstring>

#include "exec/gpt_model.h"
#include "exec/kernels_ref.h"

namespace zs::exec {

constexpr float kNormEps = 1e-5f;
constexpr float kRopeTheta = 10000.0f;

// The CPU reference kernels as a kernel set.
struct RefKernels {
  template <class T>
  void embedding_forward(T* out, const int32_t* tokens, const T* table, int64_t N, int64_t C) {
    exec::embedding_forward(out, tokens, table, N, C);
  }
  template <class T>
  void embedding_backward(T* dtable, const T* dout, const int32_t* tokens, int64_t N, int64_t C, int64_t V,
                          GradWrite w) {
    exec::embedding_backward(dtable, dout, tokens, N, C, V, w);
  }
  template <class T>
  void position_forward(T* out, const T* wpe, int64_t B, int64_t T_, int64_t C) {
    exec::position_forward(out, wpe, B, T_, C);
  }
  template <class T>
  void position_backward(T* dwpe, const T* dout, int64_t B, int64_t T_, int64_t C, int64_t maxT, GradWrite w) {
    exec::position_backward(dwpe, dout, B, T_, C, maxT, w);
  }
  template <class T>
  void layernorm_forward(T* out, const T* inp, const T* w, const T* b, int64_t N, int64_t C, float eps) {
    exec::layernorm_forward(out, inp, w, b, N, C, eps);
  }
  template <class T>
  void layernorm_backward(T* dinp, T* dw, T* db, const T* dout, const T* inp, const T* w, const T* dres, int64_t N,
                          int64_t C, float eps, GradWrite gw) {
    exec::layernorm_backward(dinp, dw, db, dout, inp, w, dres, N, C, eps, gw);
  }
  template <class T>
  void rmsnorm_forward(T* out, const T* inp, const T* w, int64_t N, int64_t C, float eps) {
    exec::rmsnorm_forward(out, inp, w, N, C, eps);
  }
  template <class T>
  void rmsnorm_backward(T* dinp, T* dw, const T* dout, const T* inp, const T* w, const T* dres, int64_t N, int64_t C,
                        float eps, GradWrite gw) {
    exec::rmsnorm_backward(dinp, dw, dout, inp, w, dres, N, C, eps, gw);
  }
  template <class T>
  void matmul_forward(T* out, const T* inp, const T* w, const T* bias, int64_t N, int64_t IN, int64_t OUT,
                      WeightLayout layout) {
    exec::matmul_forward(out, inp, w, bias, N, IN, OUT, layout);
  }
  template <class T>
  void matmul_backward(T* dinp, T* dw, T* db, const T* dout, const T* inp, const T* w, int64_t N, int64_t IN,
                       int64_t OUT, WeightLayout layout, GradWrite gw, bool accumulate_dinp = false) {
    exec::matmul_backward(dinp, dw, db, dout, inp, w, N, IN, OUT, layout, gw, accumulate_dinp);
  }
  template <class T>
  void rope_forward(T* q, T* k, int64_t ld_q, int64_t ld_kv, int64_t B, int64_t T_, int64_t NH, int64_t NKV,
                    int64_t HD, float theta) {
    exec::rope_forward(q, k, ld_q, ld_kv, B, T_, NH, NKV, HD, theta);
  }
  template <class T>
  void rope_backward(T* dq, T* dk, int64_t ld_q, int64_t ld_kv, int64_t B, int64_t T_, int64_t NH, int64_t NKV,
                     int64_t HD, float theta) {
    exec::rope_backward(dq, dk, ld_q, ld_kv, B, T_, NH, NKV, HD, theta);
  }
  template <class T>
  void attention_forward(T* out, float* lse, const T* q, const T* k, const T* v, int64_t ld_q, int64_t ld_kv,
                         int64_t B, int64_t T_, int64_t NH, int64_t NKV, int64_t HD) {
    exec::attention_forward(out, lse, q, k, v, ld_q, ld_kv, B, T_, NH, NKV, HD);
  }
  template <class T>
  void attention_backward(T* dq, T* dk, T* dv, const T* dout, const T* q, const T* k, const T* v, const float* lse,
                          int64_t ld_q, int64_t ld_kv, int64_t B, int64_t T_, int64_t NH, int64_t NKV, int64_t HD) {
    exec::attention_backward(dq, dk, dv, dout, q, k, v, lse, ld_q, ld_kv, B, T_, NH, NKV, HD);
  }
  template <class T>
  void gelu_forward(T* out, const T* inp, int64_t n) {
    exec::gelu_forward(out, inp, n);
  }
  template <class T>
  void gelu_backward(T* dinp, const T* inp, const T* dout, int64_t n) {
    exec::gelu_backward(dinp, inp, dout, n);
  }
  template <class T>
  void swiglu_forward(T* out, const T* gate, const T* up, int64_t N, int64_t F, int64_t stride) {
    exec::swiglu_forward(out, gate, up, N, F, stride);
  }
  template <class T>
  void swiglu_backward(T* dgate, T* dup, const T* dout, const T* gate, const T* up, int64_t N, int64_t F,
                       int64_t stride) {
    exec::swiglu_backward(dgate, dup, dout, gate, up, N, F, stride);
  }
  template <class T>
  void residual_forward(T* out, const T* a, const T* b, int64_t n) {
    exec::residual_forward(out, a, b, n);
  }
  template <class T>
  void crossentropy_forward(float* losses, float* probs, const T* logits, const int32_t* targets, int64_t N,
                            int64_t V) {
    exec::crossentropy_forward(losses, probs, logits, targets, N, V);
  }
  template <class T>
  void crossentropy_backward(T* dlogits, const float* probs, const int32_t* targets, int64_t N, int64_t V,
                             float dloss) {
    exec::crossentropy_backward(dlogits, probs, targets, N, V, dloss);
  }
  // Σ token losses in double, token order; a copy for the caller when it asks.
  void losses(const float* l, int64_t N, GptModel::Call& c) {
    double s = 0;
    for (int64_t n = 0; n < N; ++n) s += l[n];
    c.loss_sum += s;
    if (c.host_losses) std::memcpy(c.host_losses, l, static_cast<size_t>(N) * sizeof(float));
  }
};

// Typed view of one call, so the role switch below reads like the math.
template <class T, class K>
struct ModuleRun {
  const GptModel& g;
  GptModel::Call& c;
  const ModuleInfo& mod;
  K& k;
  int64_t B, T_, N, C, NH, NKV, HD, F, FC, V, q, kv;
  bool fused, swiglu, rope, layernorm, gpt;
  WeightLayout layout;

  ModuleRun(const GptModel& model, GptModel::Call& call, const ModuleInfo& m, K& kernels)
      : g(model), c(call), mod(m), k(kernels) {
    const auto& s = g.spec();
    B = g.micro_batch();
    T_ = g.seq_len();
    N = B * T_;
    C = s.hidden;
    NH = s.heads;
    NKV = s.kv_heads;
    HD = s.head_dim > 0 ? s.head_dim : s.hidden / s.heads;
    F = s.ffn_hidden;
    swiglu = s.activation == core::Activation::swiglu;
    FC = swiglu ? 2 * F : F;
    V = s.vocab;
    q = NH * HD;
    kv = NKV * HD;
    gpt = s.arch == core::Arch::gpt;
    fused = gpt;
    rope = s.position == core::Position::rope;
    layernorm = s.norm == core::Norm::layernorm;
    layout = gpt ? WeightLayout::in_out : WeightLayout::out_in;
  }

  const T* P(size_t i) const { return i < c.params.size() ? static_cast<const T*>(c.params[i]) : nullptr; }
  T* G(size_t i) const { return i < c.grads.size() ? static_cast<T*>(c.grads[i]) : nullptr; }
  GradWrite W(size_t i) const { return i < c.grad_write.size() ? c.grad_write[i] : GradWrite::overwrite; }
  const T* bias() const { return mod.params.size() > 1 ? P(1) : nullptr; }
  T* dbias() const { return mod.params.size() > 1 ? G(1) : nullptr; }
  static T* t(void* p) { return static_cast<T*>(p); }

  T* qp() const { return t(c.layer.qkv); }
  T* kp() const { return fused ? qp() + q : qp() + N * q; }
  T* vp() const { return fused ? qp() + q + kv : kp() + N * kv; }
  int64_t ldq() const { return fused ? q + 2 * kv : q; }
  int64_t ldkv() const { return fused ? q + 2 * kv : kv; }
  // MLP pre-activations: gate and up (SwiGLU) or the single input (GELU).
  T* gate() const { return t(c.layer.fc); }
  T* up() const { return swiglu ? (gpt ? gate() + F : gate() + N * F) : t(c.layer.fc); }
  int64_t mlp_stride() const { return swiglu && gpt ? 2 * F : F; }

  void norm_fwd(T* out, const T* in) const {
    if (layernorm)
      k.layernorm_forward(out, in, P(0), bias(), N, C, kNormEps);
    else
      k.rmsnorm_forward(out, in, P(0), N, C, kNormEps);
  }
  void norm_bwd(T* dinp, const T* dout, const T* inp, const T* dres) const {
    if (layernorm)
      k.layernorm_backward(dinp, G(0), dbias(), dout, inp, P(0), dres, N, C, kNormEps, W(0));
    else
      k.rmsnorm_backward(dinp, G(0), dout, inp, P(0), dres, N, C, kNormEps, W(0));
  }
  void activation_fwd() const {
    if (swiglu)
      k.swiglu_forward(t(c.layer.act), gate(), up(), N, F, mlp_stride());
    else
      k.gelu_forward(t(c.layer.act), up(), N * F);
  }
  // Where a projection parks the gradient of its input until the norm's backward takes it: a slot of the block's
  // arena that is dead by then (the activation for the MLP input, the attention output for the QKV input), so
  // dres_out is free to alias dres_in (the engine keeps both inside the arenas); dres_out when the slot is narrow.
  T* park_mlp() const { return F >= C ? t(c.layer.act) : t(c.dres_out); }
  T* park_attn() const { return q >= C ? t(c.layer.att) : t(c.dres_out); }
  void activation_bwd() const {
    if (swiglu)
      k.swiglu_backward(gate(), up(), t(c.layer.act), gate(), up(), N, F, mlp_stride());
    else
      k.gelu_backward(up(), up(), t(c.layer.act), N * F);
  }

  void forward() {
    auto& L = c.layer;
    switch (mod.role) {
      case ModuleRole::tok_embedding:
        k.embedding_forward(t(c.x_out), c.tokens, P(0), N, C);
        break;
      case ModuleRole::pos_embedding:
        k.position_forward(t(c.x_out), P(0), B, T_, C);
        break;
      case ModuleRole::norm1:
        norm_fwd(t(L.ln1), t(L.x));
        break;
      case ModuleRole::norm2:
        norm_fwd(t(L.ln2), t(L.x2));
        break;
      case ModuleRole::final_norm:
        norm_fwd(t(c.head.xfn), t(c.head.xf));
        break;
      case ModuleRole::qkv:
        k.matmul_forward(qp(), t(L.ln1), P(0), bias(), N, C, q + 2 * kv, layout);
        break;
      case ModuleRole::q:
        k.matmul_forward(qp(), t(L.ln1), P(0), bias(), N, C, q, layout);
        break;
      case ModuleRole::k:
        k.matmul_forward(kp(), t(L.ln1), P(0), bias(), N, C, kv, layout);
        break;
      case ModuleRole::v:
        k.matmul_forward(vp(), t(L.ln1), P(0), bias(), N, C, kv, layout);
        break;
      case ModuleRole::attn_out:
        if (rope) k.rope_forward(qp(), kp(), ldq(), ldkv(), B, T_, NH, NKV, HD, kRopeTheta);
        k.attention_forward(t(L.att), L.lse, qp(), kp(), vp(), ldq(), ldkv(), B, T_, NH, NKV, HD);
        k.matmul_forward(t(L.x2), t(L.att), P(0), bias(), N, q, C, layout);
        k.residual_forward(t(L.x2), t(L.x), t(L.x2), N * C);
        break;
      case ModuleRole::mlp_gate:
        k.matmul_forward(gate(), t(L.ln2), P(0), bias(), N, C, F, layout);
        break;
      case ModuleRole::mlp_in:
        if (fused)
          k.matmul_forward(t(L.fc), t(L.ln2), P(0), bias(), N, C, FC, layout);
        else
          k.matmul_forward(up(), t(L.ln2), P(0), bias(), N, C, F, layout);
        activation_fwd();
        break;
      case ModuleRole::mlp_out:
        if (!c.x_out) break;  // a recompute needs no block output
        k.matmul_forward(t(c.x_out), t(L.act), P(0), bias(), N, F, C, layout);
        k.residual_forward(t(c.x_out), t(L.x2), t(c.x_out), N * C);
        break;
      case ModuleRole::lm_head: {
        auto& H = c.head;
        k.template matmul_forward<T>(t(H.logits), t(H.xfn), P(0), nullptr, N, C, V, WeightLayout::out_in);
        k.crossentropy_forward(H.losses, H.probs, t(H.logits), c.targets, N, V);
        k.losses(H.losses, N, c);
        break;
      }
    }
  }

  void backward() {
    auto& L = c.layer;
    switch (mod.role) {
      case ModuleRole::lm_head: {
        auto& H = c.head;
        k.crossentropy_backward(t(H.logits), H.probs, c.targets, N, V, c.dloss);
        k.template matmul_backward<T>(t(H.xfn), G(0), nullptr, t(H.logits), t(H.xfn), P(0), N, C, V, WeightLayout::out_in, W(0));
        break;
      }
      case ModuleRole::final_norm:
        norm_bwd(t(c.dres_out), t(c.head.xfn), t(c.head.xf), nullptr);
        break;
      case ModuleRole::mlp_out:
        k.matmul_backward(t(L.act), G(0), dbias(), t(c.dres_in), t(L.act), P(0), N, F, C, layout, W(0));
        break;
      case ModuleRole::mlp_in:
        activation_bwd();
        if (fused)
          k.matmul_backward(park_mlp(), G(0), dbias(), t(L.fc), t(L.ln2), P(0), N, C, FC, layout, W(0));
        else
          k.matmul_backward(park_mlp(), G(0), dbias(), up(), t(L.ln2), P(0), N, C, F, layout, W(0));
        break;
      case ModuleRole::mlp_gate:  // after up_proj in backward: adds its share of the input gradient
        k.matmul_backward(park_mlp(), G(0), dbias(), gate(), t(L.ln2), P(0), N, C, F, layout, W(0), true);
        break;
      case ModuleRole::norm2:
        norm_bwd(t(L.x2), park_mlp(), t(L.x2), t(c.dres_in));
        break;
      case ModuleRole::attn_out:
        k.matmul_backward(t(L.att), G(0), dbias(), t(L.x2), t(L.att), P(0), N, q, C, layout, W(0));
        k.attention_backward(qp(), kp(), vp(), t(L.att), qp(), kp(), vp(), L.lse, ldq(), ldkv(), B, T_, NH, NKV, HD);
        if (rope) k.rope_backward(qp(), kp(), ldq(), ldkv(), B, T_, NH, NKV, HD, kRopeTheta);
        break;
      case ModuleRole::qkv:
        k.matmul_backward(park_attn(), G(0), dbias(), qp(), t(L.ln1), P(0), N, C, q + 2 * kv, layout, W(0));
        break;
      case ModuleRole::v:  // backward order v, k, q: v writes the input gradient, k and q add to it
        k.matmul_backward(park_attn(), G(0), dbias(), vp(), t(L.ln1), P(0), N, C, kv, layout, W(0));
        break;
      case ModuleRole::k:
        k.matmul_backward(park_attn(), G(0), dbias(), kp(), t(L.ln1), P(0), N, C, kv, layout, W(0), true);
        break;
      case ModuleRole::q:
        k.matmul_backward(park_attn(), G(0), dbias(), qp(), t(L.ln1), P(0), N, C, q, layout, W(0), true);
        break;
      case ModuleRole::norm1:
        norm_bwd(t(c.dres_out), park_attn(), t(L.x), t(L.x2));
        break;
      case ModuleRole::pos_embedding:
        k.position_backward(G(0), t(c.dres_in), B, T_, C, g.spec().max_seq_len, W(0));
        break;
      case ModuleRole::tok_embedding:
        k.embedding_backward(G(0), t(c.dres_in), c.tokens, N, C, V, W(0));
        break;
    }
  }
};


// Runs module `module`'s forward (or backward) of `g` on kernel set `k`.
template <class K>
void run_module(const GptModel& g, size_t module, GptModel::Call& c, bool backward, K& k) {
  dispatch(g.dtype(), [&](auto tag) {
    ModuleRun<decltype(tag), K> run(g, c, g.modules()[module], k);
    if (backward)
      run.backward();
    else
      run.forward();
  });
}

}  // namespace zs::exec
