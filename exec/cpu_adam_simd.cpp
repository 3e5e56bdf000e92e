// AVX2+FMA+F16C and AVX-512 CPU Adam kernels. Function-level target attributes (not per-file -m flags) keep
// every other function, and every inline function from headers, at the baseline ISA: the binary runs on any
// x86-64 and only these functions are entered after the CPU check. Operation order = adam_update_element's.
#include "exec/cpu_adam_kernels.h"

#if defined(__x86_64__)
// GCC 12 warns on the `__Y = __Y` idiom inside the AVX-512 intrinsic headers when they are inlined into
// target-attributed functions: a known false positive (GCC PR 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#define ZS_TARGET_AVX2 __attribute__((target("avx2,fma,f16c"), always_inline)) inline
#define ZS_TARGET_AVX2_FN __attribute__((target("avx2,fma,f16c")))
#define ZS_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c"), always_inline)) inline
#define ZS_TARGET_AVX512_FN __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))

namespace zs::exec::detail {

bool cpu_has_avx2_fma_f16c() {
  static const bool v =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  return v;
}
bool cpu_has_avx512() {
  static const bool v = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                        __builtin_cpu_supports("avx512vl") && cpu_has_avx2_fma_f16c();
  return v;
}

namespace {

// ---- AVX-512: 16 floats per vector ----
struct V512 {
  using F = __m512;
  static constexpr int kWidth = 16;
  static ZS_TARGET_AVX512 F set1(float x) { return _mm512_set1_ps(x); }
  static ZS_TARGET_AVX512 F load(const float* p) { return _mm512_loadu_ps(p); }
  static ZS_TARGET_AVX512 void store(float* p, F v) { _mm512_storeu_ps(p, v); }
  static ZS_TARGET_AVX512 F load_fp16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static ZS_TARGET_AVX512 F load_bf16(const uint16_t* p) {
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
  }
  static ZS_TARGET_AVX512 void store_fp16(uint16_t* p, F v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  // Round to nearest even; NaN → 0x7fc0 (DeepSpeed's bf16 store).
  static ZS_TARGET_AVX512 void store_bf16(uint16_t* p, F v) {
    const __m512i x = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7fff)), lsb);
    r = _mm512_srli_epi32(r, 16);
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    r = _mm512_mask_blend_epi32(nan, r, _mm512_set1_epi32(0x7fc0));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(r));
  }
  static ZS_TARGET_AVX512 F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static ZS_TARGET_AVX512 F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static ZS_TARGET_AVX512 F div(F a, F b) { return _mm512_div_ps(a, b); }
  static ZS_TARGET_AVX512 F sqrt(F a) { return _mm512_sqrt_ps(a); }
};

// ---- AVX2: 8 floats per vector ----
struct V256 {
  using F = __m256;
  static constexpr int kWidth = 8;
  static ZS_TARGET_AVX2 F set1(float x) { return _mm256_set1_ps(x); }
  static ZS_TARGET_AVX2 F load(const float* p) { return _mm256_loadu_ps(p); }
  static ZS_TARGET_AVX2 void store(float* p, F v) { _mm256_storeu_ps(p, v); }
  static ZS_TARGET_AVX2 F load_fp16(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static ZS_TARGET_AVX2 F load_bf16(const uint16_t* p) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
  }
  static ZS_TARGET_AVX2 void store_fp16(uint16_t* p, F v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  static ZS_TARGET_AVX2 void store_bf16(uint16_t* p, F v) {
    const __m256i x = _mm256_castps_si256(v);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)), lsb);
    r = _mm256_srli_epi32(r, 16);
    const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
    r = _mm256_blendv_epi8(r, _mm256_set1_epi32(0x7fc0), _mm256_castps_si256(nan));
    // Lanes hold values ≤ 0xffff, so the unsigned-saturating pack is exact.
    const __m128i packed = _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), packed);
  }
  static ZS_TARGET_AVX2 F fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static ZS_TARGET_AVX2 F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static ZS_TARGET_AVX2 F div(F a, F b) { return _mm256_div_ps(a, b); }
  static ZS_TARGET_AVX2 F sqrt(F a) { return _mm256_sqrt_ps(a); }
};

