// MemoryAccount, Buffer and Event (device.h), and the host device: streams as worker threads, copies as memcpy.
#include "exec/host_device.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/memory.h"
#include "exec/device_kernels.h"
#include "exec/event_state.h"
#include "exec/host_buffer.h"
#include "exec/spin.h"
#include "exec/thread_pool.h"

namespace zs::exec {

// --- MemoryAccount ---------------------------------------------------------------------------------------------

namespace {
std::string key_of(const std::string& what) { return what.substr(0, what.find('#')); }
}  // namespace

Status MemoryAccount::reserve(int64_t bytes, const std::string& what) {
  std::lock_guard<std::mutex> lk(mu_);
  if (in_use_ + bytes > capacity_)
    return core::Error{core::ErrorKind::io, tier_ + " out of memory allocating " + core::format_bytes(bytes) + " for " +
                                                what + ": " + core::format_bytes(in_use_) + " in use, capacity " +
                                                core::format_bytes(capacity_)};
  in_use_ += bytes;
  peak_ = std::max(peak_, in_use_);
  by_name_[key_of(what)] += bytes;
  return {};
}

void MemoryAccount::release(int64_t bytes, const std::string& what) {
  std::lock_guard<std::mutex> lk(mu_);
  in_use_ -= bytes;
  auto it = by_name_.find(key_of(what));
  if (it != by_name_.end() && (it->second -= bytes) == 0) by_name_.erase(it);
}

int64_t MemoryAccount::in_use() const {
  std::lock_guard<std::mutex> lk(mu_);
  return in_use_;
}
int64_t MemoryAccount::peak() const {
  std::lock_guard<std::mutex> lk(mu_);
  return peak_;
}
void MemoryAccount::reset_peak() {
  std::lock_guard<std::mutex> lk(mu_);
  peak_ = in_use_;
}
std::map<std::string, int64_t> MemoryAccount::by_name() const {
  std::lock_guard<std::mutex> lk(mu_);
  return by_name_;
}

// --- Buffer ----------------------------------------------------------------------------------------------------

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    reset();
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    name_ = std::move(o.name_);
    account_ = o.account_;
    del_ = o.del_;
    o.ptr_ = nullptr;
    o.bytes_ = 0;
    o.account_ = nullptr;
    o.del_ = nullptr;
  }
  return *this;
}

void Buffer::release_accounting() {
  if (account_) account_->release(bytes_, name_);
  account_ = nullptr;
}

void Buffer::reset() {
  release_accounting();
  if (ptr_ && del_) del_(ptr_, bytes_);
  ptr_ = nullptr;
  bytes_ = 0;
  del_ = nullptr;
}

// --- Event -----------------------------------------------------------------------------------------------------

bool Event::done() const {
  if (!s_) return true;
  if (!s_->done_flag.load(std::memory_order_acquire)) return false;
  return !s_->native || !s_->native_ready || s_->native_ready(s_->native.get());
}

Status Event::wait() const {
  if (!s_) return {};
  (void)spin_until([&] { return s_->done_flag.load(std::memory_order_acquire); });
  Status st;
  {
    std::unique_lock<std::mutex> lk(s_->mu);
    s_->cv.wait(lk, [&] { return s_->done; });
    st = s_->status;
  }
  if (st.ok() && s_->native && s_->native_sync) st = s_->native_sync(s_->native.get());
  return st;
}

Status Event::queued() const {
  if (!s_) return {};
  (void)spin_until([&] { return s_->done_flag.load(std::memory_order_acquire); });
  std::unique_lock<std::mutex> lk(s_->mu);
  s_->cv.wait(lk, [&] { return s_->done; });
  return s_->status;
}

// --- host device -------------------------------------------------------------------------------------------------

