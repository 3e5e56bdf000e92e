// CUDA runtime errors as core::Status, nccl-tests style: the macro returns the error, naming the call and
// file:line; nothing exits. Host code only (C++20 side); kernels.cuh returns plain cudaError_t.
//   ZS_CUDA_TRY(cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, s));
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "core/status.h"

namespace zs::exec {

inline core::Error cuda_error(cudaError_t e, const char* what, const char* file, int line) {
  return core::Error{core::ErrorKind::io, std::string("CUDA error ") + cudaGetErrorName(e) + " (" +
                                              cudaGetErrorString(e) + ") in " + what + " at " + file + ":" +
                                              std::to_string(line)};
}

}  // namespace zs::exec

#define ZS_CUDA_TRY(expr)                                                                                \
  do {                                                                                                   \
    const cudaError_t zs_cuda_e_ = (expr);                                                               \
    if (zs_cuda_e_ != cudaSuccess) return ::zs::exec::cuda_error(zs_cuda_e_, #expr, __FILE__, __LINE__); \
  } while (0)

// The same for a call whose failure is reported as a Status value (no return): Status s = ZS_CUDA_STATUS(call);
#define ZS_CUDA_STATUS(expr) ::zs::exec::cuda_status((expr), #expr, __FILE__, __LINE__)

namespace zs::exec {
inline core::Status cuda_status(cudaError_t e, const char* what, const char* file, int line) {
  if (e == cudaSuccess) return {};
  return cuda_error(e, what, file, line);
}
}  // namespace zs::exec
