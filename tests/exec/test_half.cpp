// fp16/bf16 conversions (exec/half.h) against the hardware: every fp16 value through F16C, and 16 Mi float
// bit patterns spread over all exponents through vcvtps2ph — both must agree bit for bit.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>

#include "exec/half.h"

#if defined(__x86_64__)
#include <immintrin.h>
namespace {
bool have_f16c() { return __builtin_cpu_supports("f16c"); }
__attribute__((target("f16c"))) float hw_h2f(uint16_t h) { return _cvtsh_ss(h); }
__attribute__((target("f16c"))) uint16_t hw_f2h(float f) { return _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT); }
}  // namespace
#endif

using namespace zs::exec;

TEST_CASE("fp16 → fp32 matches F16C for all 65536 values", "[exec][half]") {
#if defined(__x86_64__)
  if (!have_f16c()) {
    WARN("CPU lacks F16C: skipped");
    return;
  }
  int mismatches = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint32_t a = float_bits(fp16_to_float(static_cast<uint16_t>(h)));
    const uint32_t b = float_bits(hw_h2f(static_cast<uint16_t>(h)));
    if (a != b) ++mismatches;
  }
  CHECK(mismatches == 0);
#endif
}

TEST_CASE("fp32 → fp16 round-to-nearest-even matches F16C", "[exec][half]") {
#if defined(__x86_64__)
  if (!have_f16c()) {
    WARN("CPU lacks F16C: skipped");
    return;
  }
  int mismatches = 0;
  uint32_t first_bad = 0;
  // 2^24 patterns: every exponent, sign and a spread of mantissas (low bits vary so ties and sticky bits occur).
  for (uint32_t i = 0; i < (1u << 24); ++i) {
    const uint32_t u = (i << 8) | (i * 2654435761u >> 24);
    const float f = bits_float(u);
    if (float_to_fp16(f) != hw_f2h(f)) {
      if (mismatches++ == 0) first_bad = u;
    }
  }
  INFO("first mismatch at float bits 0x" << std::hex << first_bad);
  CHECK(mismatches == 0);
#endif
  // Hand-checked cases.
  CHECK(float_to_fp16(1.0f) == 0x3c00);
  CHECK(float_to_fp16(65504.0f) == 0x7bff);
  CHECK(float_to_fp16(65520.0f) == 0x7c00);               // halfway to 65536 rounds up to inf
  CHECK(float_to_fp16(std::ldexp(1.0f, -24)) == 0x0001);  // smallest subnormal
  CHECK(float_to_fp16(std::ldexp(1.0f, -25)) == 0x0000);  // tie → even (0)
  CHECK(float_to_fp16(std::ldexp(1.5f, -25)) == 0x0001);
  CHECK(fp16_to_float(0x3555) == Approx(0.33325195f));
}

TEST_CASE("bf16 conversions: shift on load, RNE on store, NaN → 0x7fc0", "[exec][half]") {
  CHECK(float_to_bf16(1.0f) == 0x3f80);
  CHECK(bf16_to_float(0x3f80) == 1.0f);
  // 1 + 2^-8 is exactly halfway between bf16 1.0 and 1.0078125: ties to even → 1.0.
  CHECK(float_to_bf16(1.0f + std::ldexp(1.0f, -8)) == 0x3f80);
  // 1 + 3·2^-8 is halfway between 0x3f81 and 0x3f82: ties to even → 0x3f82.
  CHECK(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3f82);
  CHECK(float_to_bf16(bits_float(0x7f800001u)) == 0x7fc0);
  CHECK(float_to_bf16(-std::nanf("")) == 0x7fc0);
  CHECK(float_to_bf16(bits_float(0x7f7fffffu)) == 0x7f80);  // FLT_MAX rounds to inf
  for (uint32_t b = 0; b < 65536; ++b) {
    const float f = bf16_to_float(static_cast<uint16_t>(b));
    if (std::isnan(f)) continue;
    REQUIRE(float_to_bf16(f) == b);  // every non-NaN bf16 round-trips
  }
}
