#include "exec/pinned_buffer.h"

#include <sys/mman.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace zs::exec {

int64_t memlock_limit_bytes() {
  struct rlimit r;
  if (getrlimit(RLIMIT_MEMLOCK, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return -1;
  return static_cast<int64_t>(r.rlim_cur);
}

core::Result<PinnedBuffer> PinnedBuffer::allocate(int64_t bytes, bool lock) {
  if (bytes <= 0) return core::bad_input("pinned buffer: size " + std::to_string(bytes) + " must be positive");
  const int64_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  // Huge pages where the kernel gives them: a 1 MiB O_DIRECT request from 4 KiB pages has 256 segments,
  // more than a virtio disk's 254, and is split in two; from a 2 MiB page it is one segment.
  HostBuffer host = HostBuffer::allocate(static_cast<size_t>(rounded));
  if (!host) return core::io_error("pinned buffer: cannot allocate " + std::to_string(rounded) + " bytes");
  void* p = host.data();
  std::memset(p, 0, static_cast<size_t>(rounded));  // touch every page now, not inside timed I/O
  PinnedBuffer b;
  b.host_ = std::move(host);
  b.data_ = static_cast<unsigned char*>(p);
  b.bytes_ = rounded;
  if (lock) {
    // The whole mapping, every 2 MiB page in full (host_buffer.h: locking `rounded` splits the last huge page).
    const int e = lock_huge(p, static_cast<size_t>(rounded));
    if (e == 0) {
      b.locked_ = true;
    } else {
      const int64_t lim = memlock_limit_bytes();
      b.lock_error_ = "mlock of " + std::to_string(b.host_.mapped_bytes() >> 20) + " MiB failed (" + std::strerror(e) +
                      (lim >= 0 ? "; RLIMIT_MEMLOCK is " + std::to_string(lim >> 10) + " KiB" : std::string()) +
                      "): buffers are not page-locked; raise `ulimit -l` to lock them";
    }
  }
  return b;
}

void PinnedBuffer::reset() {
  if (data_ && locked_) unlock_huge(data_, static_cast<size_t>(bytes_));
  host_ = HostBuffer();
  data_ = nullptr;
  bytes_ = 0;
  locked_ = false;
}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& o) noexcept {
  if (this != &o) {
    reset();
    host_ = std::move(o.host_);
    data_ = std::exchange(o.data_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    locked_ = std::exchange(o.locked_, false);
    lock_error_ = std::move(o.lock_error_);
  }
  return *this;
}

PinnedBuffer::~PinnedBuffer() { reset(); }

}  // namespace zs::exec
