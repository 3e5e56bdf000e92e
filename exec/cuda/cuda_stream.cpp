// A stream of the CUDA device (cuda_stream.h): the worker's loop, its host and device tasks, the markers.
#include "exec/cuda/cuda_stream.h"

#include "exec/cuda/cuda_check.h"
#include "exec/spin.h"

namespace zs::exec::cuda_detail {

// A failed query counts as ready, so waiters go on and native_sync reports the error.
bool cuda_event_ready(void* ev) {
  const cudaError_t e = cudaEventQuery(static_cast<cudaEvent_t>(ev));
  if (e == cudaSuccess) return true;
  (void)cudaGetLastError();
  return e != cudaErrorNotReady;
}
Status cuda_event_sync(void* ev) { return ZS_CUDA_STATUS(cudaEventSynchronize(static_cast<cudaEvent_t>(ev))); }

core::Result<std::shared_ptr<void>> new_event(bool timing) {
  cudaEvent_t e = nullptr;
  ZS_CUDA_TRY(cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming));
  return std::shared_ptr<void>(static_cast<void*>(e),
                               [](void* p) { (void)cudaEventDestroy(static_cast<cudaEvent_t>(p)); });
}

void set_native(Event::State& st, std::shared_ptr<void> ev) {
  if (!ev) return;
  st.native = std::move(ev);
  st.native_ready = &cuda_event_ready;
  st.native_sync = &cuda_event_sync;
}

CudaStream::~CudaStream() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
  last_event_.reset();
  (void)cudaStreamDestroy(cs_);
}

void CudaStream::loop() {
  (void)cudaSetDevice(ordinal_);  // cannot fail: the device was set up on this ordinal
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
    const Status s = t.host ? run_host(t) : run_device(t);
    // Captured buffers go back to their cache (fenced by this task at the latest) before the Event completes.
    t.host_work = nullptr;
    t.device_work = nullptr;
    t.done->finish(s);
    log_.note(s);
    std::lock_guard<std::mutex> lk(mu_);
    if (--pending_ == 0) idle_cv_.notify_all();
  }
}

Status CudaStream::run_host(Task& t) {
  Status s;
  for (const Event& e : t.waits) {
    Status w = e.wait();
    if (!w.ok() && s.ok()) s = w;  // skipped: a dependency failed (its error travels on)
  }
  // Even when skipping: a completed Event of this stream means all work queued on it before has run.
  if (last_event_) {
    Status g = cuda_event_sync(last_event_.get());
    if (!g.ok() && s.ok()) s = g;
  }
  if (s.ok() && t.host_work) s = t.host_work();
  return s;
}

Status CudaStream::run_device(Task& t) {
  for (const Event& e : t.waits) {
    Status w = t.o.sync_waits ? e.wait() : e.queued();
    if (w.ok()) w = order_after(e, t.o.sync_waits);
    if (!w.ok()) {
      set_native(*t.done, last_event_);  // as in run_host: complete only after the stream's earlier work
      return w;
    }
  }
  const bool timed = t.o.start_s || t.o.end_s;
  Status s;
  std::shared_ptr<void> start;
  if (timed) {
    auto e = new_event(true);
    s = e.ok() ? ZS_CUDA_STATUS(cudaEventRecord(as_event(*e), cs_)) : e.status();
    if (s.ok()) start = *e;
  }
  if (s.ok() && t.device_work) s = t.device_work(cs_);
  // Recorded even after a failure: whatever `work` queued before failing is covered.
  auto done_ev = new_event(timed);
  Status r = done_ev.ok() ? ZS_CUDA_STATUS(cudaEventRecord(as_event(*done_ev), cs_)) : done_ev.status();
  if (r.ok()) {
    last_event_ = *done_ev;
    if (start) {
      std::lock_guard<std::mutex> lk(log_.mu);
      log_.spans.push_back({std::move(start), last_event_, t.o.start_s, t.o.end_s, t.o.epoch});
    }
  } else if (s.ok()) {
    s = r;
  }
  set_native(*t.done, last_event_);
  return s;
}

Status CudaStream::order_after(const Event& e, bool waited) {
  const auto& st = e.state();
  if (waited || !st || !st->native) return {};
  if (st->native_sync == &cuda_event_sync)
    return ZS_CUDA_STATUS(cudaStreamWaitEvent(cs_, static_cast<cudaEvent_t>(st->native.get()), 0));
  return e.wait();  // some other device's marker: wait for it on the host
}

}  // namespace zs::exec::cuda_detail
