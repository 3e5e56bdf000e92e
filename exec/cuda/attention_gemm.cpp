// Attention as batched GEMMs (attention_gemm.h). Per query head h = kvh·g + j of sequence b, in column-major terms
// (X_c = Xᵀ of a row-major [T, HD] head, ld HD in the head-major copies):
//   scores  S_c  = scale · K_cᵀ Q_c          [T keys × T queries] = row-major S[i][j]
//   forward O_c  = V_c · P_c                 P = causal softmax of S's rows, rounded to T
//   backward dV_c += dO_c · P_cᵀ,  dP_c = V_cᵀ dO_c,  dS = P ⊙ (dP − Σ_j P·dP),
//            dQ_c = scale · K_c · dS_c,  dK_c += scale · Q_c · dS_cᵀ   (sums over the g heads of a kv head in fp32)
// Batched over the (b, kvh) pairs of one j, a chunk at a time: the head-major layout gives every operand one stride.
#include "exec/cuda/attention_gemm.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "exec/cuda/cuda_check.h"
#include "exec/cuda/kernels.cuh"
#include "exec/storage_types.h"

namespace zs::exec {
namespace {

template <class T>
int data_type() {
  if constexpr (std::is_same_v<T, float>) return CUDA_R_32F;
  if constexpr (std::is_same_v<T, bf16_t>) return CUDA_R_16BF;
  return CUDA_R_16F;
}

// Stream-ordered scratch: freed on the stream after the work queued before the free.
class StreamScratch {
 public:
  explicit StreamScratch(cudaStream_t s) : s_(s) {}
  ~StreamScratch() {
    if (p_) (void)cudaFreeAsync(p_, s_);
  }
  StreamScratch(const StreamScratch&) = delete;
  StreamScratch& operator=(const StreamScratch&) = delete;
  core::Status allocate(int64_t bytes) {
    ZS_CUDA_TRY(cudaMallocAsync(&p_, static_cast<size_t>(std::max<int64_t>(bytes, 256)), s_));
    return {};
  }
  // Carves `bytes` (256-aligned) off the allocation.
  template <class U>
  U* take(int64_t bytes) {
    auto* r = reinterpret_cast<U*>(static_cast<char*>(p_) + used_);
    used_ += (bytes + 255) / 256 * 256;
    return r;
  }
  static int64_t carve(int64_t bytes) { return (bytes + 255) / 256 * 256; }

