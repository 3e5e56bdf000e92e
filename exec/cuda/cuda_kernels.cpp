// The CUDA device's DeviceKernels (cuda_kernels.h): the GPT modules through gpt_model_run.h on the kernels of
// kernels.cuh and cuBLASLt, one GEMM handle per stream (a stream's work is launched from its one host thread).
#include "exec/cuda/cuda_kernels.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

#include "exec/cuda/attention_gemm.h"
#include "exec/cuda/cuda_check.h"
#include "exec/cuda/gemm.h"
#include "exec/cuda/kernels.cuh"
#include "exec/gpt_model_run.h"

namespace zs::exec {
namespace {

// The kernel set gpt_model_run.h runs a module on: every call queued on one stream; the first failure is kept
// (the module's calls return nothing, as the references do) and reported when the module has been queued.
class GpuKernelSet {
 public:
  // flash_attention: the CUDA-core kernels of kernels_attention.cu instead of attention_gemm.h's GEMMs.
  GpuKernelSet(CublasLtGemm& gemm, cudaStream_t s, bool flash_attention)
      : gemm_(gemm), s_(s), flash_(flash_attention) {}
  Status status() const { return st_; }

  template <class T>
  void embedding_forward(T* out, const int32_t* tokens, const T* table, int64_t N, int64_t C) {
    cuda(gpu::embedding_forward(out, tokens, table, N, C, s_), "embedding_forward");
  }
  template <class T>
  void embedding_backward(T* dtable, const T* dout, const int32_t* tokens, int64_t N, int64_t C, int64_t V,
                          GradWrite w) {
    cuda(gpu::embedding_backward(dtable, dout, tokens, N, C, V, w, s_), "embedding_backward");
  }
  template <class T>
  void position_forward(T* out, const T* wpe, int64_t B, int64_t T_, int64_t C) {
    cuda(gpu::position_forward(out, wpe, B, T_, C, s_), "position_forward");
  }
  template <class T>
  void position_backward(T* dwpe, const T* dout, int64_t B, int64_t T_, int64_t C, int64_t maxT, GradWrite w) {
    cuda(gpu::position_backward(dwpe, dout, B, T_, C, maxT, w, s_), "position_backward");
  }
  template <class T>
  void layernorm_forward(T* out, const T* inp, const T* w, const T* b, int64_t N, int64_t C, float eps) {
    cuda(gpu::layernorm_forward(out, inp, w, b, N, C, eps, s_), "layernorm_forward");
  }
  template <class T>
  void layernorm_backward(T* dinp, T* dw, T* db, const T* dout, const T* inp, const T* w, const T* dres, int64_t N,
                          int64_t C, float eps, GradWrite gw) {
    cuda(gpu::layernorm_backward(dinp, dw, db, dout, inp, w, dres, N, C, eps, gw, s_), "layernorm_backward");
  }
  template <class T>
  void rmsnorm_forward(T* out, const T* inp, const T* w, int64_t N, int64_t C, float eps) {
    cuda(gpu::rmsnorm_forward(out, inp, w, N, C, eps, s_), "rmsnorm_forward");
  }
  template <class T>
  void rmsnorm_backward(T* dinp, T* dw, const T* dout, const T* inp, const T* w, const T* dres, int64_t N, int64_t C,
                        float eps, GradWrite gw) {
    cuda(gpu::rmsnorm_backward(dinp, dw, dout, inp, w, dres, N, C, eps, gw, s_), "rmsnorm_backward");
  }
  template <class T>
  void matmul_forward(T* out, const T* inp, const T* w, const T* bias, int64_t N, int64_t IN, int64_t OUT,
                      WeightLayout layout) {
    keep(gemm_.matmul_forward(out, inp, w, bias, N, IN, OUT, layout, s_));
  }
  template <class T>
  void matmul_backward(T* dinp, T* dw, T* db, const T* dout, const T* inp, const T* w, int64_t N, int64_t IN,
                       int64_t OUT, WeightLayout layout, GradWrite gw, bool accumulate_dinp = false) {
    keep(gemm_.matmul_backward(dinp, dw, db, dout, inp, w, N, IN, OUT, layout, gw, accumulate_dinp, s_));
  }
  template <class T>
  void rope_forward(T* q, T* k, int64_t ld_q, int64_t ld_kv, int64_t B, int64_t T_, int64_t NH, int64_t NKV,
                    int64_t HD, float theta) {
    cuda(gpu::rope_forward(q, k, ld_q, ld_kv, B, T_, NH, NKV, HD, theta, s_), "rope_forward");
  }
  template <class T>
  void rope_backward(T* dq, T* dk, int64_t ld_q, int64_t ld_kv, int64_t B, int64_t T_, int64_t NH, int64_t NKV,
                     int64_t HD, float theta) {
    cuda(gpu::rope_backward(dq, dk, ld_q, ld_kv, B, T_, NH, NKV, HD, theta, s_), "rope_backward");
  }
  template <class T>
  void attention_forward(T* out, float* lse, const T* q, const T* k, const T* v, int64_t ld_q, int64_t ld_kv,
                         int64_t B, int64_t T_, int64_t NH, int64_t NKV, int64_t HD) {
    if (flash_)
      cuda(gpu::attention_forward(out, lse, q, k, v, ld_q, ld_kv, B, T_, NH, NKV, HD, s_), "attention_forward");
    else
      keep(attention_forward_gemm(gemm_, out, lse, q, k, v, ld_q, ld_kv, B, T_, NH, NKV, HD, s_));
  }
  template <class T>
  void attention_backward(T* dq, T* dk, T* dv, const T* dout, const T* q, const T* k, const T* v, const float* lse,
                          int64_t ld_q, int64_t ld_kv, int64_t B, int64_t T_, int64_t NH, int64_t NKV, int64_t HD) {
    if (flash_)
      cuda(gpu::attention_backward(dq, dk, dv, dout, q, k, v, lse, ld_q, ld_kv, B, T_, NH, NKV, HD, s_),
           "attention_backward");
    else
      keep(attention_backward_gemm(gemm_, dq, dk, dv, dout, q, k, v, lse, ld_q, ld_kv, B, T_, NH, NKV, HD, s_));
  }
  template <class T>
  void gelu_forward(T* out, const T* inp, int64_t n) {
    cuda(gpu::gelu_forward(out, inp, n, s_), "gelu_forward");
  }
  template <class T>
  void gelu_backward(T* dinp, const T* inp, const T* dout, int64_t n) {
    cuda(gpu::gelu_backward(dinp, inp, dout, n, s_), "gelu_backward");
  }
  template <class T>
  void swiglu_forward(T* out, const T* gate, const T* up, int64_t N, int64_t F, int64_t stride) {
    cuda(gpu::swiglu_forward(out, gate, up, N, F, stride, s_), "swiglu_forward");
  }
  template <class T>
  void swiglu_backward(T* dgate, T* dup, const T* dout, const T* gate, const T* up, int64_t N, int64_t F,
                       int64_t stride) {
    cuda(gpu::swiglu_backward(dgate, dup, dout, gate, up, N, F, stride, s_), "swiglu_backward");
  }
  template <class T>
  void residual_forward(T* out, const T* a, const T* b, int64_t n) {
    cuda(gpu::residual_forward(out, a, b, n, s_), "residual_forward");
  }
  template <class T>
  void crossentropy_forward(float* losses, float* probs, const T* logits, const int32_t* targets, int64_t N,
                            int64_t V) {
    cuda(gpu::crossentropy_forward(losses, probs, logits, targets, N, V, s_), "crossentropy_forward");
  }
  template <class T>
  void crossentropy_backward(T* dlogits, const float* probs, const int32_t* targets, int64_t N, int64_t V,
                             float dloss) {
    cuda(gpu::crossentropy_backward(dlogits, probs, targets, N, V, dloss, s_), "crossentropy_backward");
  }
  // The token losses go to the caller's page-locked buffer; it sums them once the step has run.
  void losses(const float* l, int64_t N, GptModel::Call& c) {
    if (!c.host_losses) {
      keep(core::Error{core::ErrorKind::internal, "cuda kernels: the lm_head forward needs Call::host_losses"});
      return;
    }
    cuda(cudaMemcpyAsync(c.host_losses, l, sizeof(float) * static_cast<size_t>(N), cudaMemcpyDefault, s_),
         "cudaMemcpyAsync (token losses)");
  }

