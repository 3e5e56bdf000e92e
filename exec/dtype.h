// Storage types of the engine's tensors: fp32, and fp16/bf16 as raw 16-bit values with fp32 arithmetic
// (exec/half.h does the bit-exact conversions). Kernels are templates over the storage type; DType names it
// at run time (buffers, collectives, checkpoints).
//   bf16_t b = from_f32<bf16_t>(1.5f);  float f = to_f32(b);
//   DType d = dtype_of(core::Precision::bf16);  int64_t e = dtype_bytes(d);
#pragma once

#include <cstdint>
#include <string>

#include "core/strategy.h"
#include "exec/half.h"
#include "exec/storage_types.h"

namespace zs::exec {

enum class DType : uint8_t { fp32, fp16, bf16 };

inline float to_f32(float x) { return x; }
inline float to_f32(bf16_t x) { return bf16_to_float(x.bits); }
inline float to_f32(fp16_t x) { return fp16_to_float(x.bits); }

template <class T>
T from_f32(float x);
template <>
inline float from_f32<float>(float x) {
  return x;
}
template <>
inline bf16_t from_f32<bf16_t>(float x) {
  return {float_to_bf16(x)};
}
template <>
inline fp16_t from_f32<fp16_t>(float x) {
  return {float_to_fp16(x)};
}

// Round a float to what storage type T can hold (identity for fp32).
template <class T>
inline float round_to(float x) {
  return to_f32(from_f32<T>(x));
}

inline int64_t dtype_bytes(DType d) { return d == DType::fp32 ? 4 : 2; }
inline DType dtype_of(core::Precision p) {
  return p == core::Precision::bf16 ? DType::bf16 : p == core::Precision::fp16 ? DType::fp16 : DType::fp32;
}
inline const char* to_string(DType d) { return d == DType::fp32 ? "fp32" : d == DType::fp16 ? "fp16" : "bf16"; }

// Calls f(T{}) with T the storage type of `d`: dispatch(d, [&](auto tag) { kernel<decltype(tag)>(...); }).
template <class F>
decltype(auto) dispatch(DType d, F&& f) {
  switch (d) {
    case DType::fp16:
      return f(fp16_t{});
    case DType::bf16:
      return f(bf16_t{});
    case DType::fp32:
      break;
  }
  return f(float{});
}

}  // namespace zs::exec
