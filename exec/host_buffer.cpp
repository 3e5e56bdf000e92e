#include "exec/host_buffer.h"

#include <sys/mman.h>

#include <utility>

namespace zs::exec {

HostBuffer HostBuffer::allocate(size_t bytes) {
  HostBuffer b;
  if (bytes == 0) return b;
  constexpr size_t kHuge = size_t{2} << 20;
  const size_t mapped = (bytes + kHuge - 1) / kHuge * kHuge;
  // Over-map by one huge page so the start can be 2 MiB-aligned (THP needs aligned 2 MiB ranges).
  void* p = ::mmap(nullptr, mapped + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return b;
  auto base = reinterpret_cast<uintptr_t>(p);
  const uintptr_t aligned = (base + kHuge - 1) / kHuge * kHuge;
  if (aligned > base) ::munmap(p, aligned - base);
  const size_t tail = (base + mapped + kHuge) - (aligned + mapped);
  if (tail > 0) ::munmap(reinterpret_cast<void*>(aligned + mapped), tail);
#ifdef MADV_HUGEPAGE
  (void)::madvise(reinterpret_cast<void*>(aligned), mapped, MADV_HUGEPAGE);  // advisory: fine if refused
#endif
  b.data_ = reinterpret_cast<void*>(aligned);
  b.bytes_ = bytes;
  b.mapped_ = mapped;
  return b;
}

HostBuffer::~HostBuffer() {
  if (data_) ::munmap(data_, mapped_);
}

HostBuffer::HostBuffer(HostBuffer&& o) noexcept { *this = std::move(o); }

HostBuffer& HostBuffer::operator=(HostBuffer&& o) noexcept {
  if (this != &o) {
    if (data_) ::munmap(data_, mapped_);
    data_ = std::exchange(o.data_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    mapped_ = std::exchange(o.mapped_, 0);
  }
  return *this;
}

}  // namespace zs::exec