// One vector of elements at i: the same operations, in the same order, as adam_update_element.
#define ZS_ADAM_BODY(V)                                                                               \
  using F = typename V::F;                                                                            \
  F param = V::load(b.params + i);                                                                    \
  F grad;                                                                                             \
  if constexpr (G == GradDtype::fp32) grad = V::load(static_cast<const float*>(b.grads) + i);         \
  if constexpr (G == GradDtype::fp16) grad = V::load_fp16(static_cast<const uint16_t*>(b.grads) + i); \
  if constexpr (G == GradDtype::bf16) grad = V::load_bf16(static_cast<const uint16_t*>(b.grads) + i); \
  F m, v;                                                                                             \
  if constexpr (S == StateDtype::fp32) {                                                              \
    m = V::load(static_cast<const float*>(b.exp_avg) + i);                                            \
    v = V::load(static_cast<const float*>(b.exp_avg_sq) + i);                                         \
  } else {                                                                                            \
    m = V::load_bf16(static_cast<const uint16_t*>(b.exp_avg) + i);                                    \
    v = V::load_bf16(static_cast<const uint16_t*>(b.exp_avg_sq) + i);                                 \
  }                                                                                                   \
  if (s.l2) grad = V::fma(param, wd, grad);                                                           \
  m = V::fma(grad, omb1, V::mul(m, b1));                                                              \
  v = V::fma(V::mul(grad, grad), omb2, V::mul(v, b2));                                                \
  const F denom = V::fma(V::sqrt(v), bc2, eps);                                                       \
  const F update = V::div(m, denom);                                                                  \
  if (s.decoupled) param = V::fma(param, nlrwd, param);                                               \
  param = V::fma(update, step, param);                                                                \
  V::store(b.params + i, param);                                                                      \
  if constexpr (S == StateDtype::fp32) {                                                              \
    V::store(static_cast<float*>(b.exp_avg) + i, m);                                                  \
    V::store(static_cast<float*>(b.exp_avg_sq) + i, v);                                               \
  } else {                                                                                            \
    V::store_bf16(static_cast<uint16_t*>(b.exp_avg) + i, m);                                          \
    V::store_bf16(static_cast<uint16_t*>(b.exp_avg_sq) + i, v);                                       \
  }                                                                                                   \
  if constexpr (L == LpDtype::fp16) V::store_fp16(static_cast<uint16_t*>(b.lp_params) + i, param);    \
  if constexpr (L == LpDtype::bf16) V::store_bf16(static_cast<uint16_t*>(b.lp_params) + i, param);

#define ZS_ADAM_CONSTANTS(V)                    \
  const auto b1 = V::set1(s.beta1);             \
  const auto b2 = V::set1(s.beta2);             \
  const auto omb1 = V::set1(s.one_minus_beta1); \
  const auto omb2 = V::set1(s.one_minus_beta2); \
  const auto bc2 = V::set1(s.bias_correction2); \
  const auto eps = V::set1(s.eps);              \
  const auto wd = V::set1(s.weight_decay);      \
  const auto nlrwd = V::set1(s.neg_lr_wd);      \
  const auto step = V::set1(s.step_size);

template <GradDtype G, StateDtype S, LpDtype L>
ZS_TARGET_AVX512_FN int64_t loop512(const AdamScalars& s, const AdamBuffers& b, int64_t begin, int64_t end) {
  ZS_ADAM_CONSTANTS(V512)
  int64_t i = begin;
  for (; i + V512::kWidth <= end; i += V512::kWidth) {
    ZS_ADAM_BODY(V512)
  }
  return i;
}

template <GradDtype G, StateDtype S, LpDtype L>
ZS_TARGET_AVX2_FN int64_t loop256(const AdamScalars& s, const AdamBuffers& b, int64_t begin, int64_t end) {
  ZS_ADAM_CONSTANTS(V256)
  int64_t i = begin;
  for (; i + V256::kWidth <= end; i += V256::kWidth) {
    ZS_ADAM_BODY(V256)
  }
  return i;
}

// Runtime (grad, state, lp) dtypes → one of the 18 instantiations.
template <template <GradDtype, StateDtype, LpDtype> class Loop>
int64_t dispatch(const AdamScalars& s, const AdamBuffers& b, int64_t begin, int64_t end);

