// Handoff latency between the engine's threads: CPU Adam's pool (a run of trivial tasks) and the host device's
// streams (work handed from a busy stream to one that is polling, and to one that has gone to sleep), against the
// machine's own floor measured in the same run: a bare condition-variable wake of a sleeping thread.
//   bench_handoff [REPS]
// Prints medians and each figure ÷ the bare wake-up (the ratio); docs/notes/engine-validation.md "Engine" uses them.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "exec/host_device.h"
#include "exec/spin.h"
#include "exec/thread_pool.h"

using namespace zs::exec;
using clk = std::chrono::steady_clock;

namespace {

double secs(clk::time_point a, clk::time_point b) { return std::chrono::duration<double>(b - a).count(); }
void busy(double s) {
  const auto t = clk::now();
  while (secs(t, clk::now()) < s) {
  }
}
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// A thread sleeps on a condition variable; the main thread sets the flag after busy work and notifies.
double bare_wake(int reps) {
  std::mutex mu;
  std::condition_variable cv;
  bool go = false, stop = false;
  clk::time_point woke, sent;
  std::vector<double> t;
  std::thread th([&] {
    std::unique_lock<std::mutex> lk(mu);
    for (;;) {
      cv.wait(lk, [&] { return go || stop; });
      if (stop) return;
      woke = clk::now();
      go = false;
      cv.notify_all();
    }
  });
  for (int r = 0; r < reps; ++r) {
    busy(1e-3);  // long enough that the waiter is asleep
    {
      std::lock_guard<std::mutex> lk(mu);
      go = true;
      sent = clk::now();
    }
    cv.notify_all();
    std::unique_lock<std::mutex> lk(mu);
    cv.wait(lk, [&] { return !go; });
    if (r >= reps / 4) t.push_back(secs(sent, woke));  // the first quarter: the scheduler settles placement
  }
  {
    std::lock_guard<std::mutex> lk(mu);
    stop = true;
  }
  cv.notify_all();
  th.join();
  return median(t);
}

// Stream b's work waits on stream a's; `gap` of busy work on a first. Returns the median delay from a's end to b's
// start.
double stream_handoff(Device& dev, double gap, int reps) {
  Stream* a = *dev.stream("a");
  Stream* b = *dev.stream("b");
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    clk::time_point a_end, b_start;
    Event ea = dev.enqueue(*a, {}, [&] {
      busy(gap);
      a_end = clk::now();
      return Status{};
    });
    Event eb = dev.enqueue(*b, {ea}, [&] {
      b_start = clk::now();
      return Status{};
    });
    (void)eb.wait();
    if (r >= reps / 4) t.push_back(secs(a_end, b_start));
  }
  return median(t);
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::max(8, std::atoi(argv[1])) : 200;
  const double spin = std::chrono::duration<double>(kSpinBudget).count();
  const double floor = bare_wake(reps);

  ThreadPool pool(2);
  std::vector<double> polling, slept;
  volatile int sink = 0;
  for (int r = 0; r < reps; ++r) {
    const bool sleep = r % 2 == 0;
    busy(sleep ? 2 * spin + 200e-6 : spin / 4);  // after the worker went to sleep, or while it polls
    const auto t = clk::now();
    pool.run(4, [&](int64_t) { sink = sink + 1; });
    (sleep ? slept : polling).push_back(secs(t, clk::now()));
  }
  auto dev = make_host_device({.memory_bytes = 1 << 20, .lock_pinned = false});
  const double awake = stream_handoff(*dev, spin / 2, reps);
  const double asleep = stream_handoff(*dev, 2 * spin + 200e-6, reps);

  std::printf("bench_handoff: %d repeats, poll budget %.0f us (exec/spin.h)\n\n", reps, spin * 1e6);
  std::printf("%-58s %10s %8s\n", "", "median", "/ wake");
  std::printf("%-58s %8.1f us %8s\n", "bare condition-variable wake of a sleeping thread (floor)", floor * 1e6, "1.00");
  std::printf("%-58s %8.1f us %8.2f\n", "CPU Adam pool: 4 trivial tasks, worker polling", median(polling) * 1e6,
              median(polling) / floor);
  std::printf("%-58s %8.1f us %8.2f\n", "CPU Adam pool: 4 trivial tasks, worker asleep", median(slept) * 1e6,
              median(slept) / floor);
  std::printf("%-58s %8.1f us %8.2f\n", "stream handoff, waiting stream still polling", awake * 1e6, awake / floor);
  std::printf("%-58s %8.1f us %8.2f\n", "stream handoff, waiting stream asleep (stream_wake_latency)", asleep * 1e6,
              asleep / floor);
  return 0;
}
