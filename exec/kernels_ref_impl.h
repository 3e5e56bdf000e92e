// Internal to the CPU reference kernels (kernels_ref.cpp, kernels_ref_attention.cpp): per-thread scratch and the
// fp32 load every kernel starts with.
//   float* x = scratch(0, n).data();  load(x, src, n);
#pragma once

#include <cstdint>
#include <vector>

#include "exec/dtype.h"

namespace zs::exec::ref_detail {

// Per-thread scratch, grown on demand (kernel-internal: registers and shared memory on a GPU).
inline std::vector<float>& scratch(int slot, size_t n) {
  thread_local std::vector<float> bufs[4];
  auto& b = bufs[slot];
  if (b.size() < n) b.resize(n);
  return b;
}

template <class T>
void load(float* dst, const T* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = to_f32(src[i]);
}

}  // namespace zs::exec::ref_detail