#define ZS_LOOP_STRUCT(NAME, FN)                                                           \
  template <GradDtype G, StateDtype S, LpDtype L>                                          \
  struct NAME {                                                                            \
    static int64_t run(const AdamScalars& s, const AdamBuffers& b, int64_t x, int64_t y) { \
      return FN<G, S, L>(s, b, x, y);                                                      \
    }                                                                                      \
  };
ZS_LOOP_STRUCT(Loop512, loop512)
ZS_LOOP_STRUCT(Loop256, loop256)

template <template <GradDtype, StateDtype, LpDtype> class Loop, GradDtype G, StateDtype S>
int64_t dispatch_lp(const AdamScalars& s, const AdamBuffers& b, int64_t x, int64_t y) {
  switch (b.lp_dtype) {
    case LpDtype::none:
      return Loop<G, S, LpDtype::none>::run(s, b, x, y);
    case LpDtype::fp16:
      return Loop<G, S, LpDtype::fp16>::run(s, b, x, y);
    case LpDtype::bf16:
      return Loop<G, S, LpDtype::bf16>::run(s, b, x, y);
  }
  return x;
}

template <template <GradDtype, StateDtype, LpDtype> class Loop, GradDtype G>
int64_t dispatch_state(const AdamScalars& s, const AdamBuffers& b, int64_t x, int64_t y) {
  if (b.state_dtype == StateDtype::fp32) return dispatch_lp<Loop, G, StateDtype::fp32>(s, b, x, y);
  return dispatch_lp<Loop, G, StateDtype::bf16>(s, b, x, y);
}

template <template <GradDtype, StateDtype, LpDtype> class Loop>
int64_t dispatch(const AdamScalars& s, const AdamBuffers& b, int64_t x, int64_t y) {
  switch (b.grad_dtype) {
    case GradDtype::fp32:
      return dispatch_state<Loop, GradDtype::fp32>(s, b, x, y);
    case GradDtype::fp16:
      return dispatch_state<Loop, GradDtype::fp16>(s, b, x, y);
    case GradDtype::bf16:
      return dispatch_state<Loop, GradDtype::bf16>(s, b, x, y);
  }
  return x;
}

}  // namespace

void adam_avx512(const AdamScalars& s, const AdamBuffers& b, int64_t begin, int64_t end) {
  const int64_t done = dispatch<Loop512>(s, b, begin, end);
  adam_scalar(s, b, done, end);
}

void adam_avx2(const AdamScalars& s, const AdamBuffers& b, int64_t begin, int64_t end) {
  const int64_t done = dispatch<Loop256>(s, b, begin, end);
  adam_scalar(s, b, done, end);
}

namespace {
void cast_tail(uint16_t* out, const float* in, int64_t i, int64_t n, bool fp16) {
  for (; i < n; ++i) out[i] = fp16 ? float_to_fp16(in[i]) : float_to_bf16(in[i]);
}
#define ZS_CAST_LOOP(V)                                                                 \
  int64_t i = 0;                                                                        \
  if (fp16)                                                                             \
    for (; i + V::kWidth <= n; i += V::kWidth) V::store_fp16(out + i, V::load(in + i)); \
  else                                                                                  \
    for (; i + V::kWidth <= n; i += V::kWidth) V::store_bf16(out + i, V::load(in + i)); \
  return i

ZS_TARGET_AVX512_FN int64_t cast512(uint16_t* out, const float* in, int64_t n, bool fp16) { ZS_CAST_LOOP(V512); }
ZS_TARGET_AVX2_FN int64_t cast256(uint16_t* out, const float* in, int64_t n, bool fp16) { ZS_CAST_LOOP(V256); }
}  // namespace

void cast_lp_avx512(uint16_t* out, const float* in, int64_t n, bool fp16) {
  cast_tail(out, in, cast512(out, in, n, fp16), n, fp16);
}
void cast_lp_avx2(uint16_t* out, const float* in, int64_t n, bool fp16) {
  cast_tail(out, in, cast256(out, in, n, fp16), n, fp16);
}

