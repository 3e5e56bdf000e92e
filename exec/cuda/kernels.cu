// CUDA kernels (kernels.cuh). One translation unit, three storage types, for sm_80 and sm_90: kept to plain
// loops over fp32 registers and shared memory so it compiles in about a minute on two cores.
// Conversions to bf16 round to nearest even with NaN → 0x7fc0 (exec/half.h's rule); fp16 through __float2half_rn.
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

// --- attention ------------------------------------------------------------------------------------------------
constexpr int kMaxHeadDim = 256;
constexpr int kDimsPerLane = kMaxHeadDim / kWarp;  // 8
constexpr int kAttWarps = 4;
constexpr int kRowsPerWarp = 4;                       // query rows per warp (forward, dq)
constexpr int kQueryTile = kAttWarps * kRowsPerWarp;  // 16 query rows per block
constexpr int kKeysPerWarp = 2;                       // key rows per warp (dk, dv)
constexpr int kKeyTile = kAttWarps * kKeysPerWarp;    // 8 key rows per block

// Rows of a K/V (or Q/dO) tile staged in shared memory as fp32: 32 KiB for two tiles of any head size.
__host__ __device__ inline int staged_rows(int64_t HD) { return HD <= 64 ? 64 : HD <= 128 ? 32 : 16; }

template <class T>
__device__ __forceinline__ void load_lane_dims(float (&r)[kDimsPerLane], const T* row, int64_t HD, float mul) {
  const int lane = threadIdx.x % kWarp;
#pragma unroll
  for (int k = 0; k < kDimsPerLane; ++k) {
    const int d = lane + k * kWarp;
    r[k] = d < HD ? to_f(row[d]) * mul : 0.0f;
  }
}
// Σ_d a[d]·row[d] over the warp: each lane holds its dims of `a`, reads its dims of `row` (shared memory).
__device__ __forceinline__ float warp_dot(const float (&a)[kDimsPerLane], const float* row, int64_t HD) {
  const int lane = threadIdx.x % kWarp;
  float s = 0;
#pragma unroll
  for (int k = 0; k < kDimsPerLane; ++k) {
    const int d = lane + k * kWarp;
    if (d < HD) s += a[k] * row[d];
  }
  return warp_sum(s);
}

// Stages rows [j0, j0 + rows) ∩ [0, T_) of two [T_, ld]-strided tensors (head offset applied) as fp32.
template <class T>
__device__ void stage_rows(float* a_sh, float* b_sh, const T* a, const T* b, int64_t ld_a, int64_t ld_b, int64_t j0,
                           int rows, int64_t T_, int64_t HD) {
  for (int64_t e = threadIdx.x; e < rows * HD; e += blockDim.x) {
    const int64_t j = e / HD, d = e % HD;
    if (j0 + j < T_) {
      a_sh[e] = to_f(a[(j0 + j) * ld_a + d]);
      b_sh[e] = to_f(b[(j0 + j) * ld_b + d]);
    }
  }
}

