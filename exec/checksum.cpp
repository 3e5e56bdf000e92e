#include "exec/checksum.h"

#include <array>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ZS_X86 1
#endif

namespace zs::exec {
namespace {

constexpr uint32_t kPoly = 0x82f63b78u;  // CRC32C, reflected

constexpr std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ kPoly : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr std::array<uint32_t, 256> kTable = make_table();

uint32_t crc_table(const unsigned char* p, size_t n, uint32_t c) {
  for (size_t i = 0; i < n; ++i) c = kTable[(c ^ p[i]) & 0xffu] ^ (c >> 8);
  return c;
}

uint32_t crc_copy_table(unsigned char* d, const unsigned char* s, size_t n, uint32_t c) {
  // Copy in blocks so memcpy's wide moves do the copying; the CRC reads the destination while hot in L1.
  constexpr size_t kBlock = 4096;
  for (size_t off = 0; off < n; off += kBlock) {
    const size_t len = n - off < kBlock ? n - off : kBlock;
    std::memcpy(d + off, s + off, len);
    c = crc_table(d + off, len, c);
  }
  return c;
}

#ifdef ZS_X86
__attribute__((target("sse4.2"))) uint32_t crc_hw(const unsigned char* p, size_t n, uint32_t c32) {
  uint64_t c = c32;
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7u)) {
    c = _mm_crc32_u8(static_cast<uint32_t>(c), *p++);
    --n;
  }
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
    p += 8;
    n -= 8;
  }
  while (n > 0) {
    c = _mm_crc32_u8(static_cast<uint32_t>(c), *p++);
    --n;
  }
  return static_cast<uint32_t>(c);
}

// Load 8 bytes, feed the CRC, store them: the copy rides along the CRC's dependency chain for free.
__attribute__((target("sse4.2"))) uint32_t crc_copy_hw(unsigned char* d, const unsigned char* s, size_t n,
                                                       uint32_t c32) {
  uint64_t c = c32;
  while (n >= 32) {
    uint64_t v0, v1, v2, v3;
    std::memcpy(&v0, s, 8);
    std::memcpy(&v1, s + 8, 8);
    std::memcpy(&v2, s + 16, 8);
    std::memcpy(&v3, s + 24, 8);
    c = _mm_crc32_u64(c, v0);
    c = _mm_crc32_u64(c, v1);
    c = _mm_crc32_u64(c, v2);
    c = _mm_crc32_u64(c, v3);
    std::memcpy(d, &v0, 8);
    std::memcpy(d + 8, &v1, 8);
    std::memcpy(d + 16, &v2, 8);
    std::memcpy(d + 24, &v3, 8);
    s += 32;
    d += 32;
    n -= 32;
  }
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, s, 8);
    c = _mm_crc32_u64(c, v);
    std::memcpy(d, &v, 8);
    s += 8;
    d += 8;
    n -= 8;
  }
  while (n > 0) {
    c = _mm_crc32_u8(static_cast<uint32_t>(c), *s);
    *d++ = *s++;
    --n;
  }
  return static_cast<uint32_t>(c);
}

__attribute__((target("sse4.2"))) void lanes_hw(unsigned char* d, const unsigned char* s, size_t n, uint32_t lane[4]) {
  uint64_t c0 = ~0u, c1 = ~0u, c2 = ~0u, c3 = ~0u;
  while (n >= 32) {
    uint64_t v0, v1, v2, v3;
    std::memcpy(&v0, s, 8);
    std::memcpy(&v1, s + 8, 8);
    std::memcpy(&v2, s + 16, 8);
    std::memcpy(&v3, s + 24, 8);
    c0 = _mm_crc32_u64(c0, v0);
    c1 = _mm_crc32_u64(c1, v1);
    c2 = _mm_crc32_u64(c2, v2);
    c3 = _mm_crc32_u64(c3, v3);
    if (d) {
      std::memcpy(d, &v0, 8);
      std::memcpy(d + 8, &v1, 8);
      std::memcpy(d + 16, &v2, 8);
      std::memcpy(d + 24, &v3, 8);
      d += 32;
    }
    s += 32;
    n -= 32;
  }
  for (; n > 0; --n) {
    c0 = _mm_crc32_u8(static_cast<uint32_t>(c0), *s);
    if (d) *d++ = *s;
    ++s;
  }
  lane[0] = ~static_cast<uint32_t>(c0);
  lane[1] = ~static_cast<uint32_t>(c1);
  lane[2] = ~static_cast<uint32_t>(c2);
  lane[3] = ~static_cast<uint32_t>(c3);
}

bool have_sse42() {
  static const bool v = __builtin_cpu_supports("sse4.2");
  return v;
}
#endif

void lanes_table(unsigned char* d, const unsigned char* s, size_t n, uint32_t lane[4]) {
  uint32_t c[4] = {~0u, ~0u, ~0u, ~0u};
  while (n >= 32) {
    for (int j = 0; j < 4; ++j) c[j] = crc_table(s + 8 * j, 8, c[j]);
    if (d) {
      std::memcpy(d, s, 32);
      d += 32;
    }
    s += 32;
    n -= 32;
  }
  c[0] = crc_table(s, n, c[0]);
  if (d && n) std::memcpy(d, s, n);
  for (int j = 0; j < 4; ++j) lane[j] = ~c[j];
}

uint32_t lanes(unsigned char* d, const unsigned char* s, size_t n) {
  uint32_t lane[4];
#ifdef ZS_X86
  if (have_sse42())
    lanes_hw(d, s, n, lane);
  else
#endif
    lanes_table(d, s, n, lane);
  unsigned char bytes[16];
  for (int j = 0; j < 4; ++j)
    for (int k = 0; k < 4; ++k) bytes[4 * j + k] = static_cast<unsigned char>(lane[j] >> (8 * k));
  return crc32c(bytes, 16, 0);
}

}  // namespace

uint32_t lane_checksum(const void* data, size_t n) {
  return lanes(nullptr, static_cast<const unsigned char*>(data), n);
}

uint32_t lane_checksum_copy(void* dst, const void* src, size_t n) {
  return lanes(static_cast<unsigned char*>(dst), static_cast<const unsigned char*>(src), n);
}

uint32_t crc32c(const void* data, size_t n, uint32_t crc) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = ~crc;
#ifdef ZS_X86
  if (have_sse42()) return ~crc_hw(p, n, c);
#endif
  return ~crc_table(p, n, c);
}

uint32_t crc32c_copy(void* dst, const void* src, size_t n, uint32_t crc) {
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  uint32_t c = ~crc;
#ifdef ZS_X86
  if (have_sse42()) return ~crc_copy_hw(d, s, n, c);
#endif
  return ~crc_copy_table(d, s, n, c);
}

const char* crc32c_implementation() {
#ifdef ZS_X86
  if (have_sse42()) return "sse4.2";
#endif
  return "table";
}

}  // namespace zs::exec
