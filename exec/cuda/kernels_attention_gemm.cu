// The element-wise pieces of attention computed with GEMMs (attention_gemm.h): head-major gathers and scatters,
// the causal softmax of a block of score rows and its gradient. One block per score row; every sum in fp32.
#include "exec/cuda/kernels_common.cuh"

namespace zs::exec::gpu {
namespace {

constexpr int kRowThreads = 256;

template <class T, class S>
__global__ void scatter_heads_kernel(T* dst, const S* src, int64_t ld, int64_t T_, int64_t H, int64_t HD,
                                     int64_t total) {
  ZS_GRID_STRIDE(e, total) {  // e over the head-major source [B][H][T][HD]
    const int64_t d = e % HD, t = (e / HD) % T_, h = (e / (HD * T_)) % H, b = e / (HD * T_ * H);
    dst[(b * T_ + t) * ld + h * HD + d] = from_f<T>(to_f(src[e]));
  }
}
template <class T>
__global__ void gather_heads_kernel(T* dst, const T* src, int64_t ld, int64_t T_, int64_t H, int64_t HD,
                                    int64_t total) {
  ZS_GRID_STRIDE(e, total) {  // e over the head-major destination
    const int64_t d = e % HD, t = (e / HD) % T_, h = (e / (HD * T_)) % H, b = e / (HD * T_ * H);
    dst[e] = src[(b * T_ + t) * ld + h * HD + d];
  }
}

// Row r = item · T + i: scores[r][j], keys j ≤ i. p = exp(s − lse), lse = max + log Σ exp(s − max).
template <class T>
__global__ void causal_softmax_kernel(T* p, const float* scores, float* lse, int64_t T_, int64_t lse_stride) {
  const int64_t r = blockIdx.x, item = r / T_, i = r % T_;
  const float* s = scores + r * T_;
  float mx = -INFINITY;
  for (int64_t j = threadIdx.x; j <= i; j += blockDim.x) mx = fmaxf(mx, s[j]);
  mx = block_reduce<true>(mx);
  float sum = 0;
  for (int64_t j = threadIdx.x; j <= i; j += blockDim.x) sum += expf(s[j] - mx);
  sum = block_reduce<false>(sum);
  const float l = mx + logf(sum);
  T* pr = p + r * T_;
  for (int64_t j = threadIdx.x; j < T_; j += blockDim.x) pr[j] = from_f<T>(j <= i ? expf(s[j] - l) : 0.0f);
  if (threadIdx.x == 0) lse[item * lse_stride + i] = l;
}

template <class T>
__global__ void causal_probs_kernel(float* s, T* pt, const float* lse, int64_t T_, int64_t lse_stride) {
  const int64_t r = blockIdx.x, item = r / T_, i = r % T_;
  const float l = lse[item * lse_stride + i];
  float* sr = s + r * T_;
  T* pr = pt + r * T_;
  for (int64_t j = threadIdx.x; j < T_; j += blockDim.x) {
    const float v = j <= i ? expf(sr[j] - l) : 0.0f;
    sr[j] = v;
    pr[j] = from_f<T>(v);
  }
}

template <class T>
__global__ void softmax_grad_kernel(T* ds, const float* p, const float* dp, int64_t T_) {
  const int64_t r = blockIdx.x, i = r % T_;
  const float* pr = p + r * T_;
  const float* dr = dp + r * T_;
  float acc = 0;
  for (int64_t j = threadIdx.x; j <= i; j += blockDim.x) acc += pr[j] * dr[j];
  const float D = block_reduce<false>(acc);
  T* o = ds + r * T_;
  for (int64_t j = threadIdx.x; j < T_; j += blockDim.x) o[j] = from_f<T>(j <= i ? pr[j] * (dr[j] - D) : 0.0f);
}

unsigned row_blocks(int64_t rows) { return static_cast<unsigned>(rows); }

}  // namespace

template <class T>
cudaError_t gather_heads(T* dst, const T* src, int64_t ld, int64_t B, int64_t T_, int64_t H, int64_t HD,
                         cudaStream_t s) {
  const int64_t total = B * H * T_ * HD;
  if (total <= 0) return cudaSuccess;
  gather_heads_kernel<T><<<blocks_for(total), kThreads, 0, s>>>(dst, src, ld, T_, H, HD, total);
  return launched();
}
template <class T, class S>
cudaError_t scatter_heads(T* dst, const S* src, int64_t ld, int64_t B, int64_t T_, int64_t H, int64_t HD,
                          cudaStream_t s) {
  const int64_t total = B * H * T_ * HD;
  if (total <= 0) return cudaSuccess;
  scatter_heads_kernel<T, S><<<blocks_for(total), kThreads, 0, s>>>(dst, src, ld, T_, H, HD, total);
  return launched();
}
template <class T>
cudaError_t causal_softmax_rows(T* p, const float* scores, float* lse, int64_t items, int64_t T_, int64_t lse_stride,
                                cudaStream_t s) {
  if (items * T_ <= 0) return cudaSuccess;
  causal_softmax_kernel<T><<<row_blocks(items * T_), kRowThreads, 0, s>>>(p, scores, lse, T_, lse_stride);
  return launched();
}
template <class T>
cudaError_t causal_probs_from_lse(float* scores, T* pt, const float* lse, int64_t items, int64_t T_, int64_t lse_stride,
                                  cudaStream_t s) {
  if (items * T_ <= 0) return cudaSuccess;
  causal_probs_kernel<T><<<row_blocks(items * T_), kRowThreads, 0, s>>>(scores, pt, lse, T_, lse_stride);
  return launched();
}
template <class T>
cudaError_t softmax_grad_rows(T* ds, const float* p, const float* dp, int64_t items, int64_t T_, cudaStream_t s) {
  if (items * T_ <= 0) return cudaSuccess;
  softmax_grad_kernel<T><<<row_blocks(items * T_), kRowThreads, 0, s>>>(ds, p, dp, T_);
  return launched();
}

#define ZS_GPU_INSTANTIATE(T)                                                                                      \
  template cudaError_t gather_heads<T>(T*, const T*, int64_t, int64_t, int64_t, int64_t, int64_t, cudaStream_t);  \
  template cudaError_t scatter_heads<T, T>(T*, const T*, int64_t, int64_t, int64_t, int64_t, int64_t,             \
                                           cudaStream_t);                                                          \
  template cudaError_t scatter_heads<T, float>(T*, const float*, int64_t, int64_t, int64_t, int64_t, int64_t,     \
                                               cudaStream_t);                                                      \
  template cudaError_t causal_softmax_rows<T>(T*, const float*, float*, int64_t, int64_t, int64_t, cudaStream_t); \
  template cudaError_t causal_probs_from_lse<T>(float*, T*, const float*, int64_t, int64_t, int64_t,              \
                                                cudaStream_t);                                                     \
  template cudaError_t softmax_grad_rows<T>(T*, const float*, const float*, int64_t, int64_t, cudaStream_t);
ZS_GPU_INSTANTIATE(bf16_t)
ZS_GPU_INSTANTIATE(fp16_t)
template cudaError_t gather_heads<float>(float*, const float*, int64_t, int64_t, int64_t, int64_t, int64_t,
                                         cudaStream_t);
template cudaError_t scatter_heads<float, float>(float*, const float*, int64_t, int64_t, int64_t, int64_t, int64_t,
                                                 cudaStream_t);
template cudaError_t causal_softmax_rows<float>(float*, const float*, float*, int64_t, int64_t, int64_t,
                                                cudaStream_t);
template cudaError_t causal_probs_from_lse<float>(float*, float*, const float*, int64_t, int64_t, int64_t,
                                                  cudaStream_t);
template cudaError_t softmax_grad_rows<float>(float*, const float*, const float*, int64_t, int64_t, cudaStream_t);

}  // namespace zs::exec::gpu
