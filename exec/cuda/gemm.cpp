// cuBLASLt GEMMs for the linear layers (gemm.h). Layout algebra, with row-major X[r, c] = column-major Xᵀ:
//   forward  outᵀ[OUT, N]  = Wᵀ · inpᵀ          in_out: W stored as [OUT, IN] col-major (no op); out_in: op T
//   dinp     dinpᵀ[IN, N]  = W  · doutᵀ         in_out: op T on the stored [OUT, IN];        out_in: no op
//   dW       in_out: dWᵀ[OUT, IN] = doutᵀ · inp  (B = inpᵀ stored [IN, N], op T)
//            out_in: dW[IN, OUT]  = inpᵀ · dout  (B = doutᵀ stored [OUT, N], op T)
#include "exec/cuda/gemm.h"

#include <cublasLt.h>

#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#include "exec/cuda/cuda_check.h"
#include "exec/cuda/kernels.cuh"
#include "exec/storage_types.h"

namespace zs::exec {
namespace {

core::Error cublas_error(cublasStatus_t st, const char* what, const char* file, int line) {
  return core::Error{core::ErrorKind::io, std::string("cuBLASLt error ") + cublasLtGetStatusName(st) + " (" +
                                              cublasLtGetStatusString(st) + ") in " + what + " at " + file + ":" +
                                              std::to_string(line)};
}
#define ZS_CUBLAS_TRY(expr)                                                                          \
  do {                                                                                               \
    const cublasStatus_t zs_cb_s_ = (expr);                                                          \
    if (zs_cb_s_ != CUBLAS_STATUS_SUCCESS) return cublas_error(zs_cb_s_, #expr, __FILE__, __LINE__); \
  } while (0)

template <class T>
cudaDataType_t data_type() {
  if constexpr (std::is_same_v<T, float>) return CUDA_R_32F;
  if constexpr (std::is_same_v<T, bf16_t>) return CUDA_R_16BF;
  if constexpr (std::is_same_v<T, fp16_t>) return CUDA_R_16F;
}

// The largest power of two (≤ 256) dividing the address.
uint32_t alignment_of(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  uint32_t al = 256;
  while (al > 1 && a % al != 0) al /= 2;
  return al;
}

// RAII for the per-call descriptors.
struct Descs {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~Descs() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

}  // namespace

core::Result<CublasLtGemm> CublasLtGemm::create(int64_t workspace_bytes) {
  CublasLtGemm g;
  cublasLtHandle_t h = nullptr;
  ZS_CUBLAS_TRY(cublasLtCreate(&h));
  g.handle_ = h;
  if (workspace_bytes > 0) {
    ZS_CUDA_TRY(cudaMalloc(&g.workspace_, static_cast<size_t>(workspace_bytes)));
    g.workspace_bytes_ = workspace_bytes;
  }
  return g;
}

CublasLtGemm::~CublasLtGemm() { release(); }

void CublasLtGemm::release() {
  if (workspace_) (void)cudaFree(workspace_);
  if (handle_) cublasLtDestroy(static_cast<cublasLtHandle_t>(handle_));
  workspace_ = handle_ = nullptr;
  workspace_bytes_ = 0;
}

CublasLtGemm& CublasLtGemm::operator=(CublasLtGemm&& o) noexcept {
  if (this != &o) {
    release();
    handle_ = o.handle_;
    workspace_ = o.workspace_;
    workspace_bytes_ = o.workspace_bytes_;
    algos_ = std::move(o.algos_);
    o.handle_ = nullptr;
    o.workspace_ = nullptr;
    o.workspace_bytes_ = 0;
  }
  return *this;
}

core::Status CublasLtGemm::gemm(const Call& c, cudaStream_t s) {
  if (!handle_) return core::internal_error("CublasLtGemm used before create()");
  if (c.m <= 0 || c.n <= 0 || c.batch <= 0) return {};
  const auto t = static_cast<cudaDataType_t>(c.dtype);
  const auto td = c.d_dtype >= 0 ? static_cast<cudaDataType_t>(c.d_dtype) : t;
  if (c.k <= 0) {  // an empty sum (no rows): D = beta·D, i.e. zero when overwriting; bias only matters with rows
    if (c.beta != 0.0f) return {};
    const size_t esize = td == CUDA_R_32F ? 4 : 2;
    for (int i = 0; i < c.batch; ++i)
      ZS_CUDA_TRY(cudaMemset2DAsync(static_cast<char*>(c.d) + static_cast<size_t>(i * c.stride_d) * esize,
                                    static_cast<size_t>(c.ldd) * esize, 0, static_cast<size_t>(c.m) * esize,
                                    static_cast<size_t>(c.n), s));
    return {};
  }
  Descs ds;
  // fp32 storage stays fp32 (CUBLAS_COMPUTE_32F never uses TF32 unless asked); 16-bit storage accumulates in fp32.
  ZS_CUBLAS_TRY(cublasLtMatmulDescCreate(&ds.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t ta = c.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = c.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  ZS_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(ds.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  ZS_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(ds.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  if (c.bias) {
    const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
    ZS_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(ds.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    ZS_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(ds.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &c.bias, sizeof c.bias));
    ZS_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(ds.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &td, sizeof td));
  }
  // Stored shapes: op(A) is m×k, op(B) is k×n.
  const uint64_t a_rows = static_cast<uint64_t>(c.trans_a ? c.k : c.m),
                 a_cols = static_cast<uint64_t>(c.trans_a ? c.m : c.k);
  const uint64_t b_rows = static_cast<uint64_t>(c.trans_b ? c.n : c.k),
                 b_cols = static_cast<uint64_t>(c.trans_b ? c.k : c.n);
  ZS_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&ds.a, t, a_rows, a_cols, c.lda));
  ZS_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&ds.b, t, b_rows, b_cols, c.ldb));
  ZS_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&ds.d, td, static_cast<uint64_t>(c.m), static_cast<uint64_t>(c.n), c.ldd));
  if (c.batch > 1) {
    const int32_t count = c.batch;
    for (auto [l, stride] : {std::pair{ds.a, c.stride_a}, std::pair{ds.b, c.stride_b}, std::pair{ds.d, c.stride_d}}) {
      const int64_t st = stride;
      ZS_CUBLAS_TRY(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
      ZS_CUBLAS_TRY(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &st, sizeof st));
    }
  }
  // The heuristic assumes 256-byte-aligned pointers unless told: tensors inside flat buffers often are not.
  const uint32_t align_a = alignment_of(c.a), align_b = alignment_of(c.b), align_d = alignment_of(c.d);
  auto lt = static_cast<cublasLtHandle_t>(handle_);
  const std::string key = std::to_string(c.dtype) + "," + std::to_string(td) + "," + std::to_string(c.trans_a) +
                          std::to_string(c.trans_b) + "," + std::to_string(c.m) + "," + std::to_string(c.n) + "," +
                          std::to_string(c.k) + "," + std::to_string(c.lda) + "," + std::to_string(c.ldb) + "," +
                          std::to_string(c.ldd) + "," + std::to_string(c.batch) + "," + std::to_string(c.stride_a) +
                          "," + std::to_string(c.stride_b) + "," + std::to_string(c.stride_d) + "," +
                          std::to_string(c.bias != nullptr) + "," + std::to_string(align_a) + "," +
                          std::to_string(align_b) + "," + std::to_string(align_d);
  if (!algos_) algos_ = std::make_shared<std::map<std::string, std::array<uint64_t, 8>>>();
  cublasLtMatmulAlgo_t algo{};
  static_assert(sizeof(algo) == sizeof(std::array<uint64_t, 8>));
  if (auto it = algos_->find(key); it != algos_->end()) {
    std::memcpy(&algo, it->second.data(), sizeof algo);
  } else {
    ZS_CUBLAS_TRY(cublasLtMatmulPreferenceCreate(&ds.pref));
    const uint64_t ws = static_cast<uint64_t>(workspace_bytes_);
    ZS_CUBLAS_TRY(
        cublasLtMatmulPreferenceSetAttribute(ds.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    ZS_CUBLAS_TRY(cublasLtMatmulPreferenceSetAttribute(ds.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_a,
                                                       sizeof align_a));
    ZS_CUBLAS_TRY(cublasLtMatmulPreferenceSetAttribute(ds.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_b,
                                                       sizeof align_b));
    ZS_CUBLAS_TRY(cublasLtMatmulPreferenceSetAttribute(ds.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_d,
                                                       sizeof align_d));
    ZS_CUBLAS_TRY(cublasLtMatmulPreferenceSetAttribute(ds.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_d,
                                                       sizeof align_d));
    cublasLtMatmulHeuristicResult_t best{};
    int found = 0;
    ZS_CUBLAS_TRY(cublasLtMatmulAlgoGetHeuristic(lt, ds.op, ds.a, ds.b, ds.d, ds.d, ds.pref, 1, &best, &found));
    if (found == 0)
      return core::Error{core::ErrorKind::unsupported, "cuBLASLt has no algorithm for a " + std::to_string(c.m) +
                                                           "x" + std::to_string(c.n) + "x" + std::to_string(c.k) +
                                                           " GEMM of this type and layout"};
    algo = best.algo;
    std::array<uint64_t, 8> raw{};
    std::memcpy(raw.data(), &algo, sizeof algo);
    (*algos_)[key] = raw;
  }
  ZS_CUBLAS_TRY(cublasLtMatmul(lt, ds.op, &c.alpha, c.a, ds.a, c.b, ds.b, &c.beta, c.d, ds.d, c.d, ds.d, &algo,
                               workspace_, workspace_bytes_, s));
  return {};
}

template <class T>
core::Status CublasLtGemm::matmul_forward(T* out, const T* inp, const T* weight, const T* bias, int64_t N, int64_t IN,
                                          int64_t OUT, WeightLayout layout, cudaStream_t s) {
  const bool in_out = layout == WeightLayout::in_out;
  Call c;
  c.dtype = data_type<T>();
  c.trans_a = !in_out;
  c.m = OUT;
  c.n = N;
  c.k = IN;
  c.a = weight;
  c.lda = in_out ? OUT : IN;
  c.b = inp;
  c.ldb = IN;
  c.d = out;
  c.ldd = OUT;
  c.bias = bias;
  return gemm(c, s);
}

template <class T>
core::Status CublasLtGemm::matmul_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                                           int64_t N, int64_t IN, int64_t OUT, WeightLayout layout, GradWrite w,
                                           bool accumulate_dinp, cudaStream_t s) {
  const bool in_out = layout == WeightLayout::in_out;
  const float beta_w = w == GradWrite::accumulate ? 1.0f : 0.0f;
  Call dw;
  dw.dtype = data_type<T>();
  dw.trans_b = true;
  dw.k = N;
  dw.beta = beta_w;
  dw.d = dweight;
  if (in_out) {
    dw.m = OUT, dw.n = IN, dw.a = dout, dw.lda = OUT, dw.b = inp, dw.ldb = IN, dw.ldd = OUT;
  } else {
    dw.m = IN, dw.n = OUT, dw.a = inp, dw.lda = IN, dw.b = dout, dw.ldb = OUT, dw.ldd = IN;
  }
  ZS_TRY(gemm(dw, s));
  if (dbias) ZS_CUDA_TRY(gpu::bias_backward(dbias, dout, N, OUT, w, s));
  if (!dinp) return {};
  // After dW: dinp may alias inp.
  Call dx;
  dx.dtype = data_type<T>();
  dx.trans_a = in_out;
  dx.m = IN;
  dx.n = N;
  dx.k = OUT;
  dx.a = weight;
  dx.lda = in_out ? OUT : IN;
  dx.b = dout;
  dx.ldb = OUT;
  dx.d = dinp;
  dx.ldd = IN;
  dx.beta = accumulate_dinp ? 1.0f : 0.0f;
  return gemm(dx, s);
}

#define ZS_GEMM_INSTANTIATE(T)                                                                                       \
  template core::Status CublasLtGemm::matmul_forward<T>(T*, const T*, const T*, const T*, int64_t, int64_t, int64_t, \
                                                        WeightLayout, cudaStream_t);                                 \
  template core::Status CublasLtGemm::matmul_backward<T>(T*, T*, T*, const T*, const T*, const T*, int64_t, int64_t, \
                                                         int64_t, WeightLayout, GradWrite, bool, cudaStream_t);
ZS_GEMM_INSTANTIATE(float)
ZS_GEMM_INSTANTIATE(bf16_t)
ZS_GEMM_INSTANTIATE(fp16_t)

}  // namespace zs::exec
