// The CUDA kernels of the GPT: one per CPU reference kernel in exec/kernels_ref.h, with the same arguments plus
// the stream they run on (cutlass `reference/` habit), in namespace zs::exec::gpu. Pointers are device memory,
// shapes and layouts are the reference's; storage float / bf16_t / fp16_t, every sum in fp32.
// This header is the seam between C++17 (.cu, nvcc) and C++20 (.cpp) code: it includes nothing that needs C++20.
// Each call launches asynchronously and returns the launch error (cudaGetLastError); execution errors surface
// at the next synchronisation.
//   ZS_CUDA_TRY(gpu::gelu_forward(out, inp, n, stream));
//
// Scratch: layernorm/rmsnorm backward, bias_backward, cast_to_f32_sumsq and attention_backward take fp32
// scratch from the current device's default memory pool (cudaMallocAsync / cudaFreeAsync on the same stream):
// O(rows + 128·C) floats, and for attention_backward B·NH·T floats plus a [N, NH·HD] T buffer for dq (dq may
// alias q, which the dk/dv pass still reads): *_scratch_bytes() below. Not counted in the device's MemoryAccount.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "exec/cpu_adam.h"
#include "exec/kernels_ref.h"
#include "exec/storage_types.h"

namespace zs::exec::gpu {

// --- embeddings (embedding_backward sums each token's rows in increasing n, as the reference: bit-exact) -------
template <class T>
cudaError_t embedding_forward(T* out, const int32_t* tokens, const T* table, int64_t N, int64_t C, cudaStream_t s);
template <class T>
cudaError_t embedding_backward(T* dtable, const T* dout, const int32_t* tokens, int64_t N, int64_t C, int64_t V,
                               GradWrite w, cudaStream_t s);
template <class T>
cudaError_t position_forward(T* out, const T* wpe, int64_t B, int64_t T_, int64_t C, cudaStream_t s);
template <class T>
cudaError_t position_backward(T* dwpe, const T* dout, int64_t B, int64_t T_, int64_t C, int64_t maxT, GradWrite w,
                              cudaStream_t s);

// --- norms (one block per row; backward: per-row stats, then column sums over 128 row chunks in fixed order) ----
template <class T>
cudaError_t layernorm_forward(T* out, const T* inp, const T* weight, const T* bias, int64_t N, int64_t C, float eps,
                              cudaStream_t s);
template <class T>
cudaError_t layernorm_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                               const T* dres, int64_t N, int64_t C, float eps, GradWrite w, cudaStream_t s);
template <class T>
cudaError_t rmsnorm_forward(T* out, const T* inp, const T* weight, int64_t N, int64_t C, float eps, cudaStream_t s);
template <class T>
cudaError_t rmsnorm_backward(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight, const T* dres,
                             int64_t N, int64_t C, float eps, GradWrite w, cudaStream_t s);

// --- linear layers: the GEMMs are cuBLASLt (gemm.h); these are the pieces around them ---------------------------
// dbias[OUT] (w) Σ_n dout[n, :]  (matmul_backward's bias gradient)
template <class T>
cudaError_t bias_backward(T* dbias, const T* dout, int64_t N, int64_t OUT, GradWrite w, cudaStream_t s);

// --- attention: tiled (flash-style) causal GQA with online softmax; saves lse [B, NH, T] for backward -----------
// HD ≤ 256 and NH % NKV == 0, else cudaErrorInvalidValue. Never materialises the T×T scores.
template <class T>
cudaError_t rope_forward(T* q, T* k, int64_t ld_q, int64_t ld_kv, int64_t B, int64_t T_, int64_t NH, int64_t NKV,
                         int64_t HD, float theta, cudaStream_t s);
template <class T>
cudaError_t rope_backward(T* dq, T* dk, int64_t ld_q, int64_t ld_kv, int64_t B, int64_t T_, int64_t NH, int64_t NKV,
                          int64_t HD, float theta, cudaStream_t s);
template <class T>
cudaError_t attention_forward(T* out, float* lse, const T* q, const T* k, const T* v, int64_t ld_q, int64_t ld_kv,
                              int64_t B, int64_t T_, int64_t NH, int64_t NKV, int64_t HD, cudaStream_t s);
// Recomputes P from lse: pass 1 (per query row) D = Σ_j P·(dout·v), dq; pass 2 (per key row) dk, dv.
template <class T>
cudaError_t attention_backward(T* dq, T* dk, T* dv, const T* dout, const T* q, const T* k, const T* v, const float* lse,
                               int64_t ld_q, int64_t ld_kv, int64_t B, int64_t T_, int64_t NH, int64_t NKV, int64_t HD,
                               cudaStream_t s);

