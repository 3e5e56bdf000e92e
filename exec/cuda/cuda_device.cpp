// The CUDA device (cuda_device.h). Host work runs in cudaLaunchHostFunc callbacks, which must not call CUDA:
// a finished task (and the buffers its closure captured, whose deleters do call CUDA) is parked and destroyed
// on the next call from a user thread, never inside the callback.
#include "exec/cuda/cuda_device.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "core/memory.h"
#include "exec/cuda/cuda_check.h"
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

cudaStream_t raw(Stream& s) { return static_cast<cudaStream_t>(s.native_handle()); }

class CudaStream : public Stream {
 public:
  CudaStream(std::string name, cudaStream_t s) : name_(std::move(name)), s_(s) {}
  ~CudaStream() override {
    if (s_) (void)cudaStreamDestroy(s_);
  }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  const std::string& name() const override { return name_; }
  void* native_handle() const override { return s_; }

 private:
  std::string name_;
  cudaStream_t s_ = nullptr;
};

void free_device(void* p, int64_t) { (void)cudaFreeAsync(p, cudaStreamLegacy); }
void free_pinned(void* p, int64_t) { (void)cudaFreeHost(p); }
void free_pageable(void* p, int64_t) { std::free(p); }

std::shared_ptr<void> own_event(cudaEvent_t e) {
  return std::shared_ptr<void>(static_cast<void*>(e),
                               [](void* p) { (void)cudaEventDestroy(static_cast<cudaEvent_t>(p)); });
}
cudaEvent_t native_event(const Event& e) {
  return e.state() ? static_cast<cudaEvent_t>(e.state()->native.get()) : nullptr;
}

class CudaDevice;

// What a host callback needs: the work, what it waited for (their statuses), the Event it completes.
struct HostTask {
  CudaDevice* dev = nullptr;
  std::vector<Event> waits;
  std::function<Status()> work;  // empty: only propagate the waits' statuses (copies, markers)
  std::shared_ptr<Event::State> done;
};

class CudaDevice : public Device {
 public:
  CudaDevice(int ordinal, cudaMemPool_t pool, int64_t capacity, std::string name, std::vector<std::string> warnings)
      : ordinal_(ordinal),
        pool_(pool),
        name_(std::move(name)),
        mem_("gpu (cuda)", capacity),
        warnings_(std::move(warnings)) {}

  ~CudaDevice() override {
    (void)synchronize();
    streams_.clear();
    reap();
    (void)cudaStreamSynchronize(cudaStreamLegacy);
    // Outstanding allocations keep the pool alive until they are freed (cudaMemPoolDestroy's contract).
    if (pool_) (void)cudaMemPoolDestroy(pool_);
  }

  DeviceInfo info() const override { return {name_, "cuda", mem_.capacity()}; }

  Result<Buffer> allocate(int64_t bytes, const std::string& name) override {
    ZS_TRY(bind());
    reap();
    ZS_TRY(mem_.reserve(bytes, name));
    void* p = nullptr;
    const cudaError_t e =
        cudaMallocFromPoolAsync(&p, static_cast<size_t>(std::max<int64_t>(bytes, 1)), pool_, cudaStreamLegacy);
    if (e != cudaSuccess) {
      mem_.release(bytes, name);
      (void)cudaGetLastError();  // an allocation failure is not sticky: clear it for later calls
      return core::Error{core::ErrorKind::io, "cuda device: cudaMallocFromPoolAsync refused " +
                                                  core::format_bytes(bytes) + " for " + name + " (" +
                                                  cudaGetErrorString(e) + "; " + core::format_bytes(mem_.in_use()) +
                                                  " accounted in use)"};
    }
    return Buffer(p, bytes, name, &mem_, &free_device);
  }

  Result<Buffer> allocate_host(int64_t bytes, bool pinned, const std::string& name, MemoryAccount& account) override {
    ZS_TRY(bind());
    ZS_TRY(account.reserve(bytes, name));
    const size_t n = static_cast<size_t>((std::max<int64_t>(bytes, 1) + 4095) / 4096 * 4096);
    if (pinned) {
      void* p = nullptr;
      const cudaError_t e = cudaHostAlloc(&p, n, cudaHostAllocDefault);
      if (e == cudaSuccess) return Buffer(p, bytes, name, &account, &free_pinned);
      account.release(bytes, name);
      (void)cudaGetLastError();
      return core::Error{core::ErrorKind::io, "cudaHostAlloc refused " + core::format_bytes(bytes) + " for " + name +
                                                  " (" + cudaGetErrorString(e) + ")"};
    }
    void* p = std::aligned_alloc(4096, n);
    if (!p) {
      account.release(bytes, name);
      return core::Error{core::ErrorKind::io,
                         "host memory: " + core::format_bytes(bytes) + " for " + name + " refused"};
    }
    return Buffer(p, bytes, name, &account, &free_pageable);
  }

  MemoryAccount& memory() override { return mem_; }

  Result<Stream*> stream(const std::string& name) override {
    std::lock_guard<std::mutex> lk(streams_mu_);
    if (auto it = streams_.find(name); it != streams_.end()) return static_cast<Stream*>(it->second.get());
    ZS_TRY(bind());
    cudaStream_t cs = nullptr;
    // Blocking (not cudaStreamNonBlocking): allocation and free on the legacy stream must order against it.
    ZS_CUDA_TRY(cudaStreamCreateWithFlags(&cs, cudaStreamDefault));
    auto& s = streams_[name];
    s = std::make_unique<CudaStream>(name, cs);
    return static_cast<Stream*>(s.get());
  }

