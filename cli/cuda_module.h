// The CUDA module (zerosim-cuda.so next to the binary, cli/cuda_module.cpp): the CUDA device, the NCCL communicator
// and the GPU probe behind a table of functions, loaded only by `train --device cuda` and `probe --gpu` — cuBLASLt
// and NCCL take ~0.5 s to load, which every other command (`fit`: goal < 20 ms a call) must not pay.
//   const CudaModule* m = load_cuda_module(&why);    // nullptr: `why` says what is missing
//   auto dev = m->make_device({.device = 0});
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/status.h"
#include "exec/communicator.h"
#include "exec/cuda/cuda_device.h"
#include "exec/cuda/nccl_communicator.h"
#include "exec/device.h"
#include "probe/cuda/gpu_probe.h"

namespace zs::cli {

struct CudaModule {
  exec::CudaAvailability (*available)();
  core::Result<std::unique_ptr<exec::Device>> (*make_device)(const exec::CudaDeviceOptions& o);
  core::Result<std::unique_ptr<exec::Communicator>> (*make_nccl)(
      const exec::NcclOptions& o, const std::function<core::Status(exec::NcclUniqueIdBytes& id)>& broadcast_id);
  core::Result<probe::GpuProbeResult> (*probe_gpu)(const probe::GpuProbeOptions& o);
};
using CudaModuleEntry = const CudaModule* (*)();

// $ZEROSIM_CUDA_MODULE, else zerosim-cuda.so in the folder of this executable; loaded once, never unloaded.
// nullptr with the reason in *why (a build without CUDA, or the module or its CUDA libraries missing).
const CudaModule* load_cuda_module(std::string* why);

}  // namespace zs::cli
