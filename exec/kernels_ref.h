// CPU reference kernels of the GPT (forward and backward): embedding, learned/rotary positions, LayerNorm and
// RMSNorm, linear layers, causal attention (GQA), GELU and SwiGLU, residual adds, cross-entropy. Tensors are
// stored as T (float, bf16_t, fp16_t); every sum and product is fp32, and each output element is rounded to T
// once. These are the references the CUDA kernels are tested against (same signature plus a stream), as in
// llm.c: plain pointers, sizes, row-major.
//   matmul_forward<bf16_t>(out, inp, w, bias, N, IN, OUT, WeightLayout::in_out);
//   attention_forward<bf16_t>(att, lse, q, k, v, ld, ld, B, T, NH, NKV, HD);
//
// Shapes: N = B·T tokens; C = hidden; activations are [N, width] rows. Weights are [IN, OUT] for GPT-2's
// Conv1D (WeightLayout::in_out) or [OUT, IN] for nn.Linear (out_in). lse is [B, NH, T] fp32 (log-sum-exp of
// each softmax row, kept for backward).
#pragma once

#include <cstdint>

namespace zs::exec {

enum class WeightLayout : uint8_t { in_out, out_in };

// How a parameter-gradient kernel writes: overwrite (first contribution of the step: dst = round(g)) or
// accumulate (dst = round(dst + round(g)), PyTorch's AccumulateGrad on a 16-bit .grad).
enum class GradWrite : uint8_t { overwrite, accumulate };

// One write of a parameter gradient element under GradWrite `w`; g is the fp32 sum.
template <class T>
void grad_store(T& dst, float g, GradWrite w);

// --- embeddings --------------------------------------------------------------------------------------------
// out[n, :] = table[tokens[n], :]
template <class T>
void embedding_forward(T* out, const int32_t* tokens, const T* table, int64_t N, int64_t C);
// dtable[v, :] (w) Σ_{n: tokens[n] = v} dout[n, :], summed in increasing n; rows no token uses get 0 (overwrite)
// or are left as they are (accumulate).
template <class T>
void embedding_backward(T* dtable, const T* dout, const int32_t* tokens, int64_t N, int64_t C, int64_t V, GradWrite w);
// out[b, t, :] += wpe[t, :]  (learned positions, added in place)
template <class T>
void position_forward(T* out, const T* wpe, int64_t B, int64_t T_, int64_t C);
// dwpe[t, :] (w) Σ_b dout[b, t, :]; rows t ≥ T_ get 0 (overwrite) or are left (accumulate). maxT rows in dwpe.
template <class T>
void position_backward(T* dwpe, const T* dout, int64_t B, int64_t T_, int64_t C, int64_t maxT, GradWrite w);

// --- norms (eps 1e-5; statistics are recomputed in backward from the saved input) ------------------------------
template <class T>
void layernorm_forward(T* out, const T* inp, const T* weight, const T* bias, int64_t N, int64_t C, float eps);
// dinp = dres + ∂/∂inp; dinp may alias inp or dres. dbias may be null (no bias). dres may be null.
template <class T>
void layernorm_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, const T* dres,
                        int64_t N, int64_t C, float eps, GradWrite w);
template <class T>
void rmsnorm_forward(T* out, const T* inp, const T* weight, int64_t N, int64_t C, float eps);
template <class T>
void rmsnorm_backward(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight, const T* dres, int64_t N,
                      int64_t C, float eps, GradWrite w);

// --- linear layers -------------------------------------------------------------------------------------------
// out[N, OUT] = inp[N, IN] · W + bias (bias may be null).
template <class T>
void matmul_forward(T* out, const T* inp, const T* weight, const T* bias, int64_t N, int64_t IN, int64_t OUT,
                    WeightLayout layout);
// dweight (w) inpᵀ·dout, dbias (w) Σ_n dout (if non-null), then dinp = dout·Wᵀ (if non-null), or
// dinp = round(dinp + dout·Wᵀ) with `accumulate_dinp` (sibling projections of one input, summed as autograd
// does). dinp may alias inp: the weight gradient is computed first.
template <class T>
void matmul_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, int64_t N, int64_t IN,
                     int64_t OUT, WeightLayout layout, GradWrite w, bool accumulate_dinp = false);