namespace {

constexpr int64_t kAlign = 4096;  // O_DIRECT-ready, like cudaHostAlloc'd and cudaMalloc'd memory

// Device memory and small host buffers: aligned blocks in kAlign multiples.
size_t device_block_bytes(int64_t bytes) {
  return static_cast<size_t>((std::max<int64_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign);
}

// Freed device blocks by size, for later allocations of the same size, as PyTorch's caching allocator keeps a GPU's
// freed blocks. The engine allocates the same buffers every step; without this glibc gave them back to the kernel
// (munmap, heap trims) and the next step faulted them in again: 4,611 page faults a step in `small` ZeRO-Offload
// and 226 in `tiny` (docs/notes/engine-validation.md, "The host device keeps its freed blocks"). The capacity accounting is the
// MemoryAccount's and does not see this cache, as a GPU's does not see the allocator's. One cache per process, at
// most kMaxCached bytes (a block freed past that goes back to the heap), never destroyed: a Buffer may die after
// static destructors have run.
class BlockCache {
 public:
  static constexpr size_t kMaxCached = size_t{2} << 30;
  void* take(size_t n) {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = free_.find(n);
    if (it == free_.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    cached_ -= n;
    return p;
  }
  void put(void* p, size_t n) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (cached_ + n <= kMaxCached) {
        free_[n].push_back(p);
        cached_ += n;
        return;
      }
    }
    std::free(p);
  }

 private:
  std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  size_t cached_ = 0;
};
BlockCache& block_cache() {
  static auto* c = new BlockCache;
  return *c;
}

void free_device(void* p, int64_t bytes) {
  if (p) block_cache().put(p, device_block_bytes(bytes));
}
void* device_bytes(int64_t bytes) {
  const size_t n = device_block_bytes(bytes);
  if (void* p = block_cache().take(n)) return p;
  return std::aligned_alloc(kAlign, n);
}

// Host buffers of 2 MiB and more are huge-page mappings (exec/host_buffer.h): an O_DIRECT swap from 4 KiB pages
// splits into one DMA segment per page, and reads of the optimizer states ran at 1.3 GB/s instead of the
// swapper's 2 GB/s from huge pages (bench_swapper: "0-copy 4K pages" vs "2M pages").
constexpr int64_t kHugeFrom = int64_t{2} << 20;
void free_host(void* p, int64_t bytes) {
  if (bytes >= kHugeFrom)
    unmap_huge(p, static_cast<size_t>(bytes));
  else
    std::free(p);
}
void free_host_locked(void* p, int64_t bytes) {
  if (bytes >= kHugeFrom)
    unlock_huge(p, static_cast<size_t>(bytes));
  else
    ::munlock(p, static_cast<size_t>(bytes));
  free_host(p, bytes);
}
// Page-locks a host_bytes() allocation: a huge-page mapping in whole 2 MiB pages (host_buffer.h: locking only
// `bytes` splits the last one, and O_DIRECT swaps from it ran slower). 0 or errno.
int lock_host(void* p, int64_t bytes) {
  if (bytes >= kHugeFrom) return lock_huge(p, static_cast<size_t>(bytes));
  return ::mlock(p, static_cast<size_t>(bytes)) == 0 ? 0 : errno;
}

void* aligned_bytes(int64_t bytes) { return std::aligned_alloc(kAlign, device_block_bytes(bytes)); }

void* host_bytes(int64_t bytes) {
  return bytes >= kHugeFrom ? map_huge(static_cast<size_t>(bytes)) : aligned_bytes(bytes);
}

class HostStream : public Stream {
 public:
  explicit HostStream(std::string name) : name_(std::move(name)) {
    worker_ = std::thread([this] {
      set_thread_name("zs:" + name_);
      loop();
    });
  }
  ~HostStream() override {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }
  const std::string& name() const override { return name_; }
  void* native_handle() const override { return nullptr; }

  Event push(std::vector<Event> waits, std::function<Status()> work) {
    auto st = std::make_shared<Event::State>();
    {
      std::lock_guard<std::mutex> lk(mu_);
      q_.push_back({std::move(waits), std::move(work), st});
      ++pending_;
      queued_.fetch_add(1, std::memory_order_release);
    }
    cv_.notify_all();
    return Event(st);
  }
  // Blocks until the queue is empty; returns and clears the first error seen.
  Status drain() {
    std::unique_lock<std::mutex> lk(mu_);
    idle_cv_.wait(lk, [&] { return pending_ == 0; });
    Status s = first_error_;
    first_error_ = {};
    return s;
  }

 private:
  struct Task {
    std::vector<Event> waits;
    std::function<Status()> work;
    std::shared_ptr<Event::State> done;
  };
  void loop() {
    for (;;) {
      Task t;
      (void)spin_until([&] { return queued_.load(std::memory_order_acquire) > 0; });
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return stop_ || !q_.empty(); });
        if (q_.empty()) return;
        t = std::move(q_.front());
        q_.pop_front();
        queued_.fetch_sub(1, std::memory_order_relaxed);
      }
      Status s;
      for (const Event& e : t.waits) {
        Status w = e.wait();
        if (!w.ok() && s.ok()) s = w;  // skipped: a dependency failed (its error travels on)
      }
      if (s.ok() && t.work) s = t.work();
      t.work = nullptr;  // drop captured buffers before signalling
      t.done->finish(s);
      {
        std::lock_guard<std::mutex> lk(mu_);
        if (!s.ok() && first_error_.ok()) first_error_ = s;
        if (--pending_ == 0) idle_cv_.notify_all();
      }
    }
  }

  std::string name_;
  std::thread worker_;
  std::mutex mu_;
  std::condition_variable cv_, idle_cv_;
  std::deque<Task> q_;
  int64_t pending_ = 0;
  std::atomic<int64_t> queued_{0};  // q_.size(), for the worker's spin before it sleeps
  bool stop_ = false;
  Status first_error_;
};