namespace {
#define ZS_SCALE_LOOP(V)                                                                 \
  const V::F m = V::set1(mul);                                                           \
  int64_t i = 0;                                                                         \
  for (; i + V::kWidth <= n; i += V::kWidth) V::store(x + i, V::mul(V::load(x + i), m)); \
  return i

ZS_TARGET_AVX512_FN int64_t scale512(float* x, float mul, int64_t n) { ZS_SCALE_LOOP(V512); }
ZS_TARGET_AVX2_FN int64_t scale256(float* x, float mul, int64_t n) { ZS_SCALE_LOOP(V256); }
}  // namespace

void scale_avx512(float* x, float mul, int64_t n) {
  for (int64_t i = scale512(x, mul, n); i < n; ++i) x[i] *= mul;
}
void scale_avx2(float* x, float mul, int64_t n) {
  for (int64_t i = scale256(x, mul, n); i < n; ++i) x[i] *= mul;
}

namespace {
// Eight gradients per turn: two vectors of four doubles, lane j holding elements i + j and then i + 4 + j, which is
// where the reference adds them (element k to lane k % 4, in order). Products and sums are separate roundings
// (zs_exec builds with -ffp-contract=off), as the reference's are.
template <GradDtype G>
ZS_TARGET_AVX2_FN int64_t to_f32_256(float* out, const void* in, int64_t n, double* lanes) {
  __m256d acc = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + V256::kWidth <= n; i += V256::kWidth) {
    __m256 x;
    if constexpr (G == GradDtype::bf16)
      x = V256::load_bf16(static_cast<const uint16_t*>(in) + i);
    else if constexpr (G == GradDtype::fp16)
      x = V256::load_fp16(static_cast<const uint16_t*>(in) + i);
    else
      x = V256::load(static_cast<const float*>(in) + i);
    if (out) V256::store(out + i, x);
    const __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(x));
    const __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1));
    acc = _mm256_add_pd(acc, _mm256_mul_pd(lo, lo));
    acc = _mm256_add_pd(acc, _mm256_mul_pd(hi, hi));
  }
  _mm256_storeu_pd(lanes, acc);
  return i;
}
}  // namespace

double grads_to_f32_sumsq_avx2(float* out, const void* in, int64_t n, GradDtype g) {
  double l[4];
  const int64_t done = g == GradDtype::bf16   ? to_f32_256<GradDtype::bf16>(out, in, n, l)
                       : g == GradDtype::fp16 ? to_f32_256<GradDtype::fp16>(out, in, n, l)
                                              : to_f32_256<GradDtype::fp32>(out, in, n, l);
  for (int64_t i = done; i < n; ++i) {  // the tail: done is a multiple of 8, so lane i % 4 continues the order
    const float v = g == GradDtype::bf16   ? bf16_to_float(static_cast<const uint16_t*>(in)[i])
                    : g == GradDtype::fp16 ? fp16_to_float(static_cast<const uint16_t*>(in)[i])
                                           : static_cast<const float*>(in)[i];
    if (out) out[i] = v;
    l[i % 4] += static_cast<double>(v) * static_cast<double>(v);
  }
  return (l[0] + l[1]) + (l[2] + l[3]);
}

}  // namespace zs::exec::detail

#else  // not x86-64: the scalar reference is the only kernel

namespace zs::exec::detail {
bool cpu_has_avx2_fma_f16c() { return false; }
bool cpu_has_avx512() { return false; }
void adam_avx512(const AdamScalars& s, const AdamBuffers& b, int64_t begin, int64_t end) {
  adam_scalar(s, b, begin, end);
}
void adam_avx2(const AdamScalars& s, const AdamBuffers& b, int64_t begin, int64_t end) {
  adam_scalar(s, b, begin, end);
}
void cast_lp_avx512(uint16_t* out, const float* in, int64_t n, bool fp16) { cast_lp_avx2(out, in, n, fp16); }
void cast_lp_avx2(uint16_t* out, const float* in, int64_t n, bool fp16) {
  for (int64_t i = 0; i < n; ++i) out[i] = fp16 ? float_to_fp16(in[i]) : float_to_bf16(in[i]);
}
void scale_avx512(float* x, float mul, int64_t n) { scale_avx2(x, mul, n); }
void scale_avx2(float* x, float mul, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] *= mul;
}
double grads_to_f32_sumsq_avx2(float* out, const void* in, int64_t n, GradDtype g) {
  return grads_to_f32_sumsq(AdamKernel::scalar, out, in, n, g);
}
}  // namespace zs::exec::detail

#endif
