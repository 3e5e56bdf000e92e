// CRC32C (Castagnoli) checksums for swapped tensors, computed while the bytes are copied so verifying costs
// no extra pass over memory. SSE4.2 `crc32` when the CPU has it (runtime check), a table otherwise.
//   uint32_t c = zs::exec::crc32c_copy(dst, src, n, 0);   // copy n bytes and return crc32c(src)
//   assert(c == zs::exec::crc32c(dst, n, 0));
#pragma once

#include <cstddef>
#include <cstdint>

namespace zs::exec {

// `crc` is the running value from a previous call (0 to start); chaining calls equals one call over the
// concatenation.
uint32_t crc32c(const void* data, size_t n, uint32_t crc);
// Copies n bytes src → dst (non-overlapping) and returns crc32c of them, chained on `crc`.
uint32_t crc32c_copy(void* dst, const void* src, size_t n, uint32_t crc);
// Which implementation runs: "sse4.2" or "table".
const char* crc32c_implementation();

// The swapper's chunk checksum, 4-lane CRC32C (xxhash-style striping, so four independent crc32 chains run
// at once: ~3x one chain's speed): 32-byte groups feed 8-byte word j to lane j; the tail (< 32 bytes) goes
// bytewise into lane 0; the result is crc32c of the four lane values (16 bytes, little-endian).
uint32_t lane_checksum(const void* data, size_t n);
// Copies n bytes src → dst and returns lane_checksum of them.
uint32_t lane_checksum_copy(void* dst, const void* src, size_t n);

}  // namespace zs::exec