 private:
  void cuda(cudaError_t e, const char* what) {
    if (e != cudaSuccess && st_.ok()) st_ = cuda_error(e, what, __FILE__, __LINE__);
  }
  void keep(Status s) {
    if (!s.ok() && st_.ok()) st_ = std::move(s);
  }
  CublasLtGemm& gemm_;
  cudaStream_t s_;
  bool flash_ = false;
  Status st_;
};

class CudaKernels : public DeviceKernels {
 public:
  // ZEROSIM_ATTENTION=flash selects the CUDA-core attention kernels (the default is attention_gemm.h's GEMMs).
  // The device's default memory pool (the kernels' stream-ordered scratch) keeps what it frees: its default
  // release threshold of 0 hands the memory back at every synchronize, and the next step maps it again.
  explicit CudaKernels(int device) : device_(device) {
    const char* a = std::getenv("ZEROSIM_ATTENTION");
    flash_ = a && std::string(a) == "flash";
    cudaMemPool_t pool = nullptr;
    if (cudaSetDevice(device) == cudaSuccess && cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess) {
      uint64_t keep = UINT64_MAX;
      (void)cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
    }
    (void)cudaGetLastError();
  }
  ~CudaKernels() override {
    if (dummy_) (void)cudaFree(dummy_);
  }
  std::string name() const override { return "cuda"; }

