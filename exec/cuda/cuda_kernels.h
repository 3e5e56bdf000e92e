// The CUDA device's DeviceKernels (exec/device_kernels.h): the GPT modules on the kernels of kernels.cuh and
// cuBLASLt GEMMs (one CublasLtGemm per stream), copies and memsets as cudaMemcpyAsync / cudaMemsetAsync with
// cudaMemcpyDefault (device and page-locked host memory alike, under unified addressing), gradient casts with their
// norm² shares, GPU Adam. Every call queues on the cudaStream_t it is given and returns the launch error.
//   std::unique_ptr<DeviceKernels> k = make_cuda_kernels(/*device=*/0);   // owned by the CUDA device
#pragma once

#include <memory>

#include "exec/device_kernels.h"

namespace zs::exec {

std::unique_ptr<DeviceKernels> make_cuda_kernels(int device);

}  // namespace zs::exec
