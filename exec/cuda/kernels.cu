// CUDA kernels (kernels.cuh) but attention's (kernels_attention.cu): three storage types, for sm_80 and sm_90, kept
// to plain loops over fp32 registers and shared memory so each file compiles in under a minute on two cores.
// Conversions to bf16 round to nearest even with NaN → 0x7fc0 (exec/half.h's rule); fp16 through __float2half_rn.
#include <cuda_fp16.h>

#include <cfloat>
#include <cmath>

#include "exec/cuda/kernels.cuh"
#include "exec/cuda/kernels_common.cuh"

namespace zs::exec::gpu {
namespace {

// --- embeddings -----------------------------------------------------------------------------------------------
template <class T>
__global__ void embedding_gather_kernel(T* out, const int32_t* tokens, const T* table, int64_t N, int64_t C) {
  ZS_GRID_STRIDE(i, N * C) out[i] = table[static_cast<int64_t>(tokens[i / C]) * C + i % C];
}

// One block per position n; only the first position of each token works: it sums the rows of every later
// position with that token in increasing n (the reference's order), columns in register tiles of 8·blockDim.
template <class T>
__global__ void embedding_scatter_first_occurrence_kernel(T* dtable, const T* dout, const int32_t* tokens, int64_t N,
                                                          int64_t C, GradWrite w) {
  __shared__ int32_t tok[1024];
  const int64_t n = blockIdx.x;
  const int32_t v = tokens[n];
  int earlier = 0;
  for (int64_t m = threadIdx.x; m < n && !earlier; m += blockDim.x) earlier = tokens[m] == v;
  if (__syncthreads_or(earlier)) return;
  for (int64_t c0 = 0; c0 < C; c0 += 8 * blockDim.x) {
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int64_t m0 = n; m0 < N; m0 += 1024) {
      const int cnt = static_cast<int>(N - m0 < 1024 ? N - m0 : 1024);
      __syncthreads();
      for (int i = threadIdx.x; i < cnt; i += blockDim.x) tok[i] = tokens[m0 + i];
      __syncthreads();
      for (int i = 0; i < cnt; ++i) {
        if (tok[i] != v) continue;
        const T* d = dout + (m0 + i) * C;
#pragma unroll
        for (int k = 0; k < 8; ++k) {
          const int64_t c = c0 + k * blockDim.x + threadIdx.x;
          if (c < C) acc[k] += to_f(d[c]);
        }
      }
    }
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const int64_t c = c0 + k * blockDim.x + threadIdx.x;
      if (c < C) grad_store_dev(dtable[static_cast<int64_t>(v) * C + c], acc[k], w);
    }
  }
}

template <class T>
__global__ void position_add_kernel(T* out, const T* wpe, int64_t B, int64_t T_, int64_t C) {
  ZS_GRID_STRIDE(i, B * T_ * C) out[i] = from_f<T>(to_f(out[i]) + to_f(wpe[i % (T_ * C)]));
}

template <class T>
__global__ void position_sum_over_batch_kernel(T* dwpe, const T* dout, int64_t B, int64_t T_, int64_t C, int64_t maxT,
                                               GradWrite w) {
  ZS_GRID_STRIDE(i, maxT * C) {
    if (i >= T_ * C) {
      if (w == GradWrite::overwrite) dwpe[i] = from_f<T>(0.0f);
      continue;
    }
    float acc = 0;
    for (int64_t b = 0; b < B; ++b) acc += to_f(dout[b * T_ * C + i]);
    grad_store_dev(dwpe[i], acc, w);
  }
}