  Status forward(const GptModel& m, size_t module, GptModel::Call& c, void* stream) override {
    return run(m, module, c, false, stream);
  }
  Status backward(const GptModel& m, size_t module, GptModel::Call& c, void* stream) override {
    return run(m, module, c, true, stream);
  }
  Status copy(void* dst, const void* src, int64_t bytes, void* stream) override {
    if (bytes <= 0 || dst == src) return {};
    return ZS_CUDA_STATUS(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDefault, cs(stream)));
  }
  Status zero(void* dst, int64_t bytes, void* stream) override {
    if (bytes <= 0) return {};
    return ZS_CUDA_STATUS(cudaMemsetAsync(dst, 0, static_cast<size_t>(bytes), cs(stream)));
  }
  Status accumulate(DType t, void* dst, const void* src, int64_t n, bool overwrite, void* stream) override {
    const int64_t e = dtype_bytes(t);
    return staged(src, n, e, stream, [&](const void* part, int64_t off, int64_t len) {
      return ZS_CUDA_STATUS(dispatch(t, [&](auto tag) {
        using T = decltype(tag);
        return gpu::grad_accumulate<T>(static_cast<T*>(dst) + off, static_cast<const T*>(part), len,
                                       overwrite, cs(stream));
      }));
    }, /*copy_is_enough=*/overwrite);
  }
  Status to_f32(DType t, float* dst, const void* src, int64_t n, double* sumsq, void* stream) override {
    if (!sumsq) {  // the kernel always writes a sum: into a device scalar nobody reads
      std::lock_guard<std::mutex> lk(mu_);
      if (!dummy_) ZS_CUDA_TRY(cudaMalloc(&dummy_, sizeof(double)));
      sumsq = static_cast<double*>(dummy_);
    }
    return ZS_CUDA_STATUS(dispatch(t, [&](auto tag) {
      using T = decltype(tag);
      return gpu::cast_to_f32_sumsq<T>(dst, static_cast<const T*>(src), n, sumsq, cs(stream));
    }));
  }
  Status from_f32(DType t, void* dst, const float* src, int64_t n, void* stream) override {
    return staged(src, n, 4, stream, [&](const void* part, int64_t off, int64_t len) {
      return ZS_CUDA_STATUS(dispatch(t, [&](auto tag) {
        using T = decltype(tag);
        return gpu::cast_from_f32<T>(static_cast<T*>(dst) + off, static_cast<const float*>(part), len, cs(stream));
      }));
    });
  }
  Status scale(float* x, float mul, int64_t n, void* stream) override {
    return ZS_CUDA_STATUS(gpu::scale_f32(x, mul, n, cs(stream)));
  }
  Status adam(const AdamScalars& sc, const AdamBuffers& b, void* stream) override {
    return ZS_CUDA_STATUS(gpu::adam_step(sc, b, cs(stream)));
  }
  Status copy_sync(void* dst, const void* src, int64_t bytes) override {
    if (bytes <= 0 || dst == src) return {};
    ZS_CUDA_TRY(cudaSetDevice(device_));
    return ZS_CUDA_STATUS(cudaMemcpy(dst, src, static_cast<size_t>(bytes), cudaMemcpyDefault));
  }

