#include "exec/thread_pool.h"

#include <pthread.h>
#include <sched.h>

#include "exec/spin.h"

namespace zs::exec {

int available_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  const unsigned hc = std::thread::hardware_concurrency();
  return hc > 0 ? static_cast<int>(hc) : 1;
}

void set_thread_name(const std::string& name) {
  (void)pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());  // advisory: a name is not needed to run
}

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0) threads = available_cpus();
  workers_.reserve(static_cast<size_t>(threads - 1));
  for (int i = 1; i < threads; ++i)
    workers_.emplace_back([this, i] {
      set_thread_name("zs-pool-" + std::to_string(i));
      worker_loop(i);
    });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    std::shared_ptr<Job> j;
    const bool polled = spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; });
    {
      std::unique_lock<std::mutex> lk(mu_);
      start_cv_.wait(lk, [&] { return stop_ || generation_.load(std::memory_order_relaxed) != seen; });
      if (stop_) return;
      seen = generation_.load(std::memory_order_relaxed);
      j = job_;
    }
    if (!polled) {
      const double late = std::chrono::duration<double>(std::chrono::steady_clock::now() - j->posted).count();
      std::lock_guard<std::mutex> lk(wake_mu_);
      if (wakes_.size() < kMaxWakeSamples) wakes_.push_back(late);
    }
    work_on(*j, index);
  }
}

void ThreadPool::work_on(Job& j, int index) {
  int64_t finished = 0;
  if (j.per_thread_fn) {
    (*j.per_thread_fn)(index);
    finished = 1;
  } else {
    for (int64_t t; (t = j.next.fetch_add(1, std::memory_order_relaxed)) < j.tasks; ++finished) (*j.fn)(t);
  }
  if (finished == 0) return;
  if (j.done.fetch_add(finished, std::memory_order_acq_rel) + finished == j.tasks) {
    std::lock_guard<std::mutex> lk(mu_);  // the joiner checks under the lock: no lost wake-up
    done_cv_.notify_all();
  }
}

void ThreadPool::join(Job& j) {
  if (spin_until([&] { return j.done.load(std::memory_order_acquire) == j.tasks; })) return;
  std::unique_lock<std::mutex> lk(mu_);
  done_cv_.wait(lk, [&] { return j.done.load(std::memory_order_acquire) == j.tasks; });
}

void ThreadPool::run(int64_t tasks, const std::function<void(int64_t)>& fn) {
  if (tasks <= 0) return;
  if (workers_.empty() || tasks == 1) {
    for (int64_t t = 0; t < tasks; ++t) fn(t);
    return;
  }
  auto j = std::make_shared<Job>();
  j->fn = &fn;
  j->tasks = tasks;
  j->posted = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lk(mu_);
    job_ = j;
    generation_.fetch_add(1, std::memory_order_release);
  }
  start_cv_.notify_all();
  work_on(*j, 0);
  join(*j);
}

void ThreadPool::run_per_thread(const std::function<void(int)>& fn) {
  if (workers_.empty()) {
    fn(0);
    return;
  }
  auto j = std::make_shared<Job>();
  j->per_thread_fn = &fn;
  j->tasks = threads();
  j->posted = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lk(mu_);
    job_ = j;
    generation_.fetch_add(1, std::memory_order_release);
  }
  start_cv_.notify_all();
  work_on(*j, 0);
  join(*j);
}

std::vector<double> ThreadPool::take_wake_samples() {
  std::lock_guard<std::mutex> lk(wake_mu_);
  std::vector<double> out;
  out.swap(wakes_);
  return out;
}

}  // namespace zs::exec
