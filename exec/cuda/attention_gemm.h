// Causal self-attention (GQA) as batched cuBLASLt GEMMs on the tensor cores around a row softmax kernel: the
// arguments and results of gpu::attention_forward / attention_backward (kernels.cuh; dq, dk, dv may alias q, k, v),
// with the T×T scores materialised a chunk of heads at a time. The flash-style kernels of kernels_attention.cu run
// on the CUDA cores (bench_cuda_kernels: 2.7 / 1.6 TFLOPS on an H200 at T 1024, HD 128); this path runs the same
// FLOPs (twice: the masked half too) at GEMM rates. Probabilities enter the P·V and dS GEMMs rounded to T, as in
// FlashAttention; every sum is fp32.
// Scratch from the stream's pool (cudaMallocAsync; outside the device's MemoryAccount, like the kernels' scratch):
// head-major copies of q, k, v (and dO, dq, fp32 dk/dv sums) plus `chunk_bytes` for the scores of a chunk of heads.
//   ZS_TRY(attention_forward_gemm(gemm, out, lse, q, k, v, ld, ld, B, T, NH, NKV, HD, stream));
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/status.h"
#include "exec/cuda/gemm.h"

namespace zs::exec {

constexpr int64_t kAttentionChunkBytes = int64_t{512} << 20;

template <class T>
core::Status attention_forward_gemm(CublasLtGemm& g, T* out, float* lse, const T* q, const T* k, const T* v,
                                    int64_t ld_q, int64_t ld_kv, int64_t B, int64_t T_, int64_t NH, int64_t NKV,
                                    int64_t HD, cudaStream_t s, int64_t chunk_bytes = kAttentionChunkBytes);
template <class T>
core::Status attention_backward_gemm(CublasLtGemm& g, T* dq, T* dk, T* dv, const T* dout, const T* q, const T* k,
                                     const T* v, const float* lse, int64_t ld_q, int64_t ld_kv, int64_t B, int64_t T_,
                                     int64_t NH, int64_t NKV, int64_t HD, cudaStream_t s,
                                     int64_t chunk_bytes = kAttentionChunkBytes);

}  // namespace zs::exec