// --- norms ----------------------------------------------------------------------------------------------------
// Mean (LayerNorm only) and 1/std of each row, two-pass like the reference. stats[2n] = mean, stats[2n+1] = rstd.
template <class T, bool Rms>
__device__ void row_stats(const T* x, int64_t C, float eps, float& mean, float& rstd) {
  mean = 0;
  if (!Rms) {
    float s = 0;
    for (int64_t c = threadIdx.x; c < C; c += blockDim.x) s += to_f(x[c]);
    mean = block_reduce<false>(s) / static_cast<float>(C);
  }
  float ss = 0;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
    const float d = to_f(x[c]) - mean;
    ss += d * d;
  }
  rstd = 1.0f / sqrtf(block_reduce<false>(ss) / static_cast<float>(C) + eps);
}

template <class T, bool Rms>
__global__ void norm_forward_kernel(T* out, const T* inp, const T* weight, const T* bias, int64_t C, float eps) {
  const T* x = inp + blockIdx.x * C;
  T* o = out + blockIdx.x * C;
  float mean, rstd;
  row_stats<T, Rms>(x, C, eps, mean, rstd);
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
    float y = (to_f(x[c]) - mean) * rstd * to_f(weight[c]);
    if (bias) y += to_f(bias[c]);
    o[c] = from_f<T>(y);
  }
}

template <class T, bool Rms>
__global__ void norm_stats_kernel(float* stats, const T* inp, int64_t C, float eps) {
  float mean, rstd;
  row_stats<T, Rms>(inp + blockIdx.x * C, C, eps, mean, rstd);
  if (threadIdx.x == 0) {
    stats[2 * blockIdx.x] = mean;
    stats[2 * blockIdx.x + 1] = rstd;
  }
}

// partial[r, c] = Σ over rows of chunk r of dout·xhat (and dout, for the bias), rows in increasing order.
constexpr int kRowChunks = 128;
template <class T>
__global__ void norm_weight_partials_kernel(float* pw, float* pb, const T* dout, const T* inp, const float* stats,
                                            int64_t N, int64_t C) {
  const int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (c >= C) return;
  const int64_t per = (N + gridDim.y - 1) / gridDim.y;
  const int64_t n0 = blockIdx.y * per, n1 = n0 + per < N ? n0 + per : N;
  float dw = 0, db = 0;
  for (int64_t n = n0; n < n1; ++n) {
    const float g = to_f(dout[n * C + c]);
    dw += g * (to_f(inp[n * C + c]) - stats[2 * n]) * stats[2 * n + 1];
    db += g;
  }
  pw[blockIdx.y * C + c] = dw;
  if (pb) pb[blockIdx.y * C + c] = db;
}

template <class T>
__global__ void column_partials_finish_kernel(T* dst, const float* partial, int chunks, int64_t C, GradWrite w) {
  ZS_GRID_STRIDE(c, C) {
    float s = 0;
    for (int r = 0; r < chunks; ++r) s += partial[r * C + c];
    grad_store_dev(dst[c], s, w);
  }
}

template <class T, bool Rms>
__global__ void norm_input_grad_kernel(T* dinp, const T* dout, const T* inp, const T* weight, const T* dres,
                                       const float* stats, int64_t C) {
  const int64_t row = blockIdx.x;
  const T* x = inp + row * C;
  const T* dy = dout + row * C;
  const float mean = stats[2 * row], rstd = stats[2 * row + 1];
  float s1 = 0, s2 = 0;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
    const float dxhat = to_f(dy[c]) * to_f(weight[c]);
    s1 += dxhat;
    s2 += dxhat * (to_f(x[c]) - mean) * rstd;
  }
  const float mean_dxhat = Rms ? 0.0f : block_reduce<false>(s1) / static_cast<float>(C);
  const float mean_dxhat_xhat = block_reduce<false>(s2) / static_cast<float>(C);
  // Each thread reads x[c], dy[c], dres[c] before it writes dinp[c]: dinp may alias inp or dres.
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
    const float xhat = (to_f(x[c]) - mean) * rstd;
    float v = rstd * (to_f(dy[c]) * to_f(weight[c]) - mean_dxhat - xhat * mean_dxhat_xhat);
    if (dres) v += to_f(dres[row * C + c]);
    dinp[row * C + c] = from_f<T>(v);
  }
}

