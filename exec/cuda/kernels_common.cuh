// Internal to the CUDA kernels (kernels.cu, kernels_attention.cu): launch shape, storage conversions (bf16 rounds
// to nearest even with NaN -> 0x7fc0, exec/half.h's rule; fp16 through __float2half_rn), warp and block
// reductions, grid-stride loops, stream-ordered scratch. Device code only; each file gets its own copies.
//   ZS_GRID_STRIDE(i, n) out[i] = from_f<T>(to_f(a[i]) + to_f(b[i]));
#pragma once

#include <cuda_fp16.h>

#include <cfloat>
#include <cmath>

#include "exec/cuda/kernels.cuh"

namespace zs::exec::gpu {
namespace {

constexpr int kThreads = 256;
constexpr int kWarp = 32;

// --- storage conversions --------------------------------------------------------------------------------------
__device__ __forceinline__ float to_f(float x) { return x; }
__device__ __forceinline__ float to_f(bf16_t x) { return __uint_as_float(static_cast<unsigned>(x.bits) << 16); }
__device__ __forceinline__ float to_f(fp16_t x) { return __half2float(__ushort_as_half(x.bits)); }

template <class T>
__device__ __forceinline__ T from_f(float x);
template <>
__device__ __forceinline__ float from_f<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ bf16_t from_f<bf16_t>(float x) {
  unsigned u = __float_as_uint(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bf16_t{0x7fc0};
  u += 0x7fffu + ((u >> 16) & 1u);
  return bf16_t{static_cast<uint16_t>(u >> 16)};
}
template <>
__device__ __forceinline__ fp16_t from_f<fp16_t>(float x) {
  return fp16_t{__half_as_ushort(__float2half_rn(x))};
}
template <class T>
__device__ __forceinline__ float round_f(float x) {
  return to_f(from_f<T>(x));
}

template <class T>
__device__ __forceinline__ void grad_store_dev(T& dst, float g, GradWrite w) {
  dst = w == GradWrite::overwrite ? from_f<T>(g) : from_f<T>(to_f(dst) + round_f<T>(g));
}

// --- reductions -----------------------------------------------------------------------------------------------
__device__ __forceinline__ float warp_sum(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ double warp_sum(double v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
// Sum (or max) over the block, returned to every thread. blockDim.x is a multiple of 32, at most 1024.
template <bool Max, class F>
__device__ F block_reduce(F v) {
  __shared__ F part[32];
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp, warps = blockDim.x / kWarp;
  if constexpr (Max)
    v = warp_max(v);
  else
    v = warp_sum(v);
  __syncthreads();  // part[] may still be read by a previous call
  if (lane == 0) part[warp] = v;
  __syncthreads();
  F r = lane < warps ? part[lane] : (Max ? F(-INFINITY) : F(0));
  if constexpr (Max)
    r = warp_max(r);
  else
    r = warp_sum(r);
  return r;
}

inline unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65535 * 8 ? 65535 * 8 : b));
}
#define ZS_GRID_STRIDE(i, n)                                                             \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

cudaError_t launched() { return cudaGetLastError(); }

// fp32 scratch on the stream, freed on the stream after the kernels that use it.
struct Scratch {
  void* p = nullptr;
  cudaError_t err = cudaSuccess;
  cudaStream_t s = nullptr;
  Scratch(size_t bytes, cudaStream_t st) : s(st) { err = cudaMallocAsync(&p, bytes < 4 ? 4 : bytes, st); }
  ~Scratch() {
    if (p) (void)cudaFreeAsync(p, s);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  template <class U>
  U* as() const {
    return static_cast<U*>(p);
  }
};

}  // namespace
}  // namespace zs::exec::gpu
