// The linear layers on the GPU: matmul_forward / matmul_backward of exec/kernels_ref.h as cuBLASLt GEMMs with
// fp32 accumulation (bf16/fp16 storage; fp32 storage runs true fp32, no TF32), both weight layouts, the bias
// added in the GEMM epilogue and its gradient summed by bias_backward (kernels.cuh). Row-major tensors are
// column-major transposes to cuBLAS, so out[N, OUT] is computed as outᵀ = Wᵀ-or-W · inpᵀ without copies.
// GradWrite::accumulate and accumulate_dinp use beta = 1: dst + g rounded once (the reference rounds g first),
// a difference of at most one unit in the last place of the storage type.
//   auto g = CublasLtGemm::create();                         // Result: needs a GPU
//   ZS_TRY(g->matmul_forward(out, inp, w, bias, N, IN, OUT, WeightLayout::in_out, stream));
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "core/status.h"
#include "exec/kernels_ref.h"

namespace zs::exec {

// Owns a cublasLt handle and its workspace; move-only. One per device (and per host thread issuing GEMMs).
class CublasLtGemm {
 public:
  static constexpr int64_t kDefaultWorkspaceBytes = 32LL << 20;  // what cuBLASLt's heuristics want on Hopper
  static core::Result<CublasLtGemm> create(int64_t workspace_bytes = kDefaultWorkspaceBytes);
  CublasLtGemm() = default;
  ~CublasLtGemm();
  CublasLtGemm(CublasLtGemm&& o) noexcept { *this = static_cast<CublasLtGemm&&>(o); }
  CublasLtGemm& operator=(CublasLtGemm&& o) noexcept;
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;
  int64_t workspace_bytes() const { return workspace_bytes_; }

  // T: float, bf16_t, fp16_t (exec/storage_types.h). Same arguments as the reference plus the stream.
  template <class T>
  core::Status matmul_forward(T* out, const T* inp, const T* weight, const T* bias, int64_t N, int64_t IN, int64_t OUT,
                              WeightLayout layout, cudaStream_t s);
  template <class T>
  core::Status matmul_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, int64_t N,
                               int64_t IN, int64_t OUT, WeightLayout layout, GradWrite w, bool accumulate_dinp,
                               cudaStream_t s);

  // One column-major GEMM D = alpha·op(A)·op(B) + beta·D (D: m×n, ld ldd) with an optional bias[m] epilogue; or
  // `batch` of them, item i at a + i·stride_a, b + i·stride_b, d + i·stride_d (elements).
  struct Call {
    int dtype = 0;     // cudaDataType_t of A, B (and D)
    int d_dtype = -1;  // of D when it differs (fp32 scores from 16-bit operands), else -1
    bool trans_a = false, trans_b = false;
    int64_t m = 0, n = 0, k = 0;
    const void* a = nullptr;
    int64_t lda = 0;
    const void* b = nullptr;
    int64_t ldb = 0;
    void* d = nullptr;
    int64_t ldd = 0;
    float alpha = 1, beta = 0;
    const void* bias = nullptr;
    int batch = 1;
    int64_t stride_a = 0, stride_b = 0, stride_d = 0;
  };
  core::Status gemm(const Call& c, cudaStream_t s);

 private:
  void release();
  void* handle_ = nullptr;  // cublasLtHandle_t
  void* workspace_ = nullptr;
  int64_t workspace_bytes_ = 0;
  // The heuristic's algorithm per GEMM shape (a step issues the same few hundred shapes again and again).
  std::shared_ptr<std::map<std::string, std::array<uint64_t, 8>>> algos_;
};

}  // namespace zs::exec