template <class T, bool Rms>
cudaError_t norm_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, const T* dres,
                          int64_t N, int64_t C, float eps, GradWrite w, cudaStream_t s) {
  if (N <= 0 || C <= 0) return cudaSuccess;
  const int chunks = static_cast<int>(N < kRowChunks ? N : kRowChunks);
  Scratch scratch(static_cast<size_t>(norm_backward_scratch_bytes(N, C)), s);
  if (scratch.err != cudaSuccess) return scratch.err;
  float* stats = scratch.as<float>();
  float* pw = stats + 2 * N;
  float* pb = dbias ? pw + chunks * C : nullptr;
  norm_stats_kernel<T, Rms><<<static_cast<unsigned>(N), kThreads, 0, s>>>(stats, inp, C, eps);
  // The weight gradient reads inp before the input gradient (which may overwrite it) is written.
  norm_weight_partials_kernel<T>
      <<<dim3(static_cast<unsigned>((C + kThreads - 1) / kThreads), chunks), kThreads, 0, s>>>(pw, pb, dout, inp, stats,
                                                                                               N, C);
  column_partials_finish_kernel<T><<<blocks_for(C), kThreads, 0, s>>>(dweight, pw, chunks, C, w);
  if (dbias) column_partials_finish_kernel<T><<<blocks_for(C), kThreads, 0, s>>>(dbias, pb, chunks, C, w);
  norm_input_grad_kernel<T, Rms><<<static_cast<unsigned>(N), kThreads, 0, s>>>(dinp, dout, inp, weight, dres, stats, C);
  return launched();
}

// --- bias gradient --------------------------------------------------------------------------------------------
template <class T>
__global__ void column_sum_partials_kernel(float* partial, const T* dout, int64_t N, int64_t C) {
  const int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (c >= C) return;
  const int64_t per = (N + gridDim.y - 1) / gridDim.y;
  const int64_t n0 = blockIdx.y * per, n1 = n0 + per < N ? n0 + per : N;
  float acc = 0;
  for (int64_t n = n0; n < n1; ++n) acc += to_f(dout[n * C + c]);
  partial[blockIdx.y * C + c] = acc;
}

// --- activations, residuals, loss -------------------------------------------------------------------------------
constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2/pi)
__device__ __forceinline__ float tanh_via_exp(float u) { return 1.0f - 2.0f / (expf(2.0f * u) + 1.0f); }

template <class T>
__global__ void gelu_tanh_forward_kernel(T* out, const T* inp, int64_t n) {
  ZS_GRID_STRIDE(i, n) {
    const float x = to_f(inp[i]);
    const float u = kGeluScale * (x + 0.044715f * x * x * x);
    out[i] = from_f<T>(0.5f * x * (1.0f + tanh_via_exp(u)));
  }
}
template <class T>
__global__ void gelu_tanh_backward_kernel(T* dinp, const T* inp, const T* dout, int64_t n) {
  ZS_GRID_STRIDE(i, n) {
    const float x = to_f(inp[i]);
    const float u = kGeluScale * (x + 0.044715f * x * x * x);
    const float th = tanh_via_exp(u);
    const float local =
        0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * kGeluScale * (1.0f + 3.0f * 0.044715f * x * x);
    dinp[i] = from_f<T>(local * to_f(dout[i]));
  }
}
template <class T>
__global__ void swiglu_forward_kernel(T* out, const T* gate, const T* up, int64_t N, int64_t F, int64_t in_stride) {
  ZS_GRID_STRIDE(e, N * F) {
    const int64_t k = e / F * in_stride + e % F;
    const float g = to_f(gate[k]), u = to_f(up[k]);
    out[e] = from_f<T>(g * (1.0f / (1.0f + expf(-g))) * u);
  }
}
template <class T>
__global__ void swiglu_backward_kernel(T* dgate, T* dup, const T* dout, const T* gate, const T* up, int64_t N,
                                       int64_t F, int64_t in_stride) {
  ZS_GRID_STRIDE(e, N * F) {
    const int64_t k = e / F * in_stride + e % F;
    const float g = to_f(gate[k]), u = to_f(up[k]), dy = to_f(dout[e]);
    const float sig = 1.0f / (1.0f + expf(-g));
    dgate[k] = from_f<T>(dy * u * sig * (1.0f + g * (1.0f - sig)));
    dup[k] = from_f<T>(dy * g * sig);
  }
}
template <class T>
__global__ void residual_add_kernel(T* out, const T* a, const T* b, int64_t n) {
  ZS_GRID_STRIDE(i, n) out[i] = from_f<T>(to_f(a[i]) + to_f(b[i]));
}

