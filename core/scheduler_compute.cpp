// Per-module compute of one micro-batch (declared in scheduler.h): GEMM FLOPs from the tensor table, and the
// HBM bytes of the memory-bound work around them (norms, attention softmax, activation functions, residual adds,
// dropout, MoE routing, loss). Backward costs 2 × forward (dgrad + wgrad GEMMs; elementwise backward reads and
// writes twice), less the weight gradients frozen weights skip (frozen_gemm_flops).
#include <string>

#include "core/scheduler.h"

namespace zs::core::sched {
namespace {

// One micro-batch's sizes: T tokens, e bytes per element, mask 1 when dropout writes its masks.
struct Tokens {
  double tokens = 0;
  int64_t T = 0, seq = 0, e = 2, mask = 0;
};

int64_t head_dim_of(const ModelSpec& m) { return m.head_dim > 0 ? m.head_dim : m.hidden / m.heads; }

// bitsandbytes' 4-bit and 8-bit layers run their GEMM on a dequantised copy: each pass (forward, recompute, and the
// backward's input gradient: bitsandbytes/autograd/_functions.py MatMul4Bit) reads the packed weight and its
// constants and writes the 16-bit weight.
int64_t dequantize_bytes(const ModelSpec& m, const Tokens& x, const ModuleInfo& mod, const std::vector<TensorInfo>& t) {
  int64_t bytes = 0;
  for (size_t ti : mod.tensors) {
    const TensorInfo& w = t[ti];
    if (w.quant_bits == 0) continue;
    const int64_t rows = w.shape.empty() ? 1 : w.shape[0];
    bytes += quant_storage_bytes(m.adapter.quant, w.params) + quant_constant_bytes(m.adapter.quant, w.params, rows) +
             x.e * w.params;
  }
  return bytes;
}

// PEFT's adapter modules (lora_A, lora_B, DoRA's lora_magnitude_vector) keep the role of the layer they adapt; the
// role's work is the base layer's and is counted on it once.
bool is_adapter_module(const ModuleInfo& mod) { return mod.name.find(".lora_") != std::string::npos; }
// modules_to_save: PEFT keeps the frozen original beside the trainable copy, which alone runs.
bool is_kept_original(const ModuleInfo& mod) { return mod.name.find(".original_module") != std::string::npos; }

// PEFT tuners/lora/layer.py Linear.forward: result + lora_B(lora_A(dropout(x))) * scaling. lora_A's module: the
// dropout (read x, write the dropped copy and its mask) when lora_dropout > 0; lora_B's: the scaling multiply
// and the add into the base layer's result. Rows: the tokens the adapted layer sees (token_fraction).
int64_t lora_bytes(const ModelSpec& m, const Tokens& x, const ModuleInfo& mod, const std::vector<TensorInfo>& t) {
  if (mod.tensors.empty()) return 0;
  const TensorInfo& w = t[mod.tensors.front()];
  if (w.shape.size() != 2) return 0;
  const auto rows = static_cast<int64_t>(static_cast<double>(x.T) * w.token_fraction + 0.5);
  if (w.name.find(".lora_A.") != std::string::npos)  // [r, in]
    return m.adapter.lora.dropout > 0 ? (2 * x.e + 1) * rows * w.shape[1] : 0;
  if (w.name.find(".lora_B.") != std::string::npos)  // [out, r]
    return 5 * x.e * rows * w.shape[0];
  return 0;
}

// The attention core between the projections: QKᵀ and AV are GEMMs (attention_flops; eager's [b, a, s, s] score
// traffic is priced from them at the implementation's measured efficiency, core/cost_model.h), the rest is
// memory-bound: read Q, K, V and write O; rotary on Q and K (DeepSeek's latent attention: on the rope part only,
// then concatenated onto the no-rope part, modeling_deepseek_v3.py DeepseekV3Attention); q/k norms (qwen3, gemma3:
// read and write Q and K); ALiBi's per-head bias (bloom: baddbmm adds it in the QKᵀ GEMM, reading [b·a, 1, s]).
struct AttentionCore {
  double flops = 0;
  int64_t bytes = 0;
};
AttentionCore attention_core(const ModelSpec& m, const Tokens& x) {
  const int64_t T = x.T, e = x.e;
  const auto per_token = x.tokens * static_cast<double>(x.seq);
  AttentionCore c;
  if (m.mla.enabled()) {
    const MlaSpec& a = m.mla;
    const int64_t rope = a.qk_rope_head_dim, qk = m.heads * (a.qk_nope_head_dim + rope), v = m.heads * a.v_head_dim;
    c.flops = 2.0 * per_token * static_cast<double>(qk + v);  // QKᵀ over qk_head_dim, AV over v_head_dim
    c.bytes = e * T * (2 * qk + v) + e * T * v;                // K broadcast to every head
    c.bytes += 2 * e * T * (m.heads * rope + rope);            // rotary: q_rot per head, k_rot shared
    c.bytes += 2 * e * T * (2 * qk);                           // cat((pass, rot)) for query and key
    return c;
  }
  const int64_t q = m.heads * head_dim_of(m), kv = m.kv_heads * head_dim_of(m);
  c.flops = 4.0 * per_token * static_cast<double>(q);
  c.bytes = e * T * (q + 2 * kv) + e * T * q;  // read Q, K, V; write O
  if (m.position == Position::rope) c.bytes += 2 * e * T * (q + kv);
  if (m.position == Position::alibi) c.bytes += e * m.heads * T;
  if (m.qk_norm) c.bytes += 2 * e * T * (q + kv);
  return c;
}

// A sparse MoE block (modeling_mixtral.py MixtralSparseMoeBlock; Qwen2-MoE, DeepSeek alike): the router's softmax
// (or sigmoid) over [T, E] logits into fp32, top-k, the weights' normalisation and cast; the gather of top_k copies
// of the hidden states into expert order; the experts' activation on top_k·T rows of expert_ffn; the weighted sum
// (scale each row by its weight, index_add it into a zeroed output); the shared expert's activation, add and
// optional sigmoid gate; the block's residual add.
int64_t moe_block_bytes(const ModelSpec& m, const Tokens& x) {
  const MoeSpec& s = m.moe;
  const int64_t T = x.T, e = x.e, h = m.hidden, k = s.top_k;
  const int64_t act = m.activation == Activation::swiglu ? 3 : 2;  // SwiGLU: read gate and up, write; GELU: r/w
  int64_t b = (e + 8) * T * s.experts + (28 + e) * T * k;  // softmax r/w, top-k read; top-k, normalise, cast
  b += 2 * e * k * T * h;                                   // gather: read and write each routed row
  b += act * e * k * T * s.expert_ffn;
  b += 5 * e * k * T * h + e * T * h;                       // weight multiply (r/w), index_add (r, r/w), zeros
  const int64_t shared_ffn = s.shared_experts * s.expert_ffn + s.shared_ffn;
  if (shared_ffn > 0) b += act * e * T * shared_ffn + 3 * e * T * h;
  if (s.shared_expert_gate) b += 2 * e * T + 3 * e * T * h;  // sigmoid of [T, 1], its product with the output
  return b + 3 * e * T * h + x.mask * T * h;                 // residual add, dropout
}

// A norm's traffic over its own width (MLA's latent norms are narrower than hidden). The q/k norms (qk_norm: width
// head_dim) are the attention core's.
int64_t norm_bytes(const ModelSpec& m, const Tokens& x, const ModuleInfo& mod, const std::vector<TensorInfo>& t) {
  int64_t width = m.hidden;
  if (!mod.tensors.empty() && t[mod.tensors.front()].shape.size() == 1) width = t[mod.tensors.front()].shape[0];
  if (m.qk_norm && width == head_dim_of(m) && width != m.hidden) return 0;
  return 2 * x.e * x.T * width;
}

// The memory-bound bytes of a module by its role (and its GEMM-adjacent attention FLOPs into c).
void role_work(const ModelSpec& m, const Tokens& x, const ModuleInfo& mod, const std::vector<TensorInfo>& t,
               ComputeCost& c) {
  const int64_t T = x.T, e = x.e, h = m.hidden, f = m.ffn_hidden, mask = x.mask;
  // A parallel block adds attention, MLP and residual at the MLP's end (a + b + x: two adds, as two residuals).
  const int64_t attn_residual = m.parallel_residual ? 0 : 3 * e * T * h;
  const int64_t mlp_residual = m.parallel_residual ? 6 * e * T * h : 3 * e * T * h;
  switch (c.role) {
    case ModuleRole::embedding: c.mem_bound_bytes = 2 * e * T * h; break;           // row gather: read + write
    case ModuleRole::positions: c.mem_bound_bytes = 3 * e * T * h + mask * T * h; break;  // add + dropout
    case ModuleRole::norm: c.mem_bound_bytes = norm_bytes(m, x, mod, t); break;
    case ModuleRole::qkv: break;  // bias fused in the GEMM epilogue
    case ModuleRole::attn_out: {
      const AttentionCore a = attention_core(m, x);
      c.attention_flops = a.flops;
      c.gemm_flops += a.flops;
      c.mem_bound_bytes = a.bytes + attn_residual + mask * T * h;  // + residual add and dropout
      break;
    }
    case ModuleRole::mlp_in:
      c.mem_bound_bytes = m.activation == Activation::swiglu ? 3 * e * T * f : 2 * e * T * f;  // act (·up)
      break;
    case ModuleRole::mlp_gate: break;
    case ModuleRole::mlp_out: c.mem_bound_bytes = mlp_residual + mask * T * h; break;  // residual add, dropout
    case ModuleRole::head: c.mem_bound_bytes = (e + 12) * T * m.vocab; break;  // logits → fp32, softmax, loss
    case ModuleRole::moe: c.mem_bound_bytes = moe_block_bytes(m, x); break;
    case ModuleRole::none: break;
  }
}

}  // namespace

std::vector<ComputeCost> forward_costs(const ModelSpec& m, const Strategy& s, const MemoryOptions& /*mo*/,
                                       const std::vector<ModuleInfo>& modules, const std::vector<TensorInfo>& t) {
  Tokens x;
  x.T = s.micro_batch_per_gpu * s.run.seq_len;
  x.tokens = static_cast<double>(x.T);
  x.seq = s.run.seq_len;
  x.e = bytes_per_element(s.model_dtype());
  x.mask = m.dropout ? 1 : 0;  // dropout masks (GPT-2, OPT), one byte per element
  std::vector<ComputeCost> out(modules.size());
  for (size_t i = 0; i < modules.size(); ++i) {
    ComputeCost& c = out[i];
    // HF's parameter count, not numel: a quantised weight's numel is its packed storage. A routed expert's GEMM
    // sees token_fraction of the tokens.
    for (size_t ti : modules[i].tensors) {
      const TensorInfo& w = t[ti];
      if (!w.is_matmul) continue;
      const double flops = 2.0 * x.tokens * static_cast<double>(w.params) * w.token_fraction;
      c.gemm_flops += flops;
      if (!w.trainable) c.frozen_gemm_flops += flops;
    }
    c.role = module_role(modules[i]);
    if (is_kept_original(modules[i])) continue;
    if (is_adapter_module(modules[i]))
      c.mem_bound_bytes = lora_bytes(m, x, modules[i], t);
    else
      role_work(m, x, modules[i], t, c);
    c.mem_bound_bytes += dequantize_bytes(m, x, modules[i], t);
  }
  return out;
}

}  // namespace zs::core::sched
