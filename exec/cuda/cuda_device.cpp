// The CUDA device (cuda_device.h). Each stream is a cudaStreamNonBlocking stream plus a worker thread (as the host
// device's HostStream): blocking host work — CPU Adam, NVMe swaps, MPI — of different streams runs in parallel, and
// the issuing thread never waits. Nothing uses the legacy stream, so no allocation or free is a device-wide barrier.
#include "exec/cuda/cuda_device.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/memory.h"
#include "exec/cuda/cuda_check.h"
#include "exec/cuda/cuda_kernels.h"
#include "exec/cuda/cuda_stream.h"
#include "exec/device_kernels.h"
#include "exec/event_state.h"

namespace zs::exec {

CudaAvailability cuda_available() {
  CudaAvailability a;
  const cudaError_t e = cudaGetDeviceCount(&a.device_count);
  if (e == cudaErrorInsufficientDriver) {
    a.reason = "no GPU: the CUDA driver is absent (cudaGetDeviceCount: cudaErrorInsufficientDriver)";
    a.device_count = 0;
    return a;
  }
  if (e == cudaErrorNoDevice || (e == cudaSuccess && a.device_count == 0)) {
    a.reason = "no GPU: no CUDA device is visible (cudaErrorNoDevice)";
    a.device_count = 0;
    return a;
  }
  if (e != cudaSuccess) {
    a.reason =
        std::string("no usable GPU: cudaGetDeviceCount: ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
    a.device_count = 0;
    return a;
  }
  int major = 0, minor = 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);
  if (major < 8) {
    a.reason = "no usable GPU: device 0 has compute capability " + std::to_string(major) + "." + std::to_string(minor) +
               "; zerosim's kernels are built for sm_80 and sm_90";
    return a;
  }
  a.usable = true;
  return a;
}

namespace {

using cuda_detail::as_event;
using cuda_detail::clk;
using cuda_detail::CudaStream;
using cuda_detail::DeviceLog;
using cuda_detail::Span;

constexpr int64_t kDeviceGrain = 512;   // device blocks are cached by size rounded up to this
constexpr int64_t kPinnedGrain = 4096;  // pinned blocks: O_DIRECT-ready, as before

size_t round_up(int64_t bytes, int64_t grain) {
  return static_cast<size_t>((std::max<int64_t>(bytes, 1) + grain - 1) / grain * grain);
}

// --- fenced block cache ----------------------------------------------------------------------------------------

// The last task submitted to each stream when a block was freed: once all have completed, so has every use of the
// block (the engine frees a buffer after issuing the last work that touches it; a stream's Event completes only
// after everything queued on that stream before it).
using Fence = std::vector<std::shared_ptr<Event::State>>;
bool passed(const Fence& f) {
  return std::all_of(f.begin(), f.end(), [](const auto& s) { return Event(s).done(); });
}
void wait_for(const Fence& f) {
  for (const auto& s : f) (void)Event(s).wait();  // failed work has still run to its end
}

struct Block {
  void* ptr = nullptr;
  Fence fence;
};

// Freed blocks of one kind by rounded size. Never waits while holding its lock: a worker thread may be freeing.
class BlockCache {
 public:
  void put(void* p, size_t n, Fence f) {
    std::lock_guard<std::mutex> lk(mu_);
    blocks_[n].push_back({p, std::move(f)});
  }
  // A block of exactly n bytes whose fence has passed, or nullptr.
  void* take(size_t n) {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = blocks_.find(n);
    if (it == blocks_.end()) return nullptr;
    auto& v = it->second;
    for (size_t i = 0; i < v.size(); ++i) {
      if (!passed(v[i].fence)) continue;
      void* p = v[i].ptr;
      v[i] = std::move(v.back());
      v.pop_back();
      return p;
    }
    return nullptr;
  }
  std::vector<Block> take_all() {
    std::lock_guard<std::mutex> lk(mu_);
    std::vector<Block> all;
    for (auto& [n, v] : blocks_)
      for (auto& b : v) all.push_back(std::move(b));
    blocks_.clear();
    return all;
  }
  // After synchronize(): lets go of the events of fences that have passed.
  void drop_passed_fences() {
    std::lock_guard<std::mutex> lk(mu_);
    for (auto& [n, v] : blocks_)
      for (auto& b : v)
        if (passed(b.fence)) b.fence.clear();
  }

