#include "exec/host_buffer.h"

#include <sys/mman.h>

#include <cerrno>
#include <utility>

namespace zs::exec {

namespace {
constexpr size_t kHuge = size_t{2} << 20;
size_t mapped_size(size_t bytes) { return (bytes + kHuge - 1) / kHuge * kHuge; }
}  // namespace

void* map_huge(size_t bytes) {
  if (bytes == 0) return nullptr;
  const size_t mapped = mapped_size(bytes);
  // Over-map by one huge page so the start can be 2 MiB-aligned (THP needs aligned 2 MiB ranges).
  void* p = ::mmap(nullptr, mapped + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  auto base = reinterpret_cast<uintptr_t>(p);
  const uintptr_t aligned = (base + kHuge - 1) / kHuge * kHuge;
  if (aligned > base) ::munmap(p, aligned - base);
  const size_t tail = (base + mapped + kHuge) - (aligned + mapped);
  if (tail > 0) ::munmap(reinterpret_cast<void*>(aligned + mapped), tail);
#ifdef MADV_HUGEPAGE
  (void)::madvise(reinterpret_cast<void*>(aligned), mapped, MADV_HUGEPAGE);  // advisory: fine if refused
#endif
  return reinterpret_cast<void*>(aligned);
}

void unmap_huge(void* p, size_t bytes) {
  if (p) ::munmap(p, mapped_size(bytes));
}

int lock_huge(void* p, size_t bytes) { return ::mlock(p, mapped_size(bytes)) == 0 ? 0 : errno; }

void unlock_huge(void* p, size_t bytes) {
  if (p) ::munlock(p, mapped_size(bytes));
}

HostBuffer HostBuffer::allocate(size_t bytes) {
  HostBuffer b;
  b.data_ = map_huge(bytes);
  if (!b.data_) return b;
  b.bytes_ = bytes;
  b.mapped_ = mapped_size(bytes);
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
