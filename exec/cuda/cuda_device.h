// The CUDA device: exec::Device (device.h) on one GPU — stream-ordered allocation from its own memory pool with
// the same MemoryAccount capacity accounting as the host device, named cudaStream_t streams, cudaEvent_t events,
// cudaMemcpyAsync copies, host work through cudaLaunchHostFunc, cudaHostAlloc'd pinned buffers.
//   if (auto a = cuda_available(); !a.usable) return skip(a.reason);
//   auto dev = make_cuda_device({.memory_bytes = hw.gpu.memory_bytes()});   // Result<std::unique_ptr<Device>>
//   Stream* s = *(*dev)->stream("compute");
//   gpu::gelu_forward(out, inp, n, static_cast<cudaStream_t>(s->native_handle()));   // kernels.cuh
#pragma once

#include <memory>
#include <string>

#include "exec/device.h"

namespace zs::exec {

// Whether this process can use a GPU; `reason` says why not (no driver — cudaErrorInsufficientDriver — counts
// as "no GPU", as does cudaErrorNoDevice).
struct CudaAvailability {
  bool usable = false;
  int device_count = 0;
  std::string reason;
};
CudaAvailability cuda_available();

struct CudaDeviceOptions {
  int device = 0;            // CUDA ordinal
  int64_t memory_bytes = 0;  // capacity (the hardware profile's GPU memory); 0 = what cudaMemGetInfo says is free.
                             // Never more than free: a larger profile is clamped, with a warning.
};

// Host work (enqueue) runs on CUDA's callback thread: it must not call CUDA, and must not block on another Event
// (callbacks may share one thread). Its Status, and the first failure of anything it waited for, end up in its
// Event and in the next synchronize().
// Allocations are ordered on the legacy default stream (cudaMallocFromPoolAsync / cudaFreeAsync): the device's
// streams are blocking streams, so a buffer is usable on every stream once allocate() returns and is reused only
// after all work queued before its release. Buffers must not outlive their device.
Result<std::unique_ptr<Device>> make_cuda_device(const CudaDeviceOptions& o);

}  // namespace zs::exec