 private:
  std::mutex mu_;
  std::unordered_map<size_t, std::vector<Block>> blocks_;
};

// --- the device ------------------------------------------------------------------------------------------------

class CudaDevice;

// Live allocations of every CUDA device, so a Buffer's plain-function deleter finds its device.
std::mutex& registry_mu() {
  static std::mutex mu;
  return mu;
}
std::unordered_map<void*, CudaDevice*>& registry() {
  static std::unordered_map<void*, CudaDevice*> m;
  return m;
}
void register_block(void* p, CudaDevice* d) {
  std::lock_guard<std::mutex> lk(registry_mu());
  registry()[p] = d;
}
CudaDevice* unregister_block(void* p) {
  std::lock_guard<std::mutex> lk(registry_mu());
  auto it = registry().find(p);
  if (it == registry().end()) return nullptr;
  CudaDevice* d = it->second;
  registry().erase(it);
  return d;
}

void free_device(void* p, int64_t bytes);
void free_pinned(void* p, int64_t bytes);
void free_pageable(void* p, int64_t) { std::free(p); }

class CudaDevice : public Device {
 public:
  CudaDevice(int ordinal, cudaMemPool_t pool, int64_t capacity, std::string name, std::vector<std::string> warnings)
      : ordinal_(ordinal),
        pool_(pool),
        name_(std::move(name)),
        mem_("gpu (cuda)", capacity),
        warnings_(std::move(warnings)) {}

  // The private stream (allocations and the timing anchor), the anchor, the kernels.
  Status init() {
    ZS_CUDA_TRY(cudaStreamCreateWithFlags(&side_, cudaStreamNonBlocking));
    ZS_CUDA_TRY(cudaEventCreateWithFlags(&anchor_, cudaEventDefault));
    ZS_TRY(take_anchor());
    kernels_ = make_cuda_kernels(ordinal_);
    if (!kernels_)
      return core::internal_error("cuda device: make_cuda_kernels(" + std::to_string(ordinal_) + ") failed");
    return {};
  }

  ~CudaDevice() override {
    (void)synchronize();
    kernels_.reset();
    std::map<std::string, std::unique_ptr<CudaStream>> streams;
    {
      std::lock_guard<std::mutex> lk(streams_mu_);
      streams.swap(streams_);
    }
    streams.clear();  // joins the (idle) workers, destroys the cudaStreams
    (void)bind();
    for (Block& b : device_cache_.take_all()) (void)cudaFreeAsync(b.ptr, side_);
    if (side_) (void)cudaStreamSynchronize(side_);
    for (Block& b : pinned_cache_.take_all()) (void)cudaFreeHost(b.ptr);
    {
      // Buffers that outlive their device (a caller's bug) leak instead of reaching a dead device.
      std::lock_guard<std::mutex> lk(registry_mu());
      std::erase_if(registry(), [this](const auto& kv) { return kv.second == this; });
    }
    // Outstanding allocations keep the pool alive until they are freed (cudaMemPoolDestroy's contract).
    if (pool_) (void)cudaMemPoolDestroy(pool_);
    if (anchor_) (void)cudaEventDestroy(anchor_);
    if (side_) (void)cudaStreamDestroy(side_);
  }

  DeviceInfo info() const override { return {name_, "cuda", mem_.capacity()}; }

  Result<Buffer> allocate(int64_t bytes, const std::string& name) override {
    ZS_TRY(bind());
    ZS_TRY(mem_.reserve(bytes, name));
    const size_t n = round_up(bytes, kDeviceGrain);
    void* p = device_cache_.take(n);
    if (!p) {
      cudaError_t e = pool_alloc(&p, n);
      if (e == cudaErrorMemoryAllocation) {  // cached blocks of other sizes may hold the memory: give them back
        (void)cudaGetLastError();
        trim_device_cache();
        e = pool_alloc(&p, n);
      }
      if (e != cudaSuccess) {
        mem_.release(bytes, name);
        (void)cudaGetLastError();  // an allocation failure is not sticky: clear it for later calls
        return core::Error{core::ErrorKind::io, "cuda device: cudaMallocFromPoolAsync refused " +
                                                    core::format_bytes(bytes) + " for " + name + " (" +
                                                    cudaGetErrorString(e) + "; " + core::format_bytes(mem_.in_use()) +
                                                    " accounted in use)"};
      }
    }
    register_block(p, this);
    return Buffer(p, bytes, name, &mem_, &free_device);
  }