// One block per row: max, Σ exp, normalise, loss from the normalised probability (as the reference).
template <class T>
__global__ void softmax_crossentropy_forward_kernel(float* losses, float* probs, const T* logits,
                                                    const int32_t* targets, int64_t V) {
  const T* l = logits + blockIdx.x * V;
  float* p = probs + blockIdx.x * V;
  float mx = -INFINITY;
  for (int64_t v = threadIdx.x; v < V; v += blockDim.x) mx = fmaxf(mx, to_f(l[v]));
  mx = block_reduce<true>(mx);
  float sum = 0;
  for (int64_t v = threadIdx.x; v < V; v += blockDim.x) {
    p[v] = expf(to_f(l[v]) - mx);
    sum += p[v];
  }
  const float inv = 1.0f / block_reduce<false>(sum);
  for (int64_t v = threadIdx.x; v < V; v += blockDim.x) p[v] *= inv;
  __syncthreads();
  if (threadIdx.x == 0) losses[blockIdx.x] = -logf(p[targets[blockIdx.x]]);
}
template <class T>
__global__ void crossentropy_backward_kernel(T* dlogits, const float* probs, const int32_t* targets, int64_t N,
                                             int64_t V, float dloss) {
  ZS_GRID_STRIDE(e, N * V) {
    const float ind = e % V == targets[e / V] ? 1.0f : 0.0f;
    dlogits[e] = from_f<T>((probs[e] - ind) * dloss);
  }
}

// --- gradients between buffers ------------------------------------------------------------------------------------
template <class T>
__global__ void accumulate_rounded_kernel(T* dst, const T* src, int64_t n) {
  ZS_GRID_STRIDE(i, n) dst[i] = from_f<T>(to_f(dst[i]) + to_f(src[i]));
}
constexpr int kSumBlocks = 256;
template <class T>
__global__ void cast_sumsq_partials_kernel(double* partial, float* out, const T* in, int64_t n) {
  double acc = 0;
  ZS_GRID_STRIDE(i, n) {
    const float v = to_f(in[i]);
    if (out) out[i] = v;
    acc += static_cast<double>(v) * static_cast<double>(v);
  }
  acc = block_reduce<false>(acc);
  if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}
__global__ void sum_partials_in_order_kernel(double* dst, const double* partial, int count) {
  if (threadIdx.x != 0) return;
  double s = 0;
  for (int i = 0; i < count; ++i) s += partial[i];
  *dst = s;
}
template <class T>
__global__ void cast_from_f32_kernel(T* out, const float* in, int64_t n) {
  ZS_GRID_STRIDE(i, n) out[i] = from_f<T>(in[i]);
}
__global__ void scale_f32_kernel(float* x, float mul, int64_t n) {
  ZS_GRID_STRIDE(i, n) x[i] = __fmul_rn(x[i], mul);
}

