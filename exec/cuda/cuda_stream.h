// Internal to exec/cuda/: a stream of the CUDA device (cuda_device.h) — a cudaStreamNonBlocking stream plus a worker
// thread that launches its device work in order and runs its host work once what it waits for has completed (as the
// host device's HostStream runs both) — and the completion markers its Events carry (Event::State::native).
//   auto s = std::make_unique<CudaStream>("compute", cs, ordinal, log);
//   Event e = s->push({.device_work = [](void* st) { ...; return Status{}; }});
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "exec/device.h"
#include "exec/event_state.h"

namespace zs::exec::cuda_detail {

using clk = std::chrono::steady_clock;

// --- completion markers (Event::State::native) -----------------------------------------------------------------

// A failed query counts as ready, so waiters go on and native_sync reports the error.
bool cuda_event_ready(void* ev);
Status cuda_event_sync(void* ev);
inline cudaEvent_t as_event(const std::shared_ptr<void>& p) { return static_cast<cudaEvent_t>(p.get()); }
core::Result<std::shared_ptr<void>> new_event(bool timing);  // owning; timing-enabled or not
// Sets st's marker (and its query and sync functions) to `ev`, when there is one.
void set_native(Event::State& st, std::shared_ptr<void> ev);

// --- what the streams report to their device --------------------------------------------------------------------

struct Span {
  std::shared_ptr<void> start, end;  // timing cudaEvents around the work
  double* start_s = nullptr;
  double* end_s = nullptr;
  clk::time_point epoch;
};

struct DeviceLog {
  std::mutex mu;
  Status first_error;
  std::vector<Span> spans;  // filled in by synchronize()

  void note(const Status& s) {
    if (s.ok()) return;
    std::lock_guard<std::mutex> lk(mu);
    if (first_error.ok()) first_error = s;
  }
  Status take_error() {
    std::lock_guard<std::mutex> lk(mu);
    Status s = std::move(first_error);
    first_error = {};
    return s;
  }
};

// --- a stream ------------------------------------------------------------------------------------------------------

class CudaStream : public Stream {
 public:
  CudaStream(std::string name, cudaStream_t cs, int ordinal, DeviceLog& log)
      : name_(std::move(name)), cs_(cs), ordinal_(ordinal), log_(log) {
    worker_ = std::thread([this] { loop(); });
  }
  ~CudaStream() override;
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  const std::string& name() const override { return name_; }
  void* native_handle() const override { return cs_; }
  cudaStream_t cuda() const { return cs_; }

  struct Task {
    bool host = false;
    std::vector<Event> waits;
    std::function<Status()> host_work;
    std::function<Status(void*)> device_work;
    LaunchOptions o;
    std::shared_ptr<Event::State> done;
  };
  Event push(Task t) {
    t.done = std::make_shared<Event::State>();
    Event e(t.done);
    {
      std::lock_guard<std::mutex> lk(mu_);
      last_ = t.done;
      q_.push_back(std::move(t));
      ++pending_;
      queued_.fetch_add(1, std::memory_order_release);
    }
    cv_.notify_all();
    return e;
  }
  std::shared_ptr<Event::State> last_submitted() const {
    std::lock_guard<std::mutex> lk(mu_);
    return last_;
  }
  // Blocks until the worker has taken and finished every task.
  void drain() {
    std::unique_lock<std::mutex> lk(mu_);
    idle_cv_.wait(lk, [&] { return pending_ == 0; });
  }

 private:
  void loop();
  Status run_host(Task& t);
  Status run_device(Task& t);
  // The GPU side of a wait: this stream waits for the event's cudaEvent (nothing left after a full host wait).
  Status order_after(const Event& e, bool waited);

  std::string name_;
  cudaStream_t cs_ = nullptr;
  int ordinal_ = 0;
  DeviceLog& log_;
  std::thread worker_;
  mutable std::mutex mu_;
  std::condition_variable cv_, idle_cv_;
  std::deque<Task> q_;
  int64_t pending_ = 0;
  std::atomic<int64_t> queued_{0};  // q_.size(), for the worker's spin before it sleeps
  bool stop_ = false;
  std::shared_ptr<Event::State> last_;  // the last task pushed (fences)
  std::shared_ptr<void> last_event_;    // worker thread only: the completion cudaEvent of the last device task
};
}  // namespace zs::exec::cuda_detail