// --- attention -----------------------------------------------------------------------------------------------
// q, k, v are [N, NH·HD], [N, NKV·HD], [N, NKV·HD] row sets with row strides ld_q and ld_kv (GPT-2's fused
// c_attn output: q = qkv, k = q + NH·HD, v = k + NKV·HD, ld = (NH + 2·NKV)·HD; separate projections: planar).
// Rotary position embedding on q and k, in place (rotate_half pairing: element i with i + HD/2).
template <class T>
void rope_forward(T* q, T* k, int64_t ld_q, int64_t ld_kv, int64_t B, int64_t T_, int64_t NH, int64_t NKV, int64_t HD,
                  float theta);
// The inverse rotation on dq and dk, in place.
template <class T>
void rope_backward(T* dq, T* dk, int64_t ld_q, int64_t ld_kv, int64_t B, int64_t T_, int64_t NH, int64_t NKV,
                   int64_t HD, float theta);
// Causal softmax(q·kᵀ/√HD)·v per head; query head h reads kv head h / (NH/NKV). out [N, NH·HD] (contiguous).
template <class T>
void attention_forward(T* out, float* lse, const T* q, const T* k, const T* v, int64_t ld_q, int64_t ld_kv, int64_t B,
                       int64_t T_, int64_t NH, int64_t NKV, int64_t HD);
// dq, dk, dv from dout; each may alias its input (rows are consumed before they are overwritten).
template <class T>
void attention_backward(T* dq, T* dk, T* dv, const T* dout, const T* q, const T* k, const T* v, const float* lse,
                        int64_t ld_q, int64_t ld_kv, int64_t B, int64_t T_, int64_t NH, int64_t NKV, int64_t HD);

// --- activations, residuals ----------------------------------------------------------------------------------
// GELU, tanh approximation (GPT-2). dinp may alias inp or dout.
template <class T>
void gelu_forward(T* out, const T* inp, int64_t n);
template <class T>
void gelu_backward(T* dinp, const T* inp, const T* dout, int64_t n);
// out[n, f] = silu(gate[n, f]) · up[n, f]; gate and up rows are `in_stride` elements apart (fused [gate | up]
// rows: in_stride = 2F, up = gate + F). dgate/dup may alias gate/up.
template <class T>
void swiglu_forward(T* out, const T* gate, const T* up, int64_t N, int64_t F, int64_t in_stride);
template <class T>
void swiglu_backward(T* dgate, T* dup, const T* dout, const T* gate, const T* up, int64_t N, int64_t F,
                     int64_t in_stride);
// out = a + b (out may alias a or b)
template <class T>
void residual_forward(T* out, const T* a, const T* b, int64_t n);

// --- loss ----------------------------------------------------------------------------------------------------
// probs[N, V] = softmax(logits) in fp32, losses[n] = −log probs[n, targets[n]].
template <class T>
void crossentropy_forward(float* losses, float* probs, const T* logits, const int32_t* targets, int64_t N, int64_t V);
// dlogits = (probs − onehot(targets)) · dloss  (dloss = loss scale / tokens of the step)
template <class T>
void crossentropy_backward(T* dlogits, const float* probs, const int32_t* targets, int64_t N, int64_t V, float dloss);

// --- gradients between buffers -------------------------------------------------------------------------------
// dst = round(dst + src) elementwise (GA accumulation of 16-bit gradients), or dst = src when `overwrite`.
template <class T>
void grad_accumulate(T* dst, const T* src, int64_t n, bool overwrite);
// out (fp32, may be null) = in (T); returns Σ out² in double over four fixed lanes (i % 4, combined (0+1)+(2+3)):
// the gradient norm's share, in one order whatever the caller.
template <class T>
double cast_to_f32_sumsq(float* out, const T* in, int64_t n);
// out (T) = round(in)
template <class T>
void cast_from_f32(T* out, const float* in, int64_t n);

}  // namespace zs::exec