// --- Adam -----------------------------------------------------------------------------------------------------------
// adam_update_element (exec/cpu_adam.h) with explicit roundings: __fmul_rn is never contracted into an FMA, so
// every operation rounds exactly where the scalar reference's does.
__device__ __forceinline__ void adam_element(const AdamScalars& s, float& p, float g, float& m, float& v) {
  if (s.l2) g = __fmaf_rn(p, s.weight_decay, g);
  m = __fmaf_rn(g, s.one_minus_beta1, __fmul_rn(m, s.beta1));
  v = __fmaf_rn(__fmul_rn(g, g), s.one_minus_beta2, __fmul_rn(v, s.beta2));
  const float denom = __fmaf_rn(__fsqrt_rn(v), s.bias_correction2, s.eps);
  const float update = __fdiv_rn(m, denom);
  if (s.decoupled) p = __fmaf_rn(p, s.neg_lr_wd, p);
  p = __fmaf_rn(update, s.step_size, p);
}

template <GradDtype G, StateDtype S, LpDtype L>
__global__ void adam_fused_kernel(AdamScalars sc, float* params, const void* grads, void* exp_avg, void* exp_avg_sq,
                                  void* lp, int64_t n) {
  ZS_GRID_STRIDE(i, n) {
    float p = params[i];
    float g;
    if constexpr (G == GradDtype::fp32) g = static_cast<const float*>(grads)[i];
    if constexpr (G == GradDtype::fp16) g = to_f(static_cast<const fp16_t*>(grads)[i]);
    if constexpr (G == GradDtype::bf16) g = to_f(static_cast<const bf16_t*>(grads)[i]);
    float m, v;
    if constexpr (S == StateDtype::fp32) {
      m = static_cast<float*>(exp_avg)[i];
      v = static_cast<float*>(exp_avg_sq)[i];
    } else {
      m = to_f(static_cast<bf16_t*>(exp_avg)[i]);
      v = to_f(static_cast<bf16_t*>(exp_avg_sq)[i]);
    }
    adam_element(sc, p, g, m, v);
    params[i] = p;
    if constexpr (S == StateDtype::fp32) {
      static_cast<float*>(exp_avg)[i] = m;
      static_cast<float*>(exp_avg_sq)[i] = v;
    } else {
      static_cast<bf16_t*>(exp_avg)[i] = from_f<bf16_t>(m);
      static_cast<bf16_t*>(exp_avg_sq)[i] = from_f<bf16_t>(v);
    }
    if constexpr (L == LpDtype::fp16) static_cast<fp16_t*>(lp)[i] = from_f<fp16_t>(p);
    if constexpr (L == LpDtype::bf16) static_cast<bf16_t*>(lp)[i] = from_f<bf16_t>(p);
  }
}

template <GradDtype G, StateDtype S>
void adam_launch_lp(const AdamScalars& sc, const AdamBuffers& b, cudaStream_t s) {
  const unsigned g = blocks_for(b.n);
  switch (b.lp_dtype) {
    case LpDtype::none:
      adam_fused_kernel<G, S, LpDtype::none>
          <<<g, kThreads, 0, s>>>(sc, b.params, b.grads, b.exp_avg, b.exp_avg_sq, b.lp_params, b.n);
      break;
    case LpDtype::fp16:
      adam_fused_kernel<G, S, LpDtype::fp16>
          <<<g, kThreads, 0, s>>>(sc, b.params, b.grads, b.exp_avg, b.exp_avg_sq, b.lp_params, b.n);
      break;
    case LpDtype::bf16:
      adam_fused_kernel<G, S, LpDtype::bf16>
          <<<g, kThreads, 0, s>>>(sc, b.params, b.grads, b.exp_avg, b.exp_avg_sq, b.lp_params, b.n);
      break;
  }
}
template <GradDtype G>
void adam_launch_state(const AdamScalars& sc, const AdamBuffers& b, cudaStream_t s) {
  if (b.state_dtype == StateDtype::fp32) return adam_launch_lp<G, StateDtype::fp32>(sc, b, s);
  adam_launch_lp<G, StateDtype::bf16>(sc, b, s);
}

}  // namespace

