// CPU Adam throughput against the machine's own limit, measured in the same run on the same arrays:
// params/s × 28 B (fp32 p, g, m, v: p r/w, g r, m r/w, v r/w) divided by the Adam-pattern DRAM bandwidth
// (same 4-read/3-write streams, no arithmetic, same threads and tiles). Goal ≥ 90%. Also the speed-up over
// the scalar reference kernel, and the mixed-precision variant (fp16 grads + bf16 copy out, also 28 B). Last, the
// host device's gradient D2H conversion against a memcpy of its output on one thread.
//   bench_cpu_adam [--params N] [--threads T] [--reps R] [--tile E]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "exec/cpu_adam.h"
#include "exec/host_buffer.h"
#include "exec/thread_pool.h"
#include "probe/membw.h"

using namespace zs::exec;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  int64_t n = 64 << 20;  // 64 Mi params: 1 GiB of fp32 p, g, m, v — twice this machine's 480 MiB L3
  int threads = 0, reps = 5;
  int64_t tile = 64 * 1024;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--params")
      n = std::atoll(argv[i + 1]);
    else if (a == "--threads")
      threads = std::atoi(argv[i + 1]);
    else if (a == "--reps")
      reps = std::atoi(argv[i + 1]);
    else if (a == "--tile")
      tile = std::atoll(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: bench_cpu_adam [--params N] [--threads T] [--reps R] [--tile E]\n");
      return 2;
    }
  }
  if (threads <= 0) threads = available_cpus();
  std::printf("bench_cpu_adam: %lld params (%.0f MiB of fp32 p/g/m/v), up to %d threads, best of %d, tile %lld\n",
              static_cast<long long>(n), 16.0 * static_cast<double>(n) / (1 << 20), threads, reps,
              static_cast<long long>(tile));

  // Huge-page-backed arrays (HostBuffer), as the engine allocates optimizer state; filled once.
  const size_t f32 = static_cast<size_t>(n) * 4, f16 = static_cast<size_t>(n) * 2;
  HostBuffer pb = HostBuffer::allocate(f32), gb = HostBuffer::allocate(f32), mb = HostBuffer::allocate(f32),
             vb = HostBuffer::allocate(f32), g16b = HostBuffer::allocate(f16), lpb = HostBuffer::allocate(f16);
  if (!pb || !gb || !mb || !vb || !g16b || !lpb) {
    std::fprintf(stderr, "bench_cpu_adam: out of memory\n");
    return 1;
  }
  float *p = pb.as<float>(), *g = gb.as<float>(), *m = mb.as<float>(), *v = vb.as<float>();
  std::fill(p, p + n, 0.5f);
  std::fill(g, g + n, 1e-3f);
  std::fill(m, m + n, 0.0f);
  std::fill(v, v + n, 0.0f);
  std::fill(g16b.as<uint16_t>(), g16b.as<uint16_t>() + n, float_to_fp16(1e-3f));
  std::fill(lpb.as<uint16_t>(), lpb.as<uint16_t>() + n, uint16_t{0});
  AdamBuffers b;
  b.params = p;
  b.grads = g;
  b.exp_avg = m;
  b.exp_avg_sq = v;
  b.n = n;
  AdamBuffers mixed = b;
  mixed.grads = g16b.data();
  mixed.grad_dtype = GradDtype::fp16;
  mixed.lp_params = lpb.data();
  mixed.lp_dtype = LpDtype::bf16;

  std::vector<int> counts;
  for (int t = 1; t < threads; t *= 2) counts.push_back(t);
  counts.push_back(threads);

  std::printf("\n%-8s %-22s %14s %10s %12s %10s\n", "threads", "kernel", "params/s", "GB/s@28B", "pattern GB/s",
              "ratio");
  double best_ratio = 0, best_speedup = 0;
  for (int t : counts) {
    // Interleaved: each repetition times one Adam-pattern pass, then one step of every kernel, so a burst of
    // load from other processes on this shared machine hits the limit and the kernels alike.
    ThreadPool pool(t);
    std::vector<AdamKernel> kernels;
    for (AdamKernel k : {AdamKernel::scalar, AdamKernel::avx2, AdamKernel::avx512})
      if (adam_kernel_supported(k)) kernels.push_back(k);
    std::vector<CpuAdam> adams;
    for (AdamKernel k : kernels)
      adams.emplace_back(AdamHyper{}, AdamOptions{.kernel = k, .threads = t, .tile_elems = tile});
    CpuAdam mixed_adam({}, {.threads = t, .tile_elems = tile});
    std::vector<double> best(kernels.size(), 1e30);
    double best_pattern = 1e30, best_mixed = 1e30;
    int64_t step = 1;
    auto timed = [](auto&& fn) {
      const auto t0 = Clock::now();
      fn();
      return std::chrono::duration<double>(Clock::now() - t0).count();
    };
    for (int r = 0; r <= reps; ++r) {  // r = 0 is the warm-up
      const double tp = timed([&] { zs::probe::adam_pattern_pass(pool, p, g, m, v, n, tile); });
      if (r > 0) best_pattern = std::min(best_pattern, tp);
      for (size_t i = 0; i < kernels.size(); ++i) {
        if (kernels[i] == AdamKernel::scalar && r > (reps + 1) / 2) continue;  // slow: fewer repetitions
        const double ta = timed([&] { (void)adams[i].step(step, b); });
        if (r > 0) best[i] = std::min(best[i], ta);
      }
      const double tm = timed([&] { (void)mixed_adam.step(step, mixed); });
      if (r > 0) best_mixed = std::min(best_mixed, tm);
      ++step;
    }
    const double pattern = 28.0 * static_cast<double>(n) / best_pattern / 1e9;
    const double scalar_pps = static_cast<double>(n) / best[0];
    for (size_t i = 0; i < kernels.size(); ++i) {
      const double pps = static_cast<double>(n) / best[i];
      const double gbps = pps * 28 / 1e9, ratio = gbps / pattern;
      std::printf("%-8d %-22s %14.4g %10.2f %12.2f %9.1f%%", t, to_string(kernels[i]), pps, gbps, pattern, 100 * ratio);
      if (kernels[i] != AdamKernel::scalar) std::printf("   %.2fx scalar", pps / scalar_pps);
      if (kernels[i] == best_adam_kernel() && ratio > best_ratio) {
        best_ratio = ratio;
        best_speedup = pps / scalar_pps;
      }
      std::printf("\n");
    }
    const double pps = static_cast<double>(n) / best_mixed;
    std::printf("%-8d %-22s %14.4g %10.2f %12.2f %9.1f%%\n", t,
                (std::string(to_string(best_adam_kernel())) + " fp16g+bf16out").c_str(), pps, pps * 28 / 1e9, pattern,
                100 * pps * 28 / 1e9 / pattern);
  }
  std::printf("\nbest %s: %.1f%% of the Adam-pattern DRAM bandwidth (goal >= 90%%), %.2fx the scalar reference\n",
              to_string(best_adam_kernel()), 100 * best_ratio, best_speedup);

  // The host device's gradient D2H (grads_to_f32_sumsq: 16-bit gradients to fp32 with the norm's Σx², one
  // thread, as a stream runs it) against a memcpy of the same fp32 bytes on the same thread: the copy the Plan
  // prices that D2H as. Whole arrays (past the L3), best of reps.
  std::printf("\n%-34s %12s %10s\n", "gradient D2H, 1 thread", "GB/s out", "of memcpy");
  auto best_of = [&](auto&& fn) {
    double t = 1e30;
    for (int r = 0; r < reps; ++r) {
      const auto t0 = Clock::now();
      fn();
      t = std::min(t, std::chrono::duration<double>(Clock::now() - t0).count());
    }
    return static_cast<double>(f32) / t / 1e9;
  };
  const double copy_GBps = best_of([&] { std::memcpy(g, p, f32); });
  std::printf("%-34s %12.2f %9.1f%%\n", "memcpy (the limit)", copy_GBps, 100.0);
  double sink = 0;
  for (AdamKernel k : {AdamKernel::scalar, AdamKernel::avx2, AdamKernel::avx512}) {
    if (!adam_kernel_supported(k) || (k == AdamKernel::avx512 && best_adam_kernel() != k)) continue;
    for (GradDtype gd : {GradDtype::bf16, GradDtype::fp16}) {
      const double r = best_of([&] { sink += grads_to_f32_sumsq(k, g, g16b.data(), n, gd); });
      std::printf(
          "%-34s %12.2f %9.1f%%\n",
          (std::string(to_string(k)) + (gd == GradDtype::bf16 ? " bf16" : " fp16") + " -> fp32 + sumsq").c_str(), r,
          100 * r / copy_GBps);
    }
  }
  if (sink < 0) std::printf("%g\n", sink);  // keeps the sums live
  return 0;
}