  Event enqueue(Stream& s, const std::vector<Event>& waits, std::function<Status()> work) override {
    return submit(s, waits, std::move(work), nullptr);
  }

  Event copy(Stream& s, const std::vector<Event>& waits, void* dst, const void* src, int64_t bytes,
             CopyKind kind) override {
    const cudaMemcpyKind k = kind == CopyKind::h2d   ? cudaMemcpyHostToDevice
                             : kind == CopyKind::d2h ? cudaMemcpyDeviceToHost
                             : kind == CopyKind::d2d ? cudaMemcpyDeviceToDevice
                                                     : cudaMemcpyHostToHost;
    // The copy goes on the GPU queue now; its Event also carries any failure of what it waited for.
    return submit(s, waits, nullptr, [=](cudaStream_t cs) -> Status {
      if (bytes <= 0) return {};
      return ZS_CUDA_STATUS(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), k, cs));
    });
  }

  Status synchronize() override {
    Status first = bind();
    std::vector<cudaStream_t> all;
    {
      std::lock_guard<std::mutex> lk(streams_mu_);
      for (auto& [n, s] : streams_) all.push_back(raw(*s));
    }
    for (cudaStream_t cs : all) {
      Status e = ZS_CUDA_STATUS(cudaStreamSynchronize(cs));
      if (!e.ok() && first.ok()) first = e;
    }
    Status legacy = ZS_CUDA_STATUS(cudaStreamSynchronize(cudaStreamLegacy));
    if (!legacy.ok() && first.ok()) first = legacy;
    {
      std::lock_guard<std::mutex> lk(task_mu_);
      if (!first_error_.ok() && first.ok()) first = first_error_;
      first_error_ = {};
    }
    reap();
    return first;
  }

  std::vector<std::string> warnings() const override { return warnings_; }

  // The callback side (no CUDA calls in here).
  void complete(HostTask* t) {
    Status s;
    for (const Event& e : t->waits) {
      Status w = e.wait();  // already complete: the stream waited for its cudaEvent, recorded after its callback
      if (!w.ok() && s.ok()) s = w;
    }
    if (s.ok() && t->work) s = t->work();
    t->done->finish(s);
    std::lock_guard<std::mutex> lk(task_mu_);
    if (!s.ok() && first_error_.ok()) first_error_ = s;
    finished_.emplace_back(t);  // destroyed by reap() on a user thread
  }

 private:
  Status bind() const { return ZS_CUDA_STATUS(cudaSetDevice(ordinal_)); }

  // Destroys finished tasks (and what their closures captured) outside the callback.
  void reap() {
    std::vector<std::unique_ptr<HostTask>> dead;
    {
      std::lock_guard<std::mutex> lk(task_mu_);
      dead.swap(finished_);
    }
  }

  // waits → [gpu_op] → host callback (work, statuses) → cudaEvent record.
  Event submit(Stream& s, const std::vector<Event>& waits, std::function<Status()> work,
               const std::function<Status(cudaStream_t)>& gpu_op) {
    auto state = std::make_shared<Event::State>();
    auto fail = [&](Status st) {
      state->finish(st);
      std::lock_guard<std::mutex> lk(task_mu_);
      if (first_error_.ok()) first_error_ = st;
      return Event(state);
    };
    if (Status b = bind(); !b.ok()) return fail(b);
    reap();
    const cudaStream_t cs = raw(s);
    for (const Event& e : waits) {
      if (cudaEvent_t ev = native_event(e)) {
        if (Status w = ZS_CUDA_STATUS(cudaStreamWaitEvent(cs, ev, 0)); !w.ok()) return fail(w);
      } else if (!e.done()) {
        (void)e.wait();  // an Event of no CUDA stream (another device): wait on the host; status checked below
      }
    }
    if (gpu_op)
      if (Status g = gpu_op(cs); !g.ok()) return fail(g);
    auto task = std::make_unique<HostTask>(HostTask{this, waits, std::move(work), state});
    const cudaError_t e = cudaLaunchHostFunc(
        cs,
        [](void* p) {
          auto* t = static_cast<HostTask*>(p);
          t->dev->complete(t);
        },
        task.get());
    if (e != cudaSuccess) return fail(cuda_error(e, "cudaLaunchHostFunc", __FILE__, __LINE__));
    task.release();  // owned by the callback until complete() parks it
    cudaEvent_t ev = nullptr;
    if (Status c = ZS_CUDA_STATUS(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming)); !c.ok()) return Event(state);
    state->native = own_event(ev);
    if (Status r = ZS_CUDA_STATUS(cudaEventRecord(ev, cs)); !r.ok()) state->native.reset();
    return Event(state);
  }

  int ordinal_ = 0;
  cudaMemPool_t pool_ = nullptr;
  std::string name_;
  MemoryAccount mem_;
  std::vector<std::string> warnings_;
  std::mutex streams_mu_;
  std::map<std::string, std::unique_ptr<CudaStream>> streams_;
  std::mutex task_mu_;
  Status first_error_;
  std::vector<std::unique_ptr<HostTask>> finished_;
};

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
  return std::unique_ptr<Device>(
      std::make_unique<CudaDevice>(o.device, pool, capacity, prop.name, std::move(warnings)));
}

}  // namespace zs::exec
