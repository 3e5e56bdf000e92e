// DeviceKernels: the engine's arithmetic on device memory, once per device — the host device's runs the CPU
// reference kernels (kernels_ref.h) in the calling thread; the CUDA device's (exec/cuda/cuda_kernels.cpp) queues
// the CUDA kernels and cuBLASLt GEMMs on the stream it is given. The engine calls them from Device::launch() work,
// passing that work's stream, so one handler serves both devices and the host device's bit-exact tests cover it.
// Pointers may be device memory or page-locked host memory (CUDA reads and writes the latter directly: mapped
// under unified addressing). Each call returns the launch error; execution errors surface at the stream's Event.
//   dev->launch(*s, waits, [&](void* st) { return dev->kernels().to_f32(DType::bf16, g32, grad, n, &sumsq, st); });
#pragma once

#include <cstdint>

#include "core/status.h"
#include "exec/cpu_adam.h"
#include "exec/dtype.h"
#include "exec/gpt_model.h"

namespace zs::exec {

class DeviceKernels {
 public:
  virtual ~DeviceKernels() = default;
  virtual std::string name() const = 0;  // "reference (host)", "cuda"

  // One GPT sub-module (GptModel::forward / backward): the lm_head forward leaves its token losses in
  // Call::host_losses (required on CUDA) and, on the host, also their sum in Call::loss_sum.
  virtual Status forward(const GptModel& m, size_t module, GptModel::Call& c, void* stream) = 0;
  virtual Status backward(const GptModel& m, size_t module, GptModel::Call& c, void* stream) = 0;

  // `bytes` between any two of device and page-locked host memory, in stream order.
  virtual Status copy(void* dst, const void* src, int64_t bytes, void* stream) = 0;
  virtual Status zero(void* dst, int64_t bytes, void* stream) = 0;
  // dst = round(dst + src), or dst = src with `overwrite` (grad_accumulate).
  virtual Status accumulate(DType t, void* dst, const void* src, int64_t n, bool overwrite, void* stream) = 0;
  // dst (fp32, may be null) = src; with `sumsq` (device or page-locked host memory), *sumsq = Σ src² once the work
  // has run. The host sums over kernels_ref.h's four lanes; CUDA in its own fixed order (deterministic per n).
  virtual Status to_f32(DType t, float* dst, const void* src, int64_t n, double* sumsq, void* stream) = 0;
  virtual Status from_f32(DType t, void* dst, const float* src, int64_t n, void* stream) = 0;
  // x *= mul (DeepSpeed's unscale_and_clip_grads on device-resident fp32 gradients).
  virtual Status scale(float* x, float mul, int64_t n, void* stream) = 0;
  // Adam over device buffers with the scalars CpuAdam computed: bit-identical to adam_update_element.
  virtual Status adam(const AdamScalars& sc, const AdamBuffers& b, void* stream) = 0;

  // A copy outside stream order between any memory, pageable host memory included, complete when it returns:
  // initialisation, checkpoints, reads of results after Device::synchronize().
  virtual Status copy_sync(void* dst, const void* src, int64_t bytes) = 0;
};

// The host device's kernels: the CPU references, run in the calling thread; `stream` is ignored.
std::unique_ptr<DeviceKernels> make_host_kernels();

}  // namespace zs::exec
