// fp16 (IEEE binary16) and bf16 (bfloat16) as raw 16-bit values, with scalar conversions that match the
// hardware ones bit for bit (F16C vcvtph2ps / vcvtps2ph round-to-nearest-even; DeepSpeed's bf16 store).
//   uint16_t h = zs::exec::float_to_fp16(1.5f);   // 0x3e00
//   float f = zs::exec::fp16_to_float(h);          // 1.5f
#pragma once

#include <cstdint>
#include <cstring>

namespace zs::exec {

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// bf16 → fp32 is exact: the bf16 bits are the high half of the fp32 bits (DeepSpeed: 16-bit shift on load).
inline float bf16_to_float(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }

// fp32 → bf16, round to nearest even; every NaN becomes 0x7fc0, as DeepSpeed's SIMD store does.
inline uint16_t float_to_bf16(float f) {
  uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
  u += 0x7fffu + ((u >> 16) & 1u);  // carries into the exponent on overflow: ±inf, as RNE requires
  return static_cast<uint16_t>(u >> 16);
}

// fp16 → fp32, exact. Subnormals are normalised; a signalling NaN comes back quiet (F16C does the same).
inline float fp16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) {  // inf / NaN
    if (mant == 0) return bits_float(sign | 0x7f800000u);
    return bits_float(sign | 0x7fc00000u | (mant << 13));
  }
  if (exp == 0) {
    if (mant == 0) return bits_float(sign);
    // Subnormal: value = mant · 2^-24; shift the leading one up to bit 10.
    int e = -1;
    do {
      mant <<= 1;
      ++e;
    } while ((mant & 0x400u) == 0);
    mant &= 0x3ffu;
    return bits_float(sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | (mant << 13));
  }
  return bits_float(sign | ((exp + 127 - 15) << 23) | (mant << 13));
}

// fp32 → fp16, round to nearest even (vcvtps2ph with _MM_FROUND_TO_NEAREST_INT): overflow → ±inf,
// underflow → subnormal or ±0, NaN → quiet NaN keeping the top mantissa bits.
inline uint16_t float_to_fp16(float f) {
  const uint32_t u = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf / NaN
    if (abs == 0x7f800000u) return sign | 0x7c00u;
    return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  }
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // ≥ 65520 rounds to inf
  const int32_t exp = static_cast<int32_t>(abs >> 23) - 127;
  if (exp >= -14) {                   // normal fp16
    uint32_t v = abs - (112u << 23);  // rebias 127 → 15
    v += 0xfffu + ((v >> 13) & 1u);   // RNE on the 13 dropped bits; a carry bumps the exponent correctly
    return static_cast<uint16_t>(sign | (v >> 13));
  }
  if (exp < -25) return sign;  // below half the smallest subnormal (2^-25): rounds to ±0
  // Subnormal fp16: value / 2^-24 rounded to an integer, ties to even.
  const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;  // 24-bit significand, value = mant · 2^(exp-23)
  const int shift = -exp - 1;                           // dropped bits: mant >> (shift) gives units of 2^-24
  const uint32_t q = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  uint32_t r = q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u);
  return static_cast<uint16_t>(sign | r);  // r == 0x400 becomes the smallest normal, as it should
}

}  // namespace zs::exec
