// The host device's DeviceKernels (device_kernels.h): the CPU reference kernels, in the calling thread.
#include <cstring>
#include <memory>

#include "exec/device_kernels.h"
#include "exec/gpt_model_run.h"
#include "exec/kernels_ref.h"

namespace zs::exec {
namespace {

class HostKernels : public DeviceKernels {
 public:
  std::string name() const override { return "reference (host)"; }
  Status forward(const GptModel& m, size_t module, GptModel::Call& c, void*) override {
    RefKernels k;
    run_module(m, module, c, false, k);
    return {};
  }
  Status backward(const GptModel& m, size_t module, GptModel::Call& c, void*) override {
    RefKernels k;
    run_module(m, module, c, true, k);
    return {};
  }
  Status copy(void* dst, const void* src, int64_t bytes, void*) override { return copy_sync(dst, src, bytes); }
  Status zero(void* dst, int64_t bytes, void*) override {
    if (bytes > 0) std::memset(dst, 0, static_cast<size_t>(bytes));
    return {};
  }
  Status accumulate(DType t, void* dst, const void* src, int64_t n, bool overwrite, void*) override {
    dispatch(t, [&](auto tag) {
      using T = decltype(tag);
      grad_accumulate<T>(static_cast<T*>(dst), static_cast<const T*>(src), n, overwrite);
    });
    return {};
  }
  // The gradients' D2H with the norm's share. DeepSpeed casts on the GPU and copies fp32, which the Plan prices as
  // a copy; the stand-in takes the SIMD loop (grads_to_f32_sumsq, the reference's bits). With the scalar reference
  // these D2Hs took 1.9-3.5x their predicted copy time in the engine (docs/notes/engine-validation.md, "The gradients' D2H").
  Status to_f32(DType t, float* dst, const void* src, int64_t n, double* sumsq, void*) override {
    const GradDtype g = t == DType::bf16 ? GradDtype::bf16 : t == DType::fp16 ? GradDtype::fp16 : GradDtype::fp32;
    const double s = grads_to_f32_sumsq(kernel_, dst, src, n, g);
    if (sumsq) *sumsq = s;
    return {};
  }
  Status from_f32(DType t, void* dst, const float* src, int64_t n, void*) override {
    dispatch(t, [&](auto tag) {
      using T = decltype(tag);
      cast_from_f32<T>(static_cast<T*>(dst), src, n);
    });
    return {};
  }
  Status scale(float* x, float mul, int64_t n, void*) override {
    scale_f32(best_adam_kernel(), x, mul, n);
    return {};
  }
  Status adam(const AdamScalars& sc, const AdamBuffers& b, void*) override {
    adam_kernel(best_adam_kernel(), sc, b, 0, b.n);
    return {};
  }
  Status copy_sync(void* dst, const void* src, int64_t bytes) override {
    if (bytes > 0 && dst != src) std::memmove(dst, src, static_cast<size_t>(bytes));
    return {};
  }

 private:
  AdamKernel kernel_ = best_adam_kernel();
};

}  // namespace

std::unique_ptr<DeviceKernels> make_host_kernels() { return std::make_unique<HostKernels>(); }

}  // namespace zs::exec