// --- entry points ---------------------------------------------------------------------------------------------------

template <class T>
cudaError_t embedding_forward(T* out, const int32_t* tokens, const T* table, int64_t N, int64_t C, cudaStream_t s) {
  if (N * C <= 0) return cudaSuccess;
  embedding_gather_kernel<T><<<blocks_for(N * C), kThreads, 0, s>>>(out, tokens, table, N, C);
  return launched();
}

template <class T>
cudaError_t embedding_backward(T* dtable, const T* dout, const int32_t* tokens, int64_t N, int64_t C, int64_t V,
                               GradWrite w, cudaStream_t s) {
  if (w == GradWrite::overwrite) {  // rows no token uses get 0 (all-zero bits in every storage type)
    const cudaError_t e = cudaMemsetAsync(dtable, 0, sizeof(T) * static_cast<size_t>(V * C), s);
    if (e != cudaSuccess) return e;
  }
  if (N <= 0 || C <= 0) return launched();
  embedding_scatter_first_occurrence_kernel<T>
      <<<static_cast<unsigned>(N), kThreads, 0, s>>>(dtable, dout, tokens, N, C, w);
  return launched();
}

template <class T>
cudaError_t position_forward(T* out, const T* wpe, int64_t B, int64_t T_, int64_t C, cudaStream_t s) {
  if (B * T_ * C <= 0) return cudaSuccess;
  position_add_kernel<T><<<blocks_for(B * T_ * C), kThreads, 0, s>>>(out, wpe, B, T_, C);
  return launched();
}

template <class T>
cudaError_t position_backward(T* dwpe, const T* dout, int64_t B, int64_t T_, int64_t C, int64_t maxT, GradWrite w,
                              cudaStream_t s) {
  if (maxT * C <= 0) return cudaSuccess;
  position_sum_over_batch_kernel<T><<<blocks_for(maxT * C), kThreads, 0, s>>>(dwpe, dout, B, T_, C, maxT, w);
  return launched();
}

template <class T>
cudaError_t layernorm_forward(T* out, const T* inp, const T* weight, const T* bias, int64_t N, int64_t C, float eps,
                              cudaStream_t s) {
  if (N <= 0) return cudaSuccess;
  norm_forward_kernel<T, false><<<static_cast<unsigned>(N), kThreads, 0, s>>>(out, inp, weight, bias, C, eps);
  return launched();
}
template <class T>
cudaError_t layernorm_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                               const T* dres, int64_t N, int64_t C, float eps, GradWrite w, cudaStream_t s) {
  return norm_backward<T, false>(dinp, dweight, dbias, dout, inp, weight, dres, N, C, eps, w, s);
}
template <class T>
cudaError_t rmsnorm_forward(T* out, const T* inp, const T* weight, int64_t N, int64_t C, float eps, cudaStream_t s) {
  if (N <= 0) return cudaSuccess;
  norm_forward_kernel<T, true><<<static_cast<unsigned>(N), kThreads, 0, s>>>(out, inp, weight, nullptr, C, eps);
  return launched();
}
template <class T>
cudaError_t rmsnorm_backward(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight, const T* dres,
                             int64_t N, int64_t C, float eps, GradWrite w, cudaStream_t s) {
  return norm_backward<T, true>(dinp, dweight, nullptr, dout, inp, weight, dres, N, C, eps, w, s);
}

template <class T>
cudaError_t bias_backward(T* dbias, const T* dout, int64_t N, int64_t OUT, GradWrite w, cudaStream_t s) {
  if (OUT <= 0) return cudaSuccess;
  const int chunks = static_cast<int>(N < kRowChunks ? (N < 1 ? 1 : N) : kRowChunks);
  Scratch scratch(sizeof(float) * static_cast<size_t>(chunks * OUT), s);
  if (scratch.err != cudaSuccess) return scratch.err;
  column_sum_partials_kernel<T>
      <<<dim3(static_cast<unsigned>((OUT + kThreads - 1) / kThreads), chunks), kThreads, 0, s>>>(scratch.as<float>(),
                                                                                                 dout, N, OUT);
  column_partials_finish_kernel<T><<<blocks_for(OUT), kThreads, 0, s>>>(dbias, scratch.as<float>(), chunks, OUT, w);
  return launched();
}