// grid (ceil(T/16), NH, B), 128 threads: each warp owns 4 query rows and walks the keys j ≤ i through shared
// K/V tiles, keeping the running max m, sum l and output accumulator in registers (online softmax).
template <class T>
__global__ void flash_attention_forward_kernel(T* out, float* lse, const T* q, const T* k, const T* v, int64_t ld_q,
                                               int64_t ld_kv, int64_t T_, int64_t NH, int64_t NKV, int64_t HD) {
  extern __shared__ float sh[];
  const int KT = staged_rows(HD);
  float* Ks = sh;
  float* Vs = sh + KT * HD;
  const int64_t b = blockIdx.z, h = blockIdx.y, kh = h / (NH / NKV);
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int64_t i0 = blockIdx.x * static_cast<int64_t>(kQueryTile);
  const float scale = 1.0f / sqrtf(static_cast<float>(HD));
  float qr[kRowsPerWarp][kDimsPerLane], acc[kRowsPerWarp][kDimsPerLane], m[kRowsPerWarp], l[kRowsPerWarp];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int64_t i = i0 + warp * kRowsPerWarp + r;
    load_lane_dims(qr[r], q + (b * T_ + (i < T_ ? i : 0)) * ld_q + h * HD, HD, 1.0f);
#pragma unroll
    for (int kk = 0; kk < kDimsPerLane; ++kk) acc[r][kk] = 0;
    m[r] = -INFINITY;
    l[r] = 0;
  }
  const int64_t i_last = (i0 + kQueryTile < T_ ? i0 + kQueryTile : T_) - 1;
  const T* kb = k + b * T_ * ld_kv + kh * HD;
  const T* vb = v + b * T_ * ld_kv + kh * HD;
  for (int64_t j0 = 0; j0 <= i_last; j0 += KT) {
    __syncthreads();
    stage_rows(Ks, Vs, kb, vb, ld_kv, ld_kv, j0, KT, T_, HD);
    __syncthreads();
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const int64_t i = i0 + warp * kRowsPerWarp + r;
      if (i >= T_) continue;
      const int64_t j_end = j0 + KT - 1 < i ? j0 + KT - 1 : i;
      for (int64_t j = j0; j <= j_end; ++j) {
        const float sc = warp_dot(qr[r], Ks + (j - j0) * HD, HD) * scale;
        const float m_new = fmaxf(m[r], sc);
        const float corr = expf(m[r] - m_new), p = expf(sc - m_new);
        l[r] = l[r] * corr + p;
        const float* vr = Vs + (j - j0) * HD;
#pragma unroll
        for (int kk = 0; kk < kDimsPerLane; ++kk) {
          const int d = lane + kk * kWarp;
          acc[r][kk] = acc[r][kk] * corr + (d < HD ? p * vr[d] : 0.0f);
        }
        m[r] = m_new;
      }
    }
  }
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int64_t i = i0 + warp * kRowsPerWarp + r;
    if (i >= T_) continue;
    const float inv = 1.0f / l[r];
    T* o = out + (b * T_ + i) * NH * HD + h * HD;
#pragma unroll
    for (int kk = 0; kk < kDimsPerLane; ++kk) {
      const int d = lane + kk * kWarp;
      if (d < HD) o[d] = from_f<T>(acc[r][kk] * inv);
    }
    if (lane == 0) lse[(b * NH + h) * T_ + i] = m[r] + logf(l[r]);
  }
}