 private:
  cudaStream_t s_;
  void* p_ = nullptr;
  int64_t used_ = 0;
};

core::Status check(cudaError_t e, const char* what) {
  return e == cudaSuccess ? core::Status{} : cuda_error(e, what, __FILE__, __LINE__);
}

// The shapes both directions share: query heads per kv head, one head's elements [T, HD], one score block [T, T],
// the (sequence, kv head) batch items, and how many items a chunk of `per_item` bytes per score element holds.
struct Dims {
  int64_t grp = 0, eb = 0, head = 0, tt = 0, items = 0, chunk = 0;
};
core::Result<Dims> dims(int64_t B, int64_t T_, int64_t NH, int64_t NKV, int64_t HD, int64_t eb, int64_t per_item,
                        int64_t chunk_bytes) {
  if (HD <= 0 || NKV <= 0 || NH % NKV != 0)
    return core::bad_input("attention: heads " + std::to_string(NH) + " / kv heads " + std::to_string(NKV) +
                           " / head dim " + std::to_string(HD));
  Dims d;
  d.grp = NH / NKV, d.eb = eb, d.head = T_ * HD, d.tt = T_ * T_, d.items = B * NKV;
  d.chunk = std::clamp<int64_t>(chunk_bytes / (d.tt * per_item), 1, d.items);
  return d;
}

}  // namespace

template <class T>
core::Status attention_forward_gemm(CublasLtGemm& g, T* out, float* lse, const T* q, const T* k, const T* v,
                                    int64_t ld_q, int64_t ld_kv, int64_t B, int64_t T_, int64_t NH, int64_t NKV,
                                    int64_t HD, cudaStream_t s, int64_t chunk_bytes) {
  if (B * T_ <= 0) return {};
  auto dm = dims(B, T_, NH, NKV, HD, sizeof(T), 4 + sizeof(T), chunk_bytes);  // scores fp32, probabilities T
  if (!dm) return dm.error();
  const auto [grp, eb, head, tt, items, chunk] = *dm;
  StreamScratch sc(s);
  ZS_TRY(sc.allocate(StreamScratch::carve(2 * B * NH * head * eb) + StreamScratch::carve(2 * items * head * eb) +
                     StreamScratch::carve(chunk * tt * 4) + StreamScratch::carve(chunk * tt * eb) + 1024));
  T* qh = sc.take<T>(B * NH * head * eb);
  T* oh = sc.take<T>(B * NH * head * eb);
  T* kh = sc.take<T>(items * head * eb);
  T* vh = sc.take<T>(items * head * eb);
  float* sbuf = sc.take<float>(chunk * tt * 4);
  T* pbuf = sc.take<T>(chunk * tt * eb);
  ZS_TRY(check(gpu::gather_heads<T>(qh, q, ld_q, B, T_, NH, HD, s), "gather_heads q"));
  ZS_TRY(check(gpu::gather_heads<T>(kh, k, ld_kv, B, T_, NKV, HD, s), "gather_heads k"));
  ZS_TRY(check(gpu::gather_heads<T>(vh, v, ld_kv, B, T_, NKV, HD, s), "gather_heads v"));
  const float scale = 1.0f / std::sqrt(static_cast<float>(HD));
  for (int64_t j = 0; j < grp; ++j)
    for (int64_t it0 = 0; it0 < items; it0 += chunk) {
      const int n = static_cast<int>(std::min(chunk, items - it0));
      CublasLtGemm::Call sc_;  // S_c = scale · K_cᵀ Q_c
      sc_.dtype = data_type<T>();
      sc_.d_dtype = CUDA_R_32F;
      sc_.trans_a = true;
      sc_.m = T_, sc_.n = T_, sc_.k = HD;
      sc_.a = kh + it0 * head, sc_.lda = HD;
      sc_.b = qh + (it0 * grp + j) * head, sc_.ldb = HD;
      sc_.d = sbuf, sc_.ldd = T_;
      sc_.alpha = scale;
      sc_.batch = n, sc_.stride_a = head, sc_.stride_b = grp * head, sc_.stride_d = tt;
      ZS_TRY(g.gemm(sc_, s));
      ZS_TRY(check(gpu::causal_softmax_rows<T>(pbuf, sbuf, lse + (it0 * grp + j) * T_, n, T_, grp * T_, s),
                   "causal_softmax_rows"));
      CublasLtGemm::Call o;  // O_c = V_c · P_c
      o.dtype = data_type<T>();
      o.m = HD, o.n = T_, o.k = T_;
      o.a = vh + it0 * head, o.lda = HD;
      o.b = pbuf, o.ldb = T_;
      o.d = oh + (it0 * grp + j) * head, o.ldd = HD;
      o.batch = n, o.stride_a = head, o.stride_b = tt, o.stride_d = grp * head;
      ZS_TRY(g.gemm(o, s));
    }
  return check(gpu::scatter_heads<T, T>(out, oh, NH * HD, B, T_, NH, HD, s), "scatter_heads out");
}

template <class T>
core::Status attention_backward_gemm(CublasLtGemm& g, T* dq, T* dk, T* dv, const T* dout, const T* q, const T* k,
                                     const T* v, const float* lse, int64_t ld_q, int64_t ld_kv, int64_t B, int64_t T_,
                                     int64_t NH, int64_t NKV, int64_t HD, cudaStream_t s, int64_t chunk_bytes) {
  if (B * T_ <= 0) return {};
  auto dm = dims(B, T_, NH, NKV, HD, sizeof(T), 8 + sizeof(T), chunk_bytes);  // P and dP fp32, P then dS in T
  if (!dm) return dm.error();
  const auto [grp, eb, head, tt, items, chunk] = *dm;
  StreamScratch sc(s);
  ZS_TRY(sc.allocate(3 * StreamScratch::carve(B * NH * head * eb) + 2 * StreamScratch::carve(items * head * eb) +
                     2 * StreamScratch::carve(items * head * 4) + 2 * StreamScratch::carve(chunk * tt * 4) +
                     StreamScratch::carve(chunk * tt * eb) + 1024));
  T* qh = sc.take<T>(B * NH * head * eb);
  T* doh = sc.take<T>(B * NH * head * eb);
  T* dqh = sc.take<T>(B * NH * head * eb);
  T* kh = sc.take<T>(items * head * eb);
  T* vh = sc.take<T>(items * head * eb);
  float* dk_sum = sc.take<float>(items * head * 4);
  float* dv_sum = sc.take<float>(items * head * 4);
  float* pbuf = sc.take<float>(chunk * tt * 4);   // S, then P in fp32
  float* dpbuf = sc.take<float>(chunk * tt * 4);  // dP
  T* tbuf = sc.take<T>(chunk * tt * eb);          // P rounded to T, then dS
  // Every input is copied before any output is written: dq, dk, dv may alias q, k, v.
  ZS_TRY(check(gpu::gather_heads<T>(qh, q, ld_q, B, T_, NH, HD, s), "gather_heads q"));
  ZS_TRY(check(gpu::gather_heads<T>(kh, k, ld_kv, B, T_, NKV, HD, s), "gather_heads k"));
  ZS_TRY(check(gpu::gather_heads<T>(vh, v, ld_kv, B, T_, NKV, HD, s), "gather_heads v"));
  ZS_TRY(check(gpu::gather_heads<T>(doh, dout, NH * HD, B, T_, NH, HD, s), "gather_heads dout"));
  const float scale = 1.0f / std::sqrt(static_cast<float>(HD));
  const int t = data_type<T>();
  for (int64_t j = 0; j < grp; ++j)
    for (int64_t it0 = 0; it0 < items; it0 += chunk) {
      const int n = static_cast<int>(std::min(chunk, items - it0));
      const T* qj = qh + (it0 * grp + j) * head;
      const T* doj = doh + (it0 * grp + j) * head;
      const T* kj = kh + it0 * head;
      const T* vj = vh + it0 * head;
      const float beta = j > 0 ? 1.0f : 0.0f;  // the kv head's sums over its g query heads
      CublasLtGemm::Call c;  // S_c = scale · K_cᵀ Q_c
      c.dtype = t, c.d_dtype = CUDA_R_32F, c.trans_a = true;
      c.m = T_, c.n = T_, c.k = HD;
      c.a = kj, c.lda = HD, c.b = qj, c.ldb = HD, c.d = pbuf, c.ldd = T_, c.alpha = scale;
      c.batch = n, c.stride_a = head, c.stride_b = grp * head, c.stride_d = tt;
      ZS_TRY(g.gemm(c, s));
      ZS_TRY(check(gpu::causal_probs_from_lse<T>(pbuf, tbuf, lse + (it0 * grp + j) * T_, n, T_, grp * T_, s),
                   "causal_probs_from_lse"));
      c = {};  // dV_c += dO_c · P_cᵀ
      c.dtype = t, c.d_dtype = CUDA_R_32F, c.trans_b = true;
      c.m = HD, c.n = T_, c.k = T_;
      c.a = doj, c.lda = HD, c.b = tbuf, c.ldb = T_, c.d = dv_sum + it0 * head, c.ldd = HD, c.beta = beta;
      c.batch = n, c.stride_a = grp * head, c.stride_b = tt, c.stride_d = head;
      ZS_TRY(g.gemm(c, s));
      c = {};  // dP_c = V_cᵀ dO_c
      c.dtype = t, c.d_dtype = CUDA_R_32F, c.trans_a = true;
      c.m = T_, c.n = T_, c.k = HD;
      c.a = vj, c.lda = HD, c.b = doj, c.ldb = HD, c.d = dpbuf, c.ldd = T_;
      c.batch = n, c.stride_a = head, c.stride_b = grp * head, c.stride_d = tt;
      ZS_TRY(g.gemm(c, s));
      ZS_TRY(check(gpu::softmax_grad_rows<T>(tbuf, pbuf, dpbuf, n, T_, s), "softmax_grad_rows"));
      c = {};  // dQ_c = scale · K_c · dS_c
      c.dtype = t;
      c.m = HD, c.n = T_, c.k = T_;
      c.a = kj, c.lda = HD, c.b = tbuf, c.ldb = T_, c.d = dqh + (it0 * grp + j) * head, c.ldd = HD, c.alpha = scale;
      c.batch = n, c.stride_a = head, c.stride_b = tt, c.stride_d = grp * head;
      ZS_TRY(g.gemm(c, s));
      c = {};  // dK_c += scale · Q_c · dS_cᵀ
      c.dtype = t, c.d_dtype = CUDA_R_32F, c.trans_b = true;
      c.m = HD, c.n = T_, c.k = T_;
      c.a = qj, c.lda = HD, c.b = tbuf, c.ldb = T_, c.d = dk_sum + it0 * head, c.ldd = HD, c.alpha = scale,
      c.beta = beta;
      c.batch = n, c.stride_a = grp * head, c.stride_b = tt, c.stride_d = head;
      ZS_TRY(g.gemm(c, s));
    }
  ZS_TRY(check(gpu::scatter_heads<T, T>(dq, dqh, ld_q, B, T_, NH, HD, s), "scatter_heads dq"));
  ZS_TRY(check(gpu::scatter_heads<T, float>(dk, dk_sum, ld_kv, B, T_, NKV, HD, s), "scatter_heads dk"));
  return check(gpu::scatter_heads<T, float>(dv, dv_sum, ld_kv, B, T_, NKV, HD, s), "scatter_heads dv");
}

#define ZS_ATTN_GEMM_INSTANTIATE(T)                                                                                 \
  template core::Status attention_forward_gemm<T>(CublasLtGemm&, T*, float*, const T*, const T*, const T*, int64_t, \
                                                  int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,             \
                                                  cudaStream_t, int64_t);                                           \
  template core::Status attention_backward_gemm<T>(CublasLtGemm&, T*, T*, T*, const T*, const T*, const T*,         \
                                                   const T*, const float*, int64_t, int64_t, int64_t, int64_t,      \
                                                   int64_t, int64_t, int64_t, cudaStream_t, int64_t);
ZS_ATTN_GEMM_INSTANTIATE(float)
ZS_ATTN_GEMM_INSTANTIATE(bf16_t)
ZS_ATTN_GEMM_INSTANTIATE(fp16_t)

}  // namespace zs::exec
