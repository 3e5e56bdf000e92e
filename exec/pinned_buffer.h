// PinnedBuffer: a 4 KiB-aligned (in fact 2 MiB, huge-page-advised) host allocation, page-locked with mlock
// where the system allows (O_DIRECT needs the alignment; locking keeps the pages resident, as DeepSpeed's
// page-locked tensor manager does).
// Move-only RAII. When mlock is refused (RLIMIT_MEMLOCK) the buffer still works, unlocked, and says why.
//   auto b = PinnedBuffer::allocate(64 << 20, /*lock=*/true);
//   if (b && !b->locked()) warn(b->lock_error());
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "exec/host_buffer.h"

namespace zs::exec {

class PinnedBuffer {
 public:
  static constexpr int64_t kAlignment = 4096;

  static core::Result<PinnedBuffer> allocate(int64_t bytes, bool lock);
  PinnedBuffer() = default;
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& o) noexcept { *this = std::move(o); }
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  unsigned char* data() const { return data_; }
  int64_t bytes() const { return bytes_; }
  bool locked() const { return locked_; }
  const std::string& lock_error() const { return lock_error_; }

 private:
  void reset();
  HostBuffer host_;
  unsigned char* data_ = nullptr;
  int64_t bytes_ = 0;
  bool locked_ = false;
  std::string lock_error_;
};

// RLIMIT_MEMLOCK soft limit in bytes (−1 = unlimited).
int64_t memlock_limit_bytes();

}  // namespace zs::exec
