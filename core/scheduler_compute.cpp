// Per-module compute of one micro-batch (declared in scheduler.h): GEMM FLOPs from the tensor table, and the
// HBM bytes of the memory-bound work around them (norms, attention softmax, activation functions, residual adds,
// dropout, loss). Backward costs 2 × forward (dgrad + wgrad GEMMs; elementwise backward reads and writes twice).
#include <string>

#include "core/scheduler.h"

namespace zs::core::sched {
std::vector<ComputeCost> forward_costs(const ModelSpec& m, const Strategy& s, const MemoryOptions& /*mo*/,
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
    c.role = module_role(modules[i]);
    switch (c.role) {
      case ModuleRole::embedding: c.mem_bound_bytes = 2 * e * T * h; break;           // row gather: read + write
      case ModuleRole::positions: c.mem_bound_bytes = 3 * e * T * h + mask * T * h; break;  // add + dropout
      case ModuleRole::norm: c.mem_bound_bytes = 2 * e * T * h; break;
      case ModuleRole::qkv: break;  // bias fused in the GEMM epilogue
      case ModuleRole::attn_out: {
        // The attention core runs between the QKV and the output projection: QKᵀ and AV are GEMMs
        // (4·s·q FLOPs per token, flops_per_token's count); softmax traffic is memory-bound.
        // The core's time, eager's [b, a, s, s] score traffic included, is priced from attention_flops at the
        // implementation's measured efficiency (core/cost_model.h): no score bytes here.
        c.attention_flops = 4.0 * tokens * static_cast<double>(s.run.seq_len) * static_cast<double>(q);
        c.gemm_flops += c.attention_flops;
        int64_t core = e * T * (q + 2 * kv) + e * T * q;  // read Q, K, V; write O
        if (m.position == Position::rope) core += 2 * e * T * (q + kv);  // rotary on Q and K
        c.mem_bound_bytes = core + 3 * e * T * h + mask * T * h;  // + residual add and dropout
        break;
      }
      case ModuleRole::mlp_in:
        c.mem_bound_bytes = m.activation == Activation::swiglu ? 3 * e * T * f : 2 * e * T * f;  // act (·up)
        break;
      case ModuleRole::mlp_gate: break;
      case ModuleRole::mlp_out: c.mem_bound_bytes = 3 * e * T * h + mask * T * h; break;  // residual add, dropout
      case ModuleRole::head: c.mem_bound_bytes = (e + 12) * T * V; break;  // logits → fp32, softmax, cross-entropy
      case ModuleRole::none: break;
    }
  }
  return out;
}

}  // namespace zs::core::sched
