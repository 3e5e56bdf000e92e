// HostBuffer: a large anonymous host allocation (mmap), 2 MiB-aligned and advised for transparent huge pages.
// Streaming kernels save TLB misses (Adam pattern here: 13.3 → 14.6 GB/s), and an O_DIRECT request from huge
// pages is one DMA segment instead of one per 4 KiB (a 1 MiB request from 4 KiB pages exceeds this virtio disk's
// 254 segments and is split). Big arrays in exec/ come from here. Move-only.
//   HostBuffer b = HostBuffer::allocate(n * sizeof(float));
//   float* p = b.as<float>();
#pragma once

#include <cstddef>
#include <cstdint>

namespace zs::exec {

// The mapping behind HostBuffer, for owners with their own deleter (the host device's pinned buffers): `bytes`
// rounded up to 2 MiB, 2 MiB-aligned, zero-filled; nullptr on failure. unmap_huge takes the same `bytes`.
void* map_huge(size_t bytes);
void unmap_huge(void* p, size_t bytes);
// Page-locks (mlock) / unlocks the whole mapping behind map_huge(bytes): every 2 MiB page in full. Locking only
// `bytes` splits the last huge page and the mapping at the lock's end, and on this project's VM (Linux 6.18,
// virtio disk) a read into such a buffer took 1.16x as long at 13 MB and 4.3x at 1 MB as into whole locked pages
// (bench_locked_pages, bench/RESULTS.md). 0 or errno, as mlock.
int lock_huge(void* p, size_t bytes);
void unlock_huge(void* p, size_t bytes);

class HostBuffer {
 public:
  // Zero-filled (fresh anonymous pages); nullptr data() when the allocation fails.
  static HostBuffer allocate(size_t bytes);
  HostBuffer() = default;
  ~HostBuffer();
  HostBuffer(HostBuffer&& o) noexcept;
  HostBuffer& operator=(HostBuffer&& o) noexcept;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  void* data() const { return data_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  size_t bytes() const { return bytes_; }
  size_t mapped_bytes() const { return mapped_; }  // the mapping: bytes rounded up to 2 MiB
  explicit operator bool() const { return data_ != nullptr; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;   // requested
  size_t mapped_ = 0;  // rounded to 2 MiB
};

}  // namespace zs::exec
