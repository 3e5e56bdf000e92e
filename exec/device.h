// Device: where the engine's "GPU" work runs — memory with capacity accounting, streams, events, copies and the
// kernels (device_kernels.h), as CUDA offers them; the host device (host_device.h) is a CPU stand-in and the CUDA
// device (exec/cuda/cuda_device.h) the real one. Work is stream-ordered: enqueue() (host work), launch() (device
// work) and copy() return an Event that later work on any stream may wait for.
//   std::unique_ptr<Device> dev = make_host_device({.memory_bytes = 8LL << 30});
//   auto buf = dev->allocate(1 << 20, "activations");        // fails past capacity, as cudaMalloc would
//   Stream* s = *dev->stream("compute");
//   Event e = dev->launch(*s, {}, [&](void* st) { return dev->kernels().zero(buf->data(), 1 << 20, st); });
//   Status st = dev->synchronize();
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.h"

namespace zs::exec {

using core::Result;
using core::Status;

// Bytes in use on one memory tier, their peak and the capacity; thread-safe. Requested bytes are counted
// (no allocator rounding), so a run's peak is comparable byte for byte with the Plan's ledger.
class MemoryAccount {
 public:
  MemoryAccount(std::string tier, int64_t capacity_bytes) : tier_(std::move(tier)), capacity_(capacity_bytes) {}
  // Fails without changing anything when in-use + bytes would exceed the capacity (what: the allocation's name).
  Status reserve(int64_t bytes, const std::string& what);
  void release(int64_t bytes, const std::string& what);
  int64_t in_use() const;
  int64_t peak() const;
  int64_t capacity() const { return capacity_; }
  void set_capacity(int64_t bytes) { capacity_ = bytes; }  // before any reservation
  void reset_peak();                                       // peak := in use
  // In-use bytes by allocation name (the part of the name before any '#'), for reports.
  std::map<std::string, int64_t> by_name() const;
  const std::string& tier() const { return tier_; }

 private:
  std::string tier_;
  int64_t capacity_ = 0;
  mutable std::mutex mu_;
  int64_t in_use_ = 0, peak_ = 0;
  std::map<std::string, int64_t> by_name_;
};

// Memory from a device or the host, move-only: freed and un-accounted on destruction.
class Buffer {
 public:
  using Deleter = void (*)(void* ptr, int64_t bytes);
  Buffer() = default;
  Buffer(void* ptr, int64_t bytes, std::string name, MemoryAccount* account, Deleter del)
      : ptr_(ptr), bytes_(bytes), name_(std::move(name)), account_(account), del_(del) {}
  ~Buffer() { reset(); }
  Buffer(Buffer&& o) noexcept { *this = std::move(o); }
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return ptr_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  int64_t bytes() const { return bytes_; }
  const std::string& name() const { return name_; }
  explicit operator bool() const { return ptr_ != nullptr || bytes_ > 0; }
  void reset();
  // Gives the accounting back now but keeps the memory until the Buffer dies: a stream-ordered free
  // (cudaFreeAsync) whose bytes are available to later allocations while queued work still reads them.
  void release_accounting();

 private:
  void* ptr_ = nullptr;
  int64_t bytes_ = 0;
  std::string name_;
  MemoryAccount* account_ = nullptr;
  Deleter del_ = nullptr;
};

// Completion of enqueued work; copyable handle. wait() blocks until the work has run and says how it ended: work
// that failed, or was skipped because something it waited for failed, carries the first error.
class Event {
 public:
  Event() = default;  // an event that is already complete
  bool done() const;
  Status wait() const;
  // Waits only until the work is queued on its device (device work on CUDA: launched; host work: run) and returns
  // its status so far; the device's own wait for the rest is the native marker (event_state.h).
  Status queued() const;
  struct State;
  explicit Event(std::shared_ptr<State> s) : s_(std::move(s)) {}
  const std::shared_ptr<State>& state() const { return s_; }

 private:
  std::shared_ptr<State> s_;
};

// An in-order queue of work (a CUDA stream). Owned by its device.
class Stream {
 public:
  virtual ~Stream() = default;
  virtual const std::string& name() const = 0;
  virtual void* native_handle() const = 0;  // cudaStream_t on CUDA, nullptr on the host device
};

enum class CopyKind : uint8_t { h2d, d2h, d2d, h2h };

class DeviceKernels;  // device_kernels.h

// How launch() runs its work.
struct LaunchOptions {
  // Wait on the host until every event in `waits` has completed, device work included, before `work` is called:
  // for work whose launch reads on the host what earlier device work wrote (the gradient norm's partial sums).
  bool sync_waits = false;
  // When set: when the work ran on its stream, in seconds since `epoch` — valid once synchronize() has returned
  // (CUDA: from events recorded around the work on the stream; the host device: around the call).
  double* start_s = nullptr;
  double* end_s = nullptr;
  std::chrono::steady_clock::time_point epoch{};
};

struct DeviceInfo {
  std::string name;  // "host (CPU stand-in)", "NVIDIA H200"
  std::string kind;  // "host", "cuda"
  int64_t memory_bytes = 0;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual DeviceInfo info() const = 0;

  // Device memory ("GPU" HBM), accounted in memory(); fails past capacity with the sizes in the message.
  virtual Result<Buffer> allocate(int64_t bytes, const std::string& name) = 0;
  // Host memory accounted in `account` (the engine's CPU tier): page-locked (cudaHostAlloc; mlock on the host
  // device, unlocked with a warning when RLIMIT_MEMLOCK refuses) or pageable.
  virtual Result<Buffer> allocate_host(int64_t bytes, bool pinned, const std::string& name, MemoryAccount& account) = 0;
  virtual MemoryAccount& memory() = 0;

  // The stream of that name, created on first use.
  virtual Result<Stream*> stream(const std::string& name) = 0;
  // Host work in stream order, after every event in `waits` has completed and after the work queued on `s` before
  // it has run (CUDA: on the stream's host thread, which then waits for the GPU). For work on host memory: CPU
  // Adam, NVMe swaps, host-side casts.
  virtual Event enqueue(Stream& s, const std::vector<Event>& waits, std::function<Status()> work) = 0;
  // Device work in stream order: `work` is called with the stream's native handle (cudaStream_t on CUDA, nullptr
  // on the host device) and queues its work there through kernels() — kernel launches, async copies, NCCL; the
  // host device runs it in the call. The Event completes when that work has run. On CUDA `work` is called on the
  // stream's host thread once the waits' host parts are done (the GPU then waits for their GPU parts): it must
  // not block on other device work unless LaunchOptions::sync_waits says the waits are complete.
  virtual Event launch(Stream& s, const std::vector<Event>& waits, std::function<Status(void* stream)> work,
                       const LaunchOptions& o = {}) = 0;
  // The device's arithmetic (GPT modules, gradient casts and sums, Adam), called from launch()'s work.
  virtual DeviceKernels& kernels() = 0;
  // An asynchronous copy in stream order (pinned host memory for h2d/d2h, as DeepSpeed requires).
  virtual Event copy(Stream& s, const std::vector<Event>& waits, void* dst, const void* src, int64_t bytes,
                     CopyKind kind) = 0;
  // Waits for every stream; the first error of any work since the last synchronize().
  virtual Status synchronize() = 0;
  virtual std::vector<std::string> warnings() const = 0;
};

}  // namespace zs::exec
