// The CUDA device: exec::Device (device.h) on one GPU — named cudaStreamNonBlocking streams, each with a host worker
// thread that issues its work in order; cudaEvent_t completion markers; a caching allocator over the device's own
// memory pool, with the same MemoryAccount capacity accounting as the host device; cudaHostAlloc'd pinned buffers.
//   if (auto a = cuda_available(); !a.usable) return skip(a.reason);
//   auto dev = make_cuda_device({.memory_bytes = hw.gpu.memory_bytes()});   // Result<std::unique_ptr<Device>>
//   Stream* s = *(*dev)->stream("compute");
//   Event e = (*dev)->launch(*s, {}, [&](void* st) { return (*dev)->kernels().zero(p, n, st); });
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

// What runs where. Every call returns at once; the stream's worker thread takes its tasks in order:
// - enqueue (host work): the worker waits for the waits completely (GPU part included), then for the device work
//   queued on the same stream before, then runs `work` — which must not call CUDA (it may block: swaps, MPI).
// - launch / copy (device work): the worker waits for the waits' host parts (Event::queued(); completely with
//   LaunchOptions::sync_waits), makes the cudaStream_t wait for their cudaEvents, calls `work(stream)` to queue
//   the kernels, and records the completion cudaEvent; the Event is complete when the GPU has passed it.
// A failed wait skips the work; failures end up in the Event and in the next synchronize(). Timed launches
// (LaunchOptions::start_s / end_s) are written by synchronize(), from events against a host-clock anchor.
// Memory: freed blocks go to an exact-size cache (device blocks rounded to 512 B, pinned to 4 KiB) with a fence —
// the last task submitted to each stream when it was freed — and are reused once the fence has passed, never
// through the legacy stream; cached memory is returned to the driver only when an allocation would fail, or by the
// destructor. Buffers must not outlive their device.
Result<std::unique_ptr<Device>> make_cuda_device(const CudaDeviceOptions& o);

}  // namespace zs::exec
