// Helpers of the CUDA tests: device buffers for test data, random inputs, and the tolerance every kernel is held
// to against its CPU reference.
//
// Tolerance: |gpu − ref| ≤ atol + rtol·|ref| per element, with (atol, rtol) = 2 units in the last place of the
// storage type at 1.0: fp32 (2e-5, 2e-5) — widened to 1e-4 where a kernel sums in another order over long rows —,
// fp16 (2e-3, 2e-3), bf16 (1.6e-2, 1.6e-2). Both sides sum in fp32 and round to T once, so they differ by the
// fp32 summation order plus at most one rounding step of T.
#pragma once

#include <cuda_runtime.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "exec/cuda/cuda_device.h"
#include "exec/dtype.h"

namespace zs::exec::test {

// [.gpu] tests fail (not pass) when asked to run without a GPU: the reason says why.
inline void require_gpu() {
  const CudaAvailability a = cuda_available();
  if (!a.usable) FAIL("this [.gpu] test needs a GPU: " << a.reason);
}

template <class T>
struct Tol {
  double atol, rtol;
};
template <class T>
Tol<T> tolerance(double fp32_widen = 1.0) {
  if constexpr (std::is_same_v<T, float>) return {2e-5 * fp32_widen, 2e-5 * fp32_widen};
  if constexpr (std::is_same_v<T, fp16_t>) return {2e-3, 2e-3};
  return {1.6e-2, 1.6e-2};
}

inline void cuda_ok(cudaError_t e) {
  INFO("CUDA: " << cudaGetErrorString(e));
  REQUIRE(e == cudaSuccess);
}

// Device memory holding a copy of a host vector; move-only.
template <class T>
class DevBuf {
 public:
  explicit DevBuf(size_t n) : n_(n) { cuda_ok(cudaMalloc(&p_, sizeof(T) * (n ? n : 1))); }
  explicit DevBuf(const std::vector<T>& h) : DevBuf(h.size()) { upload(h); }
  ~DevBuf() {
    if (p_) cudaFree(p_);
  }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  T* get() const { return p_; }
  void upload(const std::vector<T>& h) {
    cuda_ok(cudaMemcpy(p_, h.data(), sizeof(T) * h.size(), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    cuda_ok(cudaDeviceSynchronize());
    std::vector<T> h(n_);
    cuda_ok(cudaMemcpy(h.data(), p_, sizeof(T) * n_, cudaMemcpyDeviceToHost));
    return h;
  }

 private:
  T* p_ = nullptr;
  size_t n_ = 0;
};

template <class T>
std::vector<T> random_vec(size_t n, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = from_f32<T>(d(rng));
  return v;
}

inline std::vector<int32_t> random_tokens(size_t n, int32_t V, std::mt19937& rng) {
  std::uniform_int_distribution<int32_t> d(0, V - 1);
  std::vector<int32_t> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Every element within tolerance; reports the worst one. Asserts the comparison saw real values.
template <class T, class U>
void expect_close(const std::vector<U>& gpu, const std::vector<U>& ref, Tol<T> tol, const std::string& what) {
  REQUIRE(gpu.size() == ref.size());
  REQUIRE(!ref.empty());
  size_t bad = 0, worst = 0;
  double worst_excess = -1, max_abs_ref = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double g = to_f32(gpu[i]), r = to_f32(ref[i]);
    max_abs_ref = std::max(max_abs_ref, std::fabs(r));
    const double excess = std::fabs(g - r) - (tol.atol + tol.rtol * std::fabs(r));
    if (!(excess <= 0) || std::isnan(g) != std::isnan(r)) ++bad;
    if (excess > worst_excess) worst_excess = excess, worst = i;
  }
  INFO(what << ": " << bad << " of " << ref.size() << " outside atol " << tol.atol << " + rtol " << tol.rtol
            << "; worst at " << worst << ": gpu " << to_f32(gpu[worst]) << " ref " << to_f32(ref[worst]));
  CHECK(bad == 0);
  CHECK(max_abs_ref > 0);  // the test compared something other than zeros
}

}  // namespace zs::exec::test
