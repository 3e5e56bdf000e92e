// Internal to exec/ devices: what an Event (device.h) points at — a completion flag with the status the work
// ended with, and, on the CUDA device, the cudaEvent_t recorded after the work (so other streams wait on the GPU
// instead of the host). Shared by host_device.cpp and exec/cuda/cuda_device.cpp.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "exec/device.h"

namespace zs::exec {

struct Event::State {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::atomic<bool> done_flag{false};  // done, readable without the lock (spinning waiters); set after status
  Status status;
  // The device's native completion marker (cudaEvent_t on CUDA; owns it), or empty on the host device. Device work
  // is `done` once it is queued on its stream; `native` then says when it has run: native_ready polls it,
  // native_sync waits for it (set together with `native`, before finish()).
  std::shared_ptr<void> native;
  bool (*native_ready)(void* native) = nullptr;
  Status (*native_sync)(void* native) = nullptr;
  void finish(Status s) {
    {
      std::lock_guard<std::mutex> lk(mu);
      status = std::move(s);
      done = true;
      done_flag.store(true, std::memory_order_release);
    }
    cv.notify_all();
  }
};

}  // namespace zs::exec
