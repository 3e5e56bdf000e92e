// A fixed pool of worker threads for data-parallel host kernels (CPU Adam, the probe's bandwidth loops).
// run() hands task indices 0..n-1 to the workers and the calling thread, and returns when all are done — not
// when every worker has looked in: a small run the caller finishes alone does not wait for sleeping workers.
//   ThreadPool pool(4);                       // 3 workers + the caller
//   pool.run(tiles, [&](int64_t t) { kernel(t * tile, (t + 1) * tile); });
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace zs::exec {

class ThreadPool {
 public:
  // `threads` ≥ 1 counts the caller; 0 means every CPU this process may run on.
  explicit ThreadPool(int threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }
  // Dynamic schedule: each thread claims the next task index until none is left.
  void run(int64_t tasks, const std::function<void(int64_t)>& fn);
  // Static schedule: fn(t) runs exactly once on each of the threads() threads, t = 0..threads()-1.
  void run_per_thread(const std::function<void(int)>& fn);
  // How late workers that had gone to sleep woke for a run: seconds from the run's start to the worker's, one per
  // such wake-up since the last call (at most kMaxWakeSamples kept). A worker that still polled is not counted.
  std::vector<double> take_wake_samples();
  static constexpr size_t kMaxWakeSamples = 1 << 16;

 private:
  // One run(): task counters live here, not in the pool, so a worker that wakes after the run has ended finds
  // its tasks all claimed and never calls a function whose caller has returned.
  struct Job {
    const std::function<void(int64_t)>* fn = nullptr;  // dynamic schedule
    const std::function<void(int)>* per_thread_fn = nullptr;
    std::chrono::steady_clock::time_point posted;  // when run() handed it out
    int64_t tasks = 0;
    std::atomic<int64_t> next{0}, done{0};
  };
  void worker_loop(int index);
  void work_on(Job& j, int index);
  void join(Job& j);

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  std::shared_ptr<Job> job_;             // the current run's, under mu_
  std::atomic<uint64_t> generation_{0};  // bumped under mu_ per run; atomic so that workers can spin on it
  bool stop_ = false;
  std::mutex wake_mu_;
  std::vector<double> wakes_;  // take_wake_samples', under wake_mu_
};

// CPUs this process may run on (sched_getaffinity), at least 1.
int available_cpus();

// Names the calling thread for top -H, gdb and /proc/PID/task/*/comm (the first 15 bytes).
void set_thread_name(const std::string& name);

}  // namespace zs::exec
