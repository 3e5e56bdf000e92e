// Per-module compute of one micro-batch (declared in scheduler.h): GEMM FLOPs from the tensor table, and the
// HBM bytes of the memory-bound work around them (norms, attention softmax, activation functions, residual adds,
// dropout, loss). Backward costs 2 × forward (dgrad + wgrad GEMMs; elementwise backward reads and writes twice).
#include <string>

#include "core/scheduler.h"

namespace zs::core::sched {
namespace {

bool ends_with(const std::string& s, const char* suffix) {
  const std::string x(suffix);
  return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
}

enum class Role { embedding, positions, norm, qkv, attn_out, mlp_in, mlp_gate, mlp_out, head, other };

Role role_of(const ModuleInfo& mod) {
  const std::string& n = mod.name;
  if (n == "wte" || n == "model.embed_tokens") return Role::embedding;
  if (n == "wpe" || n == "model.embed_positions") return Role::positions;
  if (n == "lm_head") return Role::head;
  if (ends_with(n, "ln_1") || ends_with(n, "ln_2") || n == "ln_f" || ends_with(n, "layernorm") || n == "model.norm")
    return Role::norm;
  if (ends_with(n, "attn.c_attn") || ends_with(n, "q_proj") || ends_with(n, "k_proj") || ends_with(n, "v_proj"))
    return Role::qkv;
  if (ends_with(n, "attn.c_proj") || ends_with(n, "o_proj")) return Role::attn_out;
  if (ends_with(n, "mlp.c_fc") || ends_with(n, "up_proj")) return Role::mlp_in;
  if (ends_with(n, "gate_proj")) return Role::mlp_gate;
  if (ends_with(n, "mlp.c_proj") || ends_with(n, "down_proj")) return Role::mlp_out;
  return Role::other;
}

}  // namespace

std::vector<ComputeCost> forward_costs(const ModelSpec& m, const Strategy& s, const MemoryOptions& mo,
                                       const std::vector<ModuleInfo>& modules, const std::vector<TensorInfo>& t) {
  const double tokens = static_cast<double>(s.micro_batch_per_gpu * s.run.seq_len);
  const int64_t T = s.micro_batch_per_gpu * s.run.seq_len;
  const int64_t e = bytes_per_element(s.model_dtype());
  const int64_t h = m.hidden, f = m.ffn_hidden, V = m.vocab;
  const int64_t q = m.heads * m.head_dim, kv = m.kv_heads * m.head_dim;
  const int64_t mask = m.arch == Arch::gpt ? 1 : 0;  // GPT-2 dropout masks, one byte per element
  std::vector<ComputeCost> out(modules.size());
  for (size_t i = 0; i < modules.size(); ++i) {
    ComputeCost& c = out[i];
    for (size_t ti : modules[i].tensors)
      if (t[ti].is_matmul) c.gemm_flops += 2.0 * tokens * static_cast<double>(t[ti].numel);
    switch (role_of(modules[i])) {
      case Role::embedding: c.mem_bound_bytes = 2 * e * T * h; break;           // row gather: read + write
      case Role::positions: c.mem_bound_bytes = 3 * e * T * h + mask * T * h; break;  // add + dropout
      case Role::norm: c.mem_bound_bytes = 2 * e * T * h; break;
      case Role::qkv: break;  // bias fused in the GEMM epilogue
      case Role::attn_out: {
        // The attention core runs between the QKV and the output projection: QKᵀ and AV are GEMMs
        // (4·s·q FLOPs per token, flops_per_token's count); softmax traffic is memory-bound.
        c.gemm_flops += 4.0 * tokens * static_cast<double>(s.run.seq_len) * static_cast<double>(q);
        int64_t core = e * T * (q + 2 * kv) + e * T * q;  // read Q, K, V; write O
        if (m.position == Position::rope) core += 2 * e * T * (q + kv);  // rotary on Q and K
        if (!mo.flash_attention)  // scores written, softmax read/write, dropout, read for AV: [b, a, s, s]
          core += (4 * e + mask) * m.heads * T * s.run.seq_len;
        c.mem_bound_bytes = core + 3 * e * T * h + mask * T * h;  // + residual add and dropout
        break;
      }
      case Role::mlp_in:
        c.mem_bound_bytes = m.activation == Activation::swiglu ? 3 * e * T * f : 2 * e * T * f;  // act (·up)
        break;
      case Role::mlp_gate: break;
      case Role::mlp_out: c.mem_bound_bytes = 3 * e * T * h + mask * T * h; break;  // residual add, dropout
      case Role::head: c.mem_bound_bytes = (e + 12) * T * V; break;  // logits → fp32, softmax, cross-entropy
      case Role::other: break;
    }
  }
  return out;
}

}  // namespace zs::core::sched