// Per query row: pass 1 D = Σ_j P_ij (dO_i · v_j); pass 2 dq_i = scale Σ_j P_ij (dO_i · v_j − D) k_j.
// Writes D [B, NH, T] and dq into a contiguous [N, NH·HD] buffer (q is still read by the key pass).
template <class T>
__global__ void flash_attention_backward_query_kernel(T* dq_tmp, float* Dbuf, const T* dout, const T* q, const T* k,
                                                      const T* v, const float* lse, int64_t ld_q, int64_t ld_kv,
                                                      int64_t T_, int64_t NH, int64_t NKV, int64_t HD) {
  extern __shared__ float sh[];
  const int KT = staged_rows(HD);
  float* Ks = sh;
  float* Vs = sh + KT * HD;
  const int64_t b = blockIdx.z, h = blockIdx.y, kh = h / (NH / NKV);
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int64_t i0 = blockIdx.x * static_cast<int64_t>(kQueryTile);
  const float scale = 1.0f / sqrtf(static_cast<float>(HD));
  float qr[kRowsPerWarp][kDimsPerLane], dor[kRowsPerWarp][kDimsPerLane], dqa[kRowsPerWarp][kDimsPerLane];
  float L[kRowsPerWarp], D[kRowsPerWarp];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int64_t i = i0 + warp * kRowsPerWarp + r, ii = i < T_ ? i : 0;
    load_lane_dims(qr[r], q + (b * T_ + ii) * ld_q + h * HD, HD, 1.0f);
    load_lane_dims(dor[r], dout + (b * T_ + ii) * NH * HD + h * HD, HD, 1.0f);
#pragma unroll
    for (int kk = 0; kk < kDimsPerLane; ++kk) dqa[r][kk] = 0;
    L[r] = lse[(b * NH + h) * T_ + ii];
    D[r] = 0;
  }
  const int64_t i_last = (i0 + kQueryTile < T_ ? i0 + kQueryTile : T_) - 1;
  const T* kb = k + b * T_ * ld_kv + kh * HD;
  const T* vb = v + b * T_ * ld_kv + kh * HD;
  for (int pass = 0; pass < 2; ++pass) {
    for (int64_t j0 = 0; j0 <= i_last; j0 += KT) {
      __syncthreads();
      stage_rows(Ks, Vs, kb, vb, ld_kv, ld_kv, j0, KT, T_, HD);
      __syncthreads();
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        const int64_t i = i0 + warp * kRowsPerWarp + r;
        if (i >= T_) continue;
        const int64_t j_end = j0 + KT - 1 < i ? j0 + KT - 1 : i;
        for (int64_t j = j0; j <= j_end; ++j) {
          const float* kr = Ks + (j - j0) * HD;
          const float p = expf(warp_dot(qr[r], kr, HD) * scale - L[r]);
          const float g = warp_dot(dor[r], Vs + (j - j0) * HD, HD);
          if (pass == 0) {
            D[r] += p * g;
            continue;
          }
          const float ds = p * (g - D[r]) * scale;
#pragma unroll
          for (int kk = 0; kk < kDimsPerLane; ++kk) {
            const int d = lane + kk * kWarp;
            if (d < HD) dqa[r][kk] += ds * kr[d];
          }
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int64_t i = i0 + warp * kRowsPerWarp + r;
    if (i >= T_) continue;
    T* o = dq_tmp + (b * T_ + i) * NH * HD + h * HD;
#pragma unroll
    for (int kk = 0; kk < kDimsPerLane; ++kk) {
      const int d = lane + kk * kWarp;
      if (d < HD) o[d] = from_f<T>(dqa[r][kk]);
    }
    if (lane == 0) Dbuf[(b * NH + h) * T_ + i] = D[r];
  }
}

// grid (ceil(T/8), NKV, B), 128 threads: each warp owns 2 key rows of kv head kh and walks every query row i ≥ j
// of every query head of its group through shared Q/dO tiles: dv_j = Σ P dO_i, dk_j = scale Σ P (dO_i·v_j − D) q_i.
// Writes dk, dv in place of k, v: only this block reads these rows (the query pass has finished).
template <class T>
__global__ void flash_attention_backward_key_kernel(T* dk, T* dv, const T* dout, const T* q, const T* k, const T* v,
                                                    const float* lse, const float* Dbuf, int64_t ld_q, int64_t ld_kv,
                                                    int64_t T_, int64_t NH, int64_t NKV, int64_t HD) {
  extern __shared__ float sh[];
  const int QT = staged_rows(HD);
  float* Qs = sh;
  float* Os = sh + QT * HD;
  float* Ls = Os + QT * HD;  // [QT] lse, then [QT] D
  float* Ds = Ls + QT;
  const int64_t b = blockIdx.z, kh = blockIdx.y, group = NH / NKV;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int64_t j0 = blockIdx.x * static_cast<int64_t>(kKeyTile);
  const float scale = 1.0f / sqrtf(static_cast<float>(HD));
  float kr[kKeysPerWarp][kDimsPerLane], vr[kKeysPerWarp][kDimsPerLane];
  float dka[kKeysPerWarp][kDimsPerLane], dva[kKeysPerWarp][kDimsPerLane];
#pragma unroll
  for (int r = 0; r < kKeysPerWarp; ++r) {
    const int64_t j = j0 + warp * kKeysPerWarp + r, jj = j < T_ ? j : 0;
    load_lane_dims(kr[r], k + (b * T_ + jj) * ld_kv + kh * HD, HD, 1.0f);
    load_lane_dims(vr[r], v + (b * T_ + jj) * ld_kv + kh * HD, HD, 1.0f);
#pragma unroll
    for (int kk = 0; kk < kDimsPerLane; ++kk) dka[r][kk] = dva[r][kk] = 0;
  }
  for (int64_t h = kh * group; h < (kh + 1) * group; ++h) {
    const T* qb = q + b * T_ * ld_q + h * HD;
    const T* ob = dout + b * T_ * NH * HD + h * HD;
    for (int64_t i0 = j0 / QT * QT; i0 < T_; i0 += QT) {
      __syncthreads();
      stage_rows(Qs, Os, qb, ob, ld_q, NH * HD, i0, QT, T_, HD);
      for (int e = threadIdx.x; e < QT; e += blockDim.x)
        if (i0 + e < T_) {
          Ls[e] = lse[(b * NH + h) * T_ + i0 + e];
          Ds[e] = Dbuf[(b * NH + h) * T_ + i0 + e];
        }
      __syncthreads();
#pragma unroll
      for (int r = 0; r < kKeysPerWarp; ++r) {
        const int64_t j = j0 + warp * kKeysPerWarp + r;
        if (j >= T_) continue;
        const int64_t i_end = i0 + QT < T_ ? i0 + QT : T_;
        for (int64_t i = i0 > j ? i0 : j; i < i_end; ++i) {
          const float* qi = Qs + (i - i0) * HD;
          const float* oi = Os + (i - i0) * HD;
          const float p = expf(warp_dot(kr[r], qi, HD) * scale - Ls[i - i0]);
          const float ds = p * (warp_dot(vr[r], oi, HD) - Ds[i - i0]) * scale;
#pragma unroll
          for (int kk = 0; kk < kDimsPerLane; ++kk) {
            const int d = lane + kk * kWarp;
            if (d < HD) {
              dka[r][kk] += ds * qi[d];
              dva[r][kk] += p * oi[d];
            }
          }
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < kKeysPerWarp; ++r) {
    const int64_t j = j0 + warp * kKeysPerWarp + r;
    if (j >= T_) continue;
    T* dkr = dk + (b * T_ + j) * ld_kv + kh * HD;
    T* dvr = dv + (b * T_ + j) * ld_kv + kh * HD;
#pragma unroll
    for (int kk = 0; kk < kDimsPerLane; ++kk) {
      const int d = lane + kk * kWarp;
      if (d < HD) {
        dkr[d] = from_f<T>(dka[r][kk]);
        dvr[d] = from_f<T>(dva[r][kk]);
      }
    }
  }
}

// Rotary embedding, rotate_half pairing; one thread per (row, head of q or k, pair d).
template <class T>
__global__ void rope_rotate_kernel(T* q, T* k, int64_t ld_q, int64_t ld_kv, int64_t N, int64_t T_, int64_t NH,
                                   int64_t NKV, int64_t HD, float theta, float sign) {
  const int64_t half = HD / 2, heads = NH + NKV;
  ZS_GRID_STRIDE(e, N * heads * half) {
    const int64_t d = e % half, hh = (e / half) % heads, n = e / (half * heads), t = n % T_;
    const float inv_freq = 1.0f / powf(theta, static_cast<float>(2 * d) / static_cast<float>(HD));
    const float ang = static_cast<float>(t) * inv_freq;
    const float c = cosf(ang), s = sign * sinf(ang);
    T* x = hh < NH ? q + n * ld_q + hh * HD : k + n * ld_kv + (hh - NH) * HD;
    const float x1 = to_f(x[d]), x2 = to_f(x[d + half]);
    x[d] = from_f<T>(x1 * c - x2 * s);
    x[d + half] = from_f<T>(x2 * c + x1 * s);
  }
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
cudaError_t rope_forward(T* q, T* k, int64_t ld_q, int64_t ld_kv, int64_t B, int64_t T_, int64_t NH, int64_t NKV,
                         int64_t HD, float theta, cudaStream_t s) {
  const int64_t work = B * T_ * (NH + NKV) * (HD / 2);
  if (work <= 0) return cudaSuccess;
  rope_rotate_kernel<T><<<blocks_for(work), kThreads, 0, s>>>(q, k, ld_q, ld_kv, B * T_, T_, NH, NKV, HD, theta, 1.0f);
  return launched();
}
template <class T>
cudaError_t rope_backward(T* dq, T* dk, int64_t ld_q, int64_t ld_kv, int64_t B, int64_t T_, int64_t NH, int64_t NKV,
                          int64_t HD, float theta, cudaStream_t s) {
  const int64_t work = B * T_ * (NH + NKV) * (HD / 2);
  if (work <= 0) return cudaSuccess;
  rope_rotate_kernel<T>
      <<<blocks_for(work), kThreads, 0, s>>>(dq, dk, ld_q, ld_kv, B * T_, T_, NH, NKV, HD, theta, -1.0f);
  return launched();
}

namespace {
bool attention_shape_ok(int64_t NH, int64_t NKV, int64_t HD) {
  return HD > 0 && HD <= kMaxHeadDim && NKV > 0 && NH % NKV == 0;
}
size_t staged_bytes(int64_t HD, int extra_floats) {
  return sizeof(float) * static_cast<size_t>(2 * staged_rows(HD) * HD + extra_floats);
}
}  // namespace

template <class T>
cudaError_t attention_forward(T* out, float* lse, const T* q, const T* k, const T* v, int64_t ld_q, int64_t ld_kv,
                              int64_t B, int64_t T_, int64_t NH, int64_t NKV, int64_t HD, cudaStream_t s) {
  if (!attention_shape_ok(NH, NKV, HD)) return cudaErrorInvalidValue;
  if (B * T_ <= 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>((T_ + kQueryTile - 1) / kQueryTile), static_cast<unsigned>(NH),
                  static_cast<unsigned>(B));
  flash_attention_forward_kernel<T>
      <<<grid, kAttWarps * kWarp, staged_bytes(HD, 0), s>>>(out, lse, q, k, v, ld_q, ld_kv, T_, NH, NKV, HD);
  return launched();
}

template <class T>
cudaError_t attention_backward(T* dq, T* dk, T* dv, const T* dout, const T* q, const T* k, const T* v, const float* lse,
                               int64_t ld_q, int64_t ld_kv, int64_t B, int64_t T_, int64_t NH, int64_t NKV, int64_t HD,
                               cudaStream_t s) {
  if (!attention_shape_ok(NH, NKV, HD)) return cudaErrorInvalidValue;
  if (B * T_ <= 0) return cudaSuccess;
  const int64_t N = B * T_;
  // One allocation of attention_backward_scratch_bytes: D [B, NH, T] fp32, then dq [N, NH·HD] T.
  Scratch scratch(static_cast<size_t>(attention_backward_scratch_bytes(B, T_, NH, HD, sizeof(T))), s);
  if (scratch.err != cudaSuccess) return scratch.err;
  float* Dbuf = scratch.as<float>();
  T* dq_tmp = reinterpret_cast<T*>(Dbuf + B * NH * T_);
  const dim3 qgrid(static_cast<unsigned>((T_ + kQueryTile - 1) / kQueryTile), static_cast<unsigned>(NH),
                   static_cast<unsigned>(B));
  flash_attention_backward_query_kernel<T><<<qgrid, kAttWarps * kWarp, staged_bytes(HD, 0), s>>>(
      dq_tmp, Dbuf, dout, q, k, v, lse, ld_q, ld_kv, T_, NH, NKV, HD);
  const dim3 kgrid(static_cast<unsigned>((T_ + kKeyTile - 1) / kKeyTile), static_cast<unsigned>(NKV),
                   static_cast<unsigned>(B));
  flash_attention_backward_key_kernel<T><<<kgrid, kAttWarps * kWarp, staged_bytes(HD, 2 * staged_rows(HD)), s>>>(
      dk, dv, dout, q, k, v, lse, Dbuf, ld_q, ld_kv, T_, NH, NKV, HD);
  // dq may alias q: it is written only now, after the key pass has read q.
  const cudaError_t e =
      cudaMemcpy2DAsync(dq, sizeof(T) * static_cast<size_t>(ld_q), dq_tmp, sizeof(T) * static_cast<size_t>(NH * HD),
                        sizeof(T) * static_cast<size_t>(NH * HD), static_cast<size_t>(N), cudaMemcpyDeviceToDevice, s);
  if (e != cudaSuccess) return e;
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
  if (overwrite) return cudaMemcpyAsync(dst, src, sizeof(T) * static_cast<size_t>(n), cudaMemcpyDeviceToDevice, s);
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
  template cudaError_t rope_forward<T>(T*, T*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, float,  \
                                       cudaStream_t);                                                                 \
  template cudaError_t rope_backward<T>(T*, T*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, float, \
                                        cudaStream_t);                                                                \
  template cudaError_t attention_forward<T>(T*, float*, const T*, const T*, const T*, int64_t, int64_t, int64_t,      \
                                            int64_t, int64_t, int64_t, int64_t, cudaStream_t);                        \
  template cudaError_t attention_backward<T>(T*, T*, T*, const T*, const T*, const T*, const T*, const float*,        \
                                             int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,           \
                                             cudaStream_t);                                                           \
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