class HostDevice : public Device {
 public:
  explicit HostDevice(const HostDeviceOptions& o) : o_(o), mem_("gpu (host device)", o.memory_bytes) {}
  ~HostDevice() override { (void)synchronize(); }

  DeviceInfo info() const override { return {"host (CPU stand-in)", "host", o_.memory_bytes}; }

  Result<Buffer> allocate(int64_t bytes, const std::string& name) override {
    ZS_TRY(mem_.reserve(bytes, name));
    void* p = device_bytes(bytes);
    if (!p) {
      mem_.release(bytes, name);
      return core::Error{core::ErrorKind::io,
                         "host device: the host refused " + core::format_bytes(bytes) + " for " + name};
    }
    return Buffer(p, bytes, name, &mem_, &free_device);
  }

  Result<Buffer> allocate_host(int64_t bytes, bool pinned, const std::string& name, MemoryAccount& account) override {
    ZS_TRY(account.reserve(bytes, name));
    void* p = host_bytes(bytes);
    if (!p) {
      account.release(bytes, name);
      return core::Error{core::ErrorKind::io,
                         "host memory: " + core::format_bytes(bytes) + " for " + name + " refused"};
    }
    if (pinned && o_.lock_pinned && bytes > 0) {
      if (const int e = lock_host(p, bytes); e != 0) {
        std::lock_guard<std::mutex> lk(warn_mu_);
        if (warnings_.empty())
          warnings_.push_back("page-locking host buffers failed (" + std::string(std::strerror(e)) +
                              "; raise `ulimit -l`): pinned buffers are pageable");
      }
      return Buffer(p, bytes, name, &account, &free_host_locked);
    }
    return Buffer(p, bytes, name, &account, &free_host);
  }

  MemoryAccount& memory() override { return mem_; }

  Result<Stream*> stream(const std::string& name) override {
    std::lock_guard<std::mutex> lk(streams_mu_);
    auto& s = streams_[name];
    if (!s) s = std::make_unique<HostStream>(name);
    return static_cast<Stream*>(s.get());
  }

  Event enqueue(Stream& s, const std::vector<Event>& waits, std::function<Status()> work) override {
    return static_cast<HostStream&>(s).push(waits, std::move(work));
  }

  Event launch(Stream& s, const std::vector<Event>& waits, std::function<Status(void*)> work,
               const LaunchOptions& o) override {
    return enqueue(s, waits, [work = std::move(work), o]() -> Status {
      using clk = std::chrono::steady_clock;
      if (o.start_s) *o.start_s = std::chrono::duration<double>(clk::now() - o.epoch).count();
      Status st = work ? work(nullptr) : Status{};
      if (o.end_s) *o.end_s = std::chrono::duration<double>(clk::now() - o.epoch).count();
      return st;
    });
  }

  DeviceKernels& kernels() override { return *kernels_; }

  Event copy(Stream& s, const std::vector<Event>& waits, void* dst, const void* src, int64_t bytes, CopyKind) override {
    return enqueue(s, waits, [dst, src, bytes] {
      if (bytes > 0) std::memcpy(dst, src, static_cast<size_t>(bytes));
      return Status{};
    });
  }

  Status synchronize() override {
    std::vector<HostStream*> all;
    {
      std::lock_guard<std::mutex> lk(streams_mu_);
      for (auto& [n, s] : streams_) all.push_back(s.get());
    }
    Status first;
    // Streams wait on each other's events, so drain until a full pass finds every queue empty.
    for (HostStream* s : all) {
      Status e = s->drain();
      if (!e.ok() && first.ok()) first = e;
    }
    return first;
  }

  std::vector<std::string> warnings() const override {
    std::lock_guard<std::mutex> lk(warn_mu_);
    return warnings_;
  }

 private:
  HostDeviceOptions o_;
  MemoryAccount mem_;
  std::unique_ptr<DeviceKernels> kernels_ = make_host_kernels();
  std::mutex streams_mu_;
  std::map<std::string, std::unique_ptr<HostStream>> streams_;
  mutable std::mutex warn_mu_;
  std::vector<std::string> warnings_;
};

}  // namespace

std::unique_ptr<Device> make_host_device(const HostDeviceOptions& o) { return std::make_unique<HostDevice>(o); }

}  // namespace zs::exec