  Result<Buffer> allocate_host(int64_t bytes, bool pinned, const std::string& name, MemoryAccount& account) override {
    ZS_TRY(account.reserve(bytes, name));
    const size_t n = round_up(bytes, kPinnedGrain);
    if (!pinned) {
      void* p = std::aligned_alloc(kPinnedGrain, n);
      if (!p) {
        account.release(bytes, name);
        return core::Error{core::ErrorKind::io,
                           "host memory: " + core::format_bytes(bytes) + " for " + name + " refused"};
      }
      return Buffer(p, bytes, name, &account, &free_pageable);
    }
    void* p = pinned_cache_.take(n);
    if (!p) {
      if (Status b = bind(); !b.ok()) {
        account.release(bytes, name);
        return b.error();
      }
      cudaError_t e = cudaHostAlloc(&p, n, cudaHostAllocDefault);
      if (e == cudaErrorMemoryAllocation) {  // cudaFreeHost synchronises the device: only on this failure path
        (void)cudaGetLastError();
        for (Block& b : take_passed_all(pinned_cache_)) (void)cudaFreeHost(b.ptr);
        e = cudaHostAlloc(&p, n, cudaHostAllocDefault);
      }
      if (e != cudaSuccess) {
        account.release(bytes, name);
        (void)cudaGetLastError();
        return core::Error{core::ErrorKind::io, "cudaHostAlloc refused " + core::format_bytes(bytes) + " for " + name +
                                                    " (" + cudaGetErrorString(e) + ")"};
      }
    }
    register_block(p, this);
    return Buffer(p, bytes, name, &account, &free_pinned);
  }

  MemoryAccount& memory() override { return mem_; }

  Result<Stream*> stream(const std::string& name) override {
    std::lock_guard<std::mutex> lk(streams_mu_);
    if (auto it = streams_.find(name); it != streams_.end()) return static_cast<Stream*>(it->second.get());
    ZS_TRY(bind());
    cudaStream_t cs = nullptr;
    ZS_CUDA_TRY(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
    auto& s = streams_[name];
    s = std::make_unique<CudaStream>(name, cs, ordinal_, log_);
    return static_cast<Stream*>(s.get());
  }

  Event enqueue(Stream& s, const std::vector<Event>& waits, std::function<Status()> work) override {
    CudaStream::Task t;
    t.host = true;
    t.waits = waits;
    t.host_work = std::move(work);
    return static_cast<CudaStream&>(s).push(std::move(t));
  }

  Event launch(Stream& s, const std::vector<Event>& waits, std::function<Status(void*)> work,
               const LaunchOptions& o) override {
    CudaStream::Task t;
    t.waits = waits;
    t.device_work = std::move(work);
    t.o = o;
    return static_cast<CudaStream&>(s).push(std::move(t));
  }

  DeviceKernels& kernels() override { return *kernels_; }

  // `kind` is not needed: under unified addressing cudaMemcpyDefault tells the memories apart.
  Event copy(Stream& s, const std::vector<Event>& waits, void* dst, const void* src, int64_t bytes, CopyKind) override {
    auto work = [dst, src, bytes](void* st) -> Status {
      if (bytes <= 0) return {};
      return ZS_CUDA_STATUS(
          cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDefault, static_cast<cudaStream_t>(st)));
    };
    return launch(s, waits, std::move(work), LaunchOptions{});
  }

  Status synchronize() override {
    log_.note(bind());
    std::vector<CudaStream*> all;
    {
      std::lock_guard<std::mutex> lk(streams_mu_);
      for (auto& [n, s] : streams_) all.push_back(s.get());
    }
    // Issue order makes the waits acyclic: one pass drains everything queued before this call.
    for (CudaStream* s : all) s->drain();
    for (CudaStream* s : all) log_.note(ZS_CUDA_STATUS(cudaStreamSynchronize(s->cuda())));
    fill_spans();
    log_.note(take_anchor());
    device_cache_.drop_passed_fences();
    pinned_cache_.drop_passed_fences();
    return log_.take_error();
  }

  std::vector<std::string> warnings() const override { return warnings_; }

  // The deleters' side: the block waits in its cache until the work issued before the free has run.
  void recycle(void* p, int64_t bytes, bool pinned) {
    Fence f;
    {
      std::lock_guard<std::mutex> lk(streams_mu_);
      for (auto& [n, s] : streams_)
        if (auto last = s->last_submitted()) f.push_back(std::move(last));
    }
    if (pinned)
      pinned_cache_.put(p, round_up(bytes, kPinnedGrain), std::move(f));
    else
      device_cache_.put(p, round_up(bytes, kDeviceGrain), std::move(f));
  }

 private:
  Status bind() const { return ZS_CUDA_STATUS(cudaSetDevice(ordinal_)); }

  // The private stream does nothing else, so the synchronisation returns as soon as the pool has answered.
  cudaError_t pool_alloc(void** p, size_t n) {
    cudaError_t e = cudaMallocFromPoolAsync(p, n, pool_, side_);
    if (e == cudaSuccess) e = cudaStreamSynchronize(side_);
    return e;
  }