// --- activations, residuals, loss ----------------------------------------------------------------------------
template <class T>
cudaError_t gelu_forward(T* out, const T* inp, int64_t n, cudaStream_t s);
template <class T>
cudaError_t gelu_backward(T* dinp, const T* inp, const T* dout, int64_t n, cudaStream_t s);
template <class T>
cudaError_t swiglu_forward(T* out, const T* gate, const T* up, int64_t N, int64_t F, int64_t in_stride, cudaStream_t s);
template <class T>
cudaError_t swiglu_backward(T* dgate, T* dup, const T* dout, const T* gate, const T* up, int64_t N, int64_t F,
                            int64_t in_stride, cudaStream_t s);
template <class T>
cudaError_t residual_forward(T* out, const T* a, const T* b, int64_t n, cudaStream_t s);
template <class T>
cudaError_t crossentropy_forward(float* losses, float* probs, const T* logits, const int32_t* targets, int64_t N,
                                 int64_t V, cudaStream_t s);
template <class T>
cudaError_t crossentropy_backward(T* dlogits, const float* probs, const int32_t* targets, int64_t N, int64_t V,
                                  float dloss, cudaStream_t s);

// --- gradients between buffers -------------------------------------------------------------------------------
template <class T>
cudaError_t grad_accumulate(T* dst, const T* src, int64_t n, bool overwrite, cudaStream_t s);
// out (fp32, may be null) = in; *sumsq (device double) = Σ out², summed per thread, then per block, then over
// blocks in block order: deterministic for a given n, but not the reference's four-lane order (tolerance).
template <class T>
cudaError_t cast_to_f32_sumsq(float* out, const T* in, int64_t n, double* sumsq, cudaStream_t s);
template <class T>
cudaError_t cast_from_f32(T* out, const float* in, int64_t n, cudaStream_t s);
// x *= mul, one IEEE rounding per element (the host's x[i] *= mul: bit-identical).
cudaError_t scale_f32(float* x, float mul, int64_t n, cudaStream_t s);

// --- attention through GEMMs (attention_gemm.h): the element-wise pieces (kernels_attention_gemm.cu) ----------
// Rows [N, ld] (head h at column h·HD) ↔ head-major [B][H][T][HD]; scatter rounds src (float or T) to T.
template <class T>
cudaError_t gather_heads(T* dst, const T* src, int64_t ld, int64_t B, int64_t T_, int64_t H, int64_t HD,
                         cudaStream_t s);
template <class T, class S>
cudaError_t scatter_heads(T* dst, const S* src, int64_t ld, int64_t B, int64_t T_, int64_t H, int64_t HD,
                          cudaStream_t s);
// `items` score blocks [T][T] fp32 (row i a query, column j a key, already scaled by 1/√HD): p = causal softmax of
// each row (keys j ≤ i; 0 above), lse[item · lse_stride + i] its log-sum-exp.
template <class T>
cudaError_t causal_softmax_rows(T* p, const float* scores, float* lse, int64_t items, int64_t T_, int64_t lse_stride,
                                cudaStream_t s);
// Backward's recompute: scores ← exp(scores − lse) in place (fp32, 0 above the diagonal), pt = the same rounded to T.
template <class T>
cudaError_t causal_probs_from_lse(float* scores, T* pt, const float* lse, int64_t items, int64_t T_, int64_t lse_stride,
                                  cudaStream_t s);
// ds = p ⊙ (dp − Σ_j p·dp) per row, rounded to T (the softmax gradient; dp = dO·Vᵀ).
template <class T>
cudaError_t softmax_grad_rows(T* ds, const float* p, const float* dp, int64_t items, int64_t T_, cudaStream_t s);

// --- scratch the kernels above take from the stream's pool (for a memory ledger; the kernels size it so) -------
inline int64_t norm_backward_scratch_bytes(int64_t N, int64_t C) {
  const int64_t chunks = N < 128 ? (N < 1 ? 1 : N) : 128;
  return 4 * (2 * N + 2 * chunks * C);
}
inline int64_t attention_backward_scratch_bytes(int64_t B, int64_t T_, int64_t NH, int64_t HD, int64_t elem_bytes) {
  return 4 * B * NH * T_ + elem_bytes * B * T_ * NH * HD;  // D per query row, then dq before it lands in q
}

// --- optimizer -------------------------------------------------------------------------------------------------
// Adam/AdamW over device buffers `b` with the scalars CpuAdam computes (adam_scalars): the scalar reference's
// operations with the same roundings (__fmaf_rn where it says std::fma, IEEE sqrt and division, no contraction),
// so the result is bit-identical to adam_update_element; with the fused fp16/bf16 copy when b.lp_dtype says.
cudaError_t adam_step(const AdamScalars& sc, const AdamBuffers& b, cudaStream_t s);

}  // namespace zs::exec::gpu
