#include "probe/membw.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <system_error>

#include "exec/host_buffer.h"
#include "exec/thread_pool.h"

#if defined(__x86_64__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC PR 105593, as in exec/cpu_adam_simd.cpp
#include <immintrin.h>
#endif

namespace zs::probe {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

void pattern_scalar(float* p, const float* g, float* m, float* v, int64_t b, int64_t e) {
  for (int64_t i = b; i < e; ++i) {
    p[i] += 1e-9f * g[i];
    m[i] = 0.5f * m[i] + g[i];
    v[i] = 0.5f * v[i] + g[i];
  }
}

#if defined(__x86_64__)
// The same loads and stores CpuAdam's AVX-512 kernel issues (unaligned 64-byte vectors, in place).
__attribute__((target("avx512f"))) void pattern_avx512(float* p, const float* g, float* m, float* v, int64_t b,
                                                       int64_t e) {
  const __m512 eps = _mm512_set1_ps(1e-9f), half = _mm512_set1_ps(0.5f);
  int64_t i = b;
  for (; i + 16 <= e; i += 16) {  // all loads, then all stores: the order CpuAdam's kernel issues them in
    const __m512 pv = _mm512_loadu_ps(p + i), gv = _mm512_loadu_ps(g + i), mv = _mm512_loadu_ps(m + i),
                 vv = _mm512_loadu_ps(v + i);
    _mm512_storeu_ps(p + i, _mm512_fmadd_ps(eps, gv, pv));
    _mm512_storeu_ps(m + i, _mm512_fmadd_ps(half, mv, gv));
    _mm512_storeu_ps(v + i, _mm512_fmadd_ps(half, vv, gv));
  }
  pattern_scalar(p, g, m, v, i, e);
}
__attribute__((target("avx2,fma"))) void pattern_avx2(float* p, const float* g, float* m, float* v, int64_t b,
                                                      int64_t e) {
  const __m256 eps = _mm256_set1_ps(1e-9f), half = _mm256_set1_ps(0.5f);
  int64_t i = b;
  for (; i + 8 <= e; i += 8) {
    const __m256 pv = _mm256_loadu_ps(p + i), gv = _mm256_loadu_ps(g + i), mv = _mm256_loadu_ps(m + i),
                 vv = _mm256_loadu_ps(v + i);
    _mm256_storeu_ps(p + i, _mm256_fmadd_ps(eps, gv, pv));
    _mm256_storeu_ps(m + i, _mm256_fmadd_ps(half, mv, gv));
    _mm256_storeu_ps(v + i, _mm256_fmadd_ps(half, vv, gv));
  }
  pattern_scalar(p, g, m, v, i, e);
}
#endif

void triad_scalar(double* __restrict a, const double* __restrict b, const double* __restrict c, int64_t lo,
                  int64_t hi) {
  for (int64_t i = lo; i < hi; ++i) a[i] = b[i] + 3.0 * c[i];
}

#if defined(__x86_64__)
__attribute__((target("avx512f"))) void triad_avx512(double* a, const double* b, const double* c, int64_t lo,
                                                     int64_t hi) {
  const __m512d s = _mm512_set1_pd(3.0);
  int64_t i = lo;
  for (; i + 8 <= hi; i += 8)
    _mm512_storeu_pd(a + i, _mm512_fmadd_pd(s, _mm512_loadu_pd(c + i), _mm512_loadu_pd(b + i)));
  triad_scalar(a, b, c, i, hi);
}
__attribute__((target("avx2,fma"))) void triad_avx2(double* a, const double* b, const double* c, int64_t lo,
                                                    int64_t hi) {
  const __m256d s = _mm256_set1_pd(3.0);
  int64_t i = lo;
  for (; i + 4 <= hi; i += 4)
    _mm256_storeu_pd(a + i, _mm256_fmadd_pd(s, _mm256_loadu_pd(c + i), _mm256_loadu_pd(b + i)));
  triad_scalar(a, b, c, i, hi);
}
#endif

void triad_range(double* a, const double* b, const double* c, int64_t lo, int64_t hi) {
#if defined(__x86_64__)
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (avx512) return triad_avx512(a, b, c, lo, hi);
  if (avx2) return triad_avx2(a, b, c, lo, hi);
#endif
  triad_scalar(a, b, c, lo, hi);
}

void pattern_range(float* p, const float* g, float* m, float* v, int64_t b, int64_t e) {
#if defined(__x86_64__)
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (avx512) return pattern_avx512(p, g, m, v, b, e);
  if (avx2) return pattern_avx2(p, g, m, v, b, e);
#endif
  pattern_scalar(p, g, m, v, b, e);
}

// First touch from the pool with the same tiling as the measurement, so pages land near their users.
template <class T>
void first_touch(exec::ThreadPool& pool, T* a, int64_t n, T value, int64_t tile) {
  pool.run((n + tile - 1) / tile, [&](int64_t t) {
    const int64_t b = t * tile, e = std::min(n, b + tile);
    std::fill(a + b, a + e, value);
  });
}

}  // namespace