template <class T>
cudaError_t gelu_forward(T* out, const T* inp, int64_t n, cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  gelu_tanh_forward_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(out, inp, n);
  return launched();
}
template <class T>
cudaError_t gelu_backward(T* dinp, const T* inp, const T* dout, int64_t n, cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  gelu_tanh_backward_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(dinp, inp, dout, n);
  return launched();
}
template <class T>
cudaError_t swiglu_forward(T* out, const T* gate, const T* up, int64_t N, int64_t F, int64_t in_stride,
                           cudaStream_t s) {
  if (N * F <= 0) return cudaSuccess;
  swiglu_forward_kernel<T><<<blocks_for(N * F), kThreads, 0, s>>>(out, gate, up, N, F, in_stride);
  return launched();
}
template <class T>
cudaError_t swiglu_backward(T* dgate, T* dup, const T* dout, const T* gate, const T* up, int64_t N, int64_t F,
                            int64_t in_stride, cudaStream_t s) {
  if (N * F <= 0) return cudaSuccess;
  swiglu_backward_kernel<T><<<blocks_for(N * F), kThreads, 0, s>>>(dgate, dup, dout, gate, up, N, F, in_stride);
  return launched();
}
template <class T>
cudaError_t residual_forward(T* out, const T* a, const T* b, int64_t n, cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  residual_add_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(out, a, b, n);
  return launched();
}
template <class T>
cudaError_t crossentropy_forward(float* losses, float* probs, const T* logits, const int32_t* targets, int64_t N,
                                 int64_t V, cudaStream_t s) {
  if (N <= 0) return cudaSuccess;
  softmax_crossentropy_forward_kernel<T>
      <<<static_cast<unsigned>(N), kThreads, 0, s>>>(losses, probs, logits, targets, V);
  return launched();
}
template <class T>
cudaError_t crossentropy_backward(T* dlogits, const float* probs, const int32_t* targets, int64_t N, int64_t V,
                                  float dloss, cudaStream_t s) {
  if (N * V <= 0) return cudaSuccess;
  crossentropy_backward_kernel<T><<<blocks_for(N * V), kThreads, 0, s>>>(dlogits, probs, targets, N, V, dloss);
  return launched();
}
template <class T>
cudaError_t grad_accumulate(T* dst, const T* src, int64_t n, bool overwrite, cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  // cudaMemcpyDefault: src may be page-locked host memory (a gradient partition offloaded to the CPU).
  if (overwrite) return cudaMemcpyAsync(dst, src, sizeof(T) * static_cast<size_t>(n), cudaMemcpyDefault, s);
  accumulate_rounded_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(dst, src, n);
  return launched();
}
template <class T>
cudaError_t cast_to_f32_sumsq(float* out, const T* in, int64_t n, double* sumsq, cudaStream_t s) {
  Scratch partial(sizeof(double) * kSumBlocks, s);
  if (partial.err != cudaSuccess) return partial.err;
  cast_sumsq_partials_kernel<T><<<kSumBlocks, kThreads, 0, s>>>(partial.as<double>(), out, in, n);
  sum_partials_in_order_kernel<<<1, kWarp, 0, s>>>(sumsq, partial.as<double>(), kSumBlocks);
  return launched();
}
template <class T>
cudaError_t cast_from_f32(T* out, const float* in, int64_t n, cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  cast_from_f32_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(out, in, n);
  return launched();
}

cudaError_t scale_f32(float* x, float mul, int64_t n, cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  scale_f32_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, mul, n);
  return launched();
}

