// CUDA attention (kernels.cuh): rotary embeddings and a flash-style causal attention, forward and backward (query
// pass for dq, key pass for dk and dv), with grouped KV heads; head sizes up to 256. Three storage types, sm_80 and
// sm_90.
#include "exec/cuda/kernels.cuh"
#include "exec/cuda/kernels_common.cuh"

namespace zs::exec::gpu {
namespace {

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

}  // namespace

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

#define ZS_GPU_INSTANTIATE(T)                                                                                         \
  template cudaError_t rope_forward<T>(T*, T*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, float,  \
                                       cudaStream_t);                                                                 \
  template cudaError_t rope_backward<T>(T*, T*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, float, \
                                        cudaStream_t);                                                                \
  template cudaError_t attention_forward<T>(T*, float*, const T*, const T*, const T*, int64_t, int64_t, int64_t,      \
                                            int64_t, int64_t, int64_t, int64_t, cudaStream_t);                        \
  template cudaError_t attention_backward<T>(T*, T*, T*, const T*, const T*, const T*, const T*, const float*,        \
                                             int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,           \
                                             cudaStream_t);

ZS_GPU_INSTANTIATE(float)
ZS_GPU_INSTANTIATE(bf16_t)
ZS_GPU_INSTANTIATE(fp16_t)

}  // namespace zs::exec::gpu