 private:
  static cudaStream_t cs(void* s) { return static_cast<cudaStream_t>(s); }

  // Whether p is host memory (page-locked or not): a kernel reading it would cross PCIe in small transactions.
  static bool on_host(const void* p) {
    cudaPointerAttributes a{};
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
      (void)cudaGetLastError();
      return true;
    }
    return a.type == cudaMemoryTypeHost || a.type == cudaMemoryTypeUnregistered;
  }
  // Runs op(part, offset, count) over [0, n) elements of `esize` bytes: on src itself when it is device memory;
  // else through a device buffer filled by one bulk copy per 64 MiB chunk (DeepSpeed's copy to a GPU temp buffer
  // before the add). With copy_is_enough the bulk copy into dst is the whole job (an overwrite).
  template <class Op>
  Status staged(const void* src, int64_t n, int64_t esize, void* stream, Op op, bool copy_is_enough = false) {
    if (n <= 0) return {};
    if (!on_host(src)) return op(src, 0, n);
    if (copy_is_enough) return op(src, 0, n);  // grad_accumulate's overwrite is one cudaMemcpyAsync already
    const int64_t chunk = std::min<int64_t>(n, (int64_t{64} << 20) / esize);
    void* buf = nullptr;
    ZS_CUDA_TRY(cudaMallocAsync(&buf, static_cast<size_t>(chunk * esize), cs(stream)));
    Status st;
    for (int64_t off = 0; off < n && st.ok(); off += chunk) {
      const int64_t len = std::min(chunk, n - off);
      st = ZS_CUDA_STATUS(cudaMemcpyAsync(buf, static_cast<const char*>(src) + off * esize,
                                          static_cast<size_t>(len * esize), cudaMemcpyDefault, cs(stream)));
      if (st.ok()) st = op(buf, off, len);
    }
    (void)cudaFreeAsync(buf, cs(stream));
    return st;
  }

  Status run(const GptModel& m, size_t module, GptModel::Call& c, bool bwd, void* stream) {
    auto g = gemm_for(stream);
    if (!g) return g.error();
    GpuKernelSet k(**g, cs(stream), flash_);
    run_module(m, module, c, bwd, k);
    return k.status();
  }
  // One cuBLASLt handle and workspace per stream: a stream's work is queued by one thread, in order.
  core::Result<CublasLtGemm*> gemm_for(void* stream) {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = gemms_.find(stream);
    if (it != gemms_.end()) return &it->second;
    auto g = CublasLtGemm::create();
    if (!g) return g.error();
    return &gemms_.emplace(stream, std::move(*g)).first->second;
  }

  int device_ = 0;
  bool flash_ = false;
  std::mutex mu_;
  std::map<void*, CublasLtGemm> gemms_;
  void* dummy_ = nullptr;
};

}  // namespace

std::unique_ptr<DeviceKernels> make_cuda_kernels(int device) { return std::make_unique<CudaKernels>(device); }

}  // namespace zs::exec