  // Every cached block, once its fence has passed (waited for outside the cache's lock).
  static std::vector<Block> take_passed_all(BlockCache& c) {
    std::vector<Block> all = c.take_all();
    for (const Block& b : all) wait_for(b.fence);
    return all;
  }
  void trim_device_cache() {
    for (Block& b : take_passed_all(device_cache_)) (void)cudaFreeAsync(b.ptr, side_);
    (void)cudaStreamSynchronize(side_);
  }

  // The anchor pairs a GPU timestamp with the host clock: recorded on the idle private stream and waited for.
  Status take_anchor() {
    ZS_CUDA_TRY(cudaEventRecord(anchor_, side_));
    ZS_CUDA_TRY(cudaEventSynchronize(anchor_));
    anchor_host_ = clk::now();
    return {};
  }
  // Seconds since each span's epoch: (anchor − epoch) on the host clock + (event − anchor) on the GPU's.
  void fill_spans() {
    std::vector<Span> spans;
    {
      std::lock_guard<std::mutex> lk(log_.mu);
      spans.swap(log_.spans);
    }
    for (const Span& sp : spans) {
      float start_ms = 0, end_ms = 0;
      if (cudaEventElapsedTime(&start_ms, anchor_, as_event(sp.start)) != cudaSuccess ||
          cudaEventElapsedTime(&end_ms, anchor_, as_event(sp.end)) != cudaSuccess) {
        (void)cudaGetLastError();  // the work failed; its error is reported already
        continue;
      }
      const double base_s = std::chrono::duration<double>(anchor_host_ - sp.epoch).count();
      if (sp.start_s) *sp.start_s = base_s + start_ms / 1e3;
      if (sp.end_s) *sp.end_s = base_s + end_ms / 1e3;
    }
  }

  int ordinal_ = 0;
  cudaMemPool_t pool_ = nullptr;
  cudaStream_t side_ = nullptr;  // private: allocations, frees and the anchor
  cudaEvent_t anchor_ = nullptr;
  clk::time_point anchor_host_;
  std::string name_;
  MemoryAccount mem_;
  std::vector<std::string> warnings_;
  DeviceLog log_;
  BlockCache device_cache_, pinned_cache_;
  std::unique_ptr<DeviceKernels> kernels_;
  std::mutex streams_mu_;
  std::map<std::string, std::unique_ptr<CudaStream>> streams_;
};

void free_device(void* p, int64_t bytes) {
  if (CudaDevice* d = unregister_block(p)) d->recycle(p, bytes, false);
}
void free_pinned(void* p, int64_t bytes) {
  if (CudaDevice* d = unregister_block(p)) d->recycle(p, bytes, true);
}

}  // namespace

Result<std::unique_ptr<Device>> make_cuda_device(const CudaDeviceOptions& o) {
  const CudaAvailability a = cuda_available();
  if (!a.usable) return core::Error{core::ErrorKind::unsupported, "--device cuda: " + a.reason};
  if (o.device < 0 || o.device >= a.device_count)
    return core::bad_input("cuda device " + std::to_string(o.device) + " does not exist (" +
                           std::to_string(a.device_count) + " visible)");
  ZS_CUDA_TRY(cudaSetDevice(o.device));
  cudaDeviceProp prop{};
  ZS_CUDA_TRY(cudaGetDeviceProperties(&prop, o.device));
  size_t free_b = 0, total_b = 0;
  ZS_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
  std::vector<std::string> warnings;
  int64_t capacity = static_cast<int64_t>(free_b);
  if (o.memory_bytes > 0 && o.memory_bytes <= capacity) {
    capacity = o.memory_bytes;
  } else if (o.memory_bytes > capacity) {
    warnings.push_back("the hardware profile's GPU memory " + core::format_bytes(o.memory_bytes) + " exceeds the " +
                       core::format_bytes(capacity) + " free on " + prop.name + ": capacity clamped to what is free");
  }
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = o.device;
  cudaMemPool_t pool = nullptr;
  ZS_CUDA_TRY(cudaMemPoolCreate(&pool, &props));
  // Keep freed memory in the pool (the default threshold 0 returns it to the driver at every synchronize).
  uint64_t keep = UINT64_MAX;
  if (cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep) != cudaSuccess) {
    (void)cudaMemPoolDestroy(pool);
    return cuda_error(cudaGetLastError(), "cudaMemPoolSetAttribute", __FILE__, __LINE__);
  }
  auto dev = std::make_unique<CudaDevice>(o.device, pool, capacity, prop.name, std::move(warnings));
  ZS_TRY(dev->init());  // on failure the destructor releases what init() made, the pool included
  return std::unique_ptr<Device>(std::move(dev));
}

}  // namespace zs::exec