cudaError_t adam_step(const AdamScalars& sc, const AdamBuffers& b, cudaStream_t s) {
  if (b.n <= 0) return cudaSuccess;
  if (!b.params || !b.grads || !b.exp_avg || !b.exp_avg_sq ||
      ((b.lp_dtype != LpDtype::none) != (b.lp_params != nullptr)))
    return cudaErrorInvalidValue;
  switch (b.grad_dtype) {
    case GradDtype::fp32:
      adam_launch_state<GradDtype::fp32>(sc, b, s);
      break;
    case GradDtype::fp16:
      adam_launch_state<GradDtype::fp16>(sc, b, s);
      break;
    case GradDtype::bf16:
      adam_launch_state<GradDtype::bf16>(sc, b, s);
      break;
  }
  return launched();
}

#define ZS_GPU_INSTANTIATE(T)                                                                                         \
  template cudaError_t embedding_forward<T>(T*, const int32_t*, const T*, int64_t, int64_t, cudaStream_t);            \
  template cudaError_t embedding_backward<T>(T*, const T*, const int32_t*, int64_t, int64_t, int64_t, GradWrite,      \
                                             cudaStream_t);                                                           \
  template cudaError_t position_forward<T>(T*, const T*, int64_t, int64_t, int64_t, cudaStream_t);                    \
  template cudaError_t position_backward<T>(T*, const T*, int64_t, int64_t, int64_t, int64_t, GradWrite,              \
                                            cudaStream_t);                                                            \
  template cudaError_t layernorm_forward<T>(T*, const T*, const T*, const T*, int64_t, int64_t, float, cudaStream_t); \
  template cudaError_t layernorm_backward<T>(T*, T*, T*, const T*, const T*, const T*, const T*, int64_t, int64_t,    \
                                             float, GradWrite, cudaStream_t);                                         \
  template cudaError_t rmsnorm_forward<T>(T*, const T*, const T*, int64_t, int64_t, float, cudaStream_t);             \
  template cudaError_t rmsnorm_backward<T>(T*, T*, const T*, const T*, const T*, const T*, int64_t, int64_t, float,   \
                                           GradWrite, cudaStream_t);                                                  \
  template cudaError_t bias_backward<T>(T*, const T*, int64_t, int64_t, GradWrite, cudaStream_t);                     \
  template cudaError_t gelu_forward<T>(T*, const T*, int64_t, cudaStream_t);                                          \
  template cudaError_t gelu_backward<T>(T*, const T*, const T*, int64_t, cudaStream_t);                               \
  template cudaError_t swiglu_forward<T>(T*, const T*, const T*, int64_t, int64_t, int64_t, cudaStream_t);            \
  template cudaError_t swiglu_backward<T>(T*, T*, const T*, const T*, const T*, int64_t, int64_t, int64_t,            \
                                          cudaStream_t);                                                              \
  template cudaError_t residual_forward<T>(T*, const T*, const T*, int64_t, cudaStream_t);                            \
  template cudaError_t crossentropy_forward<T>(float*, float*, const T*, const int32_t*, int64_t, int64_t,            \
                                               cudaStream_t);                                                         \
  template cudaError_t crossentropy_backward<T>(T*, const float*, const int32_t*, int64_t, int64_t, float,            \
                                                cudaStream_t);                                                        \
  template cudaError_t grad_accumulate<T>(T*, const T*, int64_t, bool, cudaStream_t);                                 \
  template cudaError_t cast_to_f32_sumsq<T>(float*, const T*, int64_t, double*, cudaStream_t);                        \
  template cudaError_t cast_from_f32<T>(T*, const float*, int64_t, cudaStream_t);

ZS_GPU_INSTANTIATE(float)
ZS_GPU_INSTANTIATE(bf16_t)
ZS_GPU_INSTANTIATE(fp16_t)

}  // namespace zs::exec::gpu
