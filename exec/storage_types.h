// The 16-bit storage types as raw bits, in a header with no C++20 and no project dependencies, so that CUDA
// translation units (compiled as C++17, exec/cuda/*.cu) and host code name the same types (dtype.h has the rest).
//   bf16_t b{0x3fc0};  // 1.5
#pragma once

#include <cstdint>

namespace zs::exec {

struct bf16_t {
  uint16_t bits;
};
struct fp16_t {
  uint16_t bits;
};

}  // namespace zs::exec
