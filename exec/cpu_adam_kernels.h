// Internal to exec/: the per-ISA CPU Adam kernels behind adam_kernel(). Each is compiled with a function-level
// target attribute (cpu_adam_simd.cpp) so the library runs on any x86-64 and picks the kernel at run time.
#pragma once

#include <cstdint>

#include "exec/cpu_adam.h"

namespace zs::exec::detail {

void adam_scalar(const AdamScalars& s, const AdamBuffers& b, int64_t begin, int64_t end);
// Both handle any [begin, end): whole vectors in SIMD, the tail through adam_scalar. Only call when
// adam_kernel_supported() says the CPU has the instructions.
void adam_avx2(const AdamScalars& s, const AdamBuffers& b, int64_t begin, int64_t end);
void adam_avx512(const AdamScalars& s, const AdamBuffers& b, int64_t begin, int64_t end);
// fp32 → lp (fp16 when `fp16`, else bf16) over [0, n): whole vectors, then the scalar converters for the tail;
// bit-identical to float_to_fp16 / float_to_bf16 (exec/half.h).
void cast_lp_avx2(uint16_t* out, const float* in, int64_t n, bool fp16);
void cast_lp_avx512(uint16_t* out, const float* in, int64_t n, bool fp16);
void scale_avx2(float* x, float mul, int64_t n);
void scale_avx512(float* x, float mul, int64_t n);
// Gradients (g's dtype) → fp32 `out` (may be null) over [0, n); returns Σ out² in the reference's order
// (cast_to_f32_sumsq, exec/kernels_ref.h): whole vectors, then the scalar loop for the tail.
double grads_to_f32_sumsq_avx2(float* out, const void* in, int64_t n, GradDtype g);
bool cpu_has_avx2_fma_f16c();
bool cpu_has_avx512();

}  // namespace zs::exec::detail