void adam_pattern_pass(exec::ThreadPool& pool, float* p, const float* g, float* m, float* v, int64_t n, int64_t tile) {
  pool.run((n + tile - 1) / tile, [&](int64_t t) {
    const int64_t b = t * tile, e = std::min(n, b + tile);
    pattern_range(p, g, m, v, b, e);
  });
}

double adam_pattern_GBps(exec::ThreadPool& pool, float* p, const float* g, float* m, float* v, int64_t n, int reps) {
  adam_pattern_pass(pool, p, g, m, v, n);
  double best = 1e30;
  for (int r = 0; r < std::max(reps, 1); ++r) {
    const auto t0 = Clock::now();
    adam_pattern_pass(pool, p, g, m, v, n);
    best = std::min(best, seconds_since(t0));
  }
  return 28.0 * static_cast<double>(n) / best / 1e9;
}

double adam_pattern_GBps(exec::ThreadPool& pool, int64_t n, int reps) {
  const int64_t tile = 64 * 1024;
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  exec::HostBuffer p = exec::HostBuffer::allocate(bytes), g = exec::HostBuffer::allocate(bytes),
                   m = exec::HostBuffer::allocate(bytes), v = exec::HostBuffer::allocate(bytes);
  if (!p || !g || !m || !v) return 0;
  first_touch(pool, p.as<float>(), n, 1.0f, tile);
  first_touch(pool, g.as<float>(), n, 1e-3f, tile);
  first_touch(pool, m.as<float>(), n, 0.0f, tile);
  first_touch(pool, v.as<float>(), n, 0.0f, tile);
  return adam_pattern_GBps(pool, p.as<float>(), g.as<float>(), m.as<float>(), v.as<float>(), n, reps);
}

double triad_GBps(exec::ThreadPool& pool, int64_t n, int reps) {
  const int64_t tile = 32 * 1024;
  const size_t bytes = static_cast<size_t>(n) * sizeof(double);
  exec::HostBuffer a = exec::HostBuffer::allocate(bytes), b = exec::HostBuffer::allocate(bytes),
                   c = exec::HostBuffer::allocate(bytes);
  if (!a || !b || !c) return 0;
  first_touch(pool, a.as<double>(), n, 0.0, tile);
  first_touch(pool, b.as<double>(), n, 1.0, tile);
  first_touch(pool, c.as<double>(), n, 2.0, tile);
  double* A = a.as<double>();
  const double* B = b.as<double>();
  const double* C = c.as<double>();
  auto pass = [&] {
    pool.run((n + tile - 1) / tile, [&](int64_t t) {
      const int64_t lo = t * tile, hi = std::min(n, lo + tile);
      triad_range(A, B, C, lo, hi);
    });
  };
  pass();
  double best = 1e30;
  for (int r = 0; r < std::max(reps, 1); ++r) {
    const auto t0 = Clock::now();
    pass();
    best = std::min(best, seconds_since(t0));
  }
  return 24.0 * static_cast<double>(n) / best / 1e9;
}

int64_t last_level_cache_bytes() {
  int64_t best = 0;
  for (int idx = 0; idx < 8; ++idx) {
    std::ifstream f("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(idx) + "/size");
    std::string s;
    if (!(f >> s) || s.empty()) continue;
    int64_t mult = 1;
    const char unit = s.back();
    if (unit == 'K') mult = 1024;
    if (unit == 'M') mult = 1024 * 1024;
    if (unit == 'G') mult = int64_t{1} << 30;
    best = std::max<int64_t>(best, std::atoll(s.c_str()) * mult);
  }
  return best;
}

int64_t numa_node_count() {
  std::error_code ec;
  int64_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/sys/devices/system/node", ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("node", 0) == 0 && name.size() > 4 &&
        std::all_of(name.begin() + 4, name.end(), [](char c) { return c >= '0' && c <= '9'; }))
      ++n;
  }
  return std::max<int64_t>(1, n);
}

int64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : 0;
}

}  // namespace zs::probe
