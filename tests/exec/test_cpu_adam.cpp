// CPU Adam: the scalar reference against a hand-computed three-step trajectory, then every SIMD kernel and
// the multithreaded optimizer against the scalar reference over all dtype combinations.
//
// Max ulp difference, kernel vs scalar reference: 0 for avx2 and avx512 in every combination (asserted).
// The kernels fuse multiply-adds exactly where the reference calls std::fma, and sqrt/div/conversions are
// correctly rounded in both, so they agree bit for bit.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "exec/cpu_adam.h"
#include "exec/dtype.h"
#include "exec/kernels_ref.h"

using namespace zs::exec;

namespace {

int64_t ulp_distance(float a, float b) {
  if (std::isnan(a) && std::isnan(b)) return 0;
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  if (ia < 0) ia = INT32_MIN - ia;  // map to a monotonic integer line
  if (ib < 0) ib = INT32_MIN - ib;
  return std::llabs(static_cast<int64_t>(ia) - static_cast<int64_t>(ib));
}

struct Expected {
  double p, m, v;
};

// Runs three steps of one element through the scalar kernel with grads 0.5, −0.25, 1.0 from p = 1.
std::vector<Expected> run_scalar(AdamHyper h) {
  float p = 1.0f, m = 0.0f, v = 0.0f;
  const float grads[3] = {0.5f, -0.25f, 1.0f};
  CpuAdam adam(h, {.kernel = AdamKernel::scalar, .threads = 1});
  std::vector<Expected> out;
  for (int t = 1; t <= 3; ++t) {
    float g = grads[t - 1];
    AdamBuffers b;
    b.params = &p;
    b.grads = &g;
    b.exp_avg = &m;
    b.exp_avg_sq = &v;
    b.n = 1;
    REQUIRE(adam.step(t, b).ok());
    out.push_back({p, m, v});
  }
  return out;
}

void check_trajectory(const std::vector<Expected>& got, const std::vector<Expected>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t t = 0; t < got.size(); ++t) {
    INFO("step " << t + 1);
    // p carries the rounding of earlier, larger iterates: allow 2 fp32 ulps of p0 = 1 (1.2e-7) absolute.
    CHECK(got[t].p == Approx(want[t].p).epsilon(2e-7).margin(1.2e-7));
    CHECK(got[t].m == Approx(want[t].m).epsilon(2e-7));
    CHECK(got[t].v == Approx(want[t].v).epsilon(2e-7));
  }
}

}  // namespace

// Expected values computed by hand from the textbook form, in 40-digit decimal arithmetic (not with this
// code): m = β1 m + (1−β1) g; v = β2 v + (1−β2) g²; p −= lr · (m / (1−β1^t)) / (sqrt(v / (1−β2^t)) + eps),
// which is DeepSpeed's `denom = sqrt(v)·bc2 + eps`, bc2 = 1/sqrt(1−β2^t). Grads 0.5, −0.25, 1.0 from p = 1.
// Step 1 with decimal constants (lr 0.1, β 0.9/0.999, eps 1e-8): m = 0.1·0.5 = 0.05; v = 0.001·0.25 =
// 0.00025; m̂ = 0.05/0.1 = 0.5; v̂ = 0.00025/0.001 = 0.25; p = 1 − 0.1·0.5/(0.5 + 1e-8) = 0.900000002.
// Step 2: m = 0.045 − 0.025 = 0.02; v = 0.00024975 + 0.0000625 = 0.00031225; m̂ = 0.02/0.19;
// v̂ = 0.00031225/0.001999; p = 0.873366298708. Step 3: m = 0.118, v = 0.00131193775, p = 0.807555139677.
// DeepSpeed works in fp32: the hyperparameters are fp32 (1 − 0.999f = 0.000999987, 1.3e-5 off 0.001), and
// the per-step constants are fp32 too — β^t as running fp32 products, bias_correction1 = fl(1 − β1^t),
// bias_correction2 = fl(1/fl(sqrt(fl(1 − β2^t)))), step_size = fl(−lr/bias_correction1); at t = 3, 1 − β2^t
// cancels to 0.003 and the rounded β2^t moves p by 7e-7. So the tables repeat the hand computation with
// those fp32 constants (0.9f = 0.89999997615814208984375, 0.999f = 0.999000012874603271484375) and exact
// element arithmetic; the kernel then agrees to about one fp32 ulp.
TEST_CASE("scalar Adam reference follows the hand-computed three-step trajectory", "[exec][adam]") {
  SECTION("Adam, no weight decay") {
    check_trajectory(run_scalar({.lr = 0.1f}), {{0.900000001838, 0.0500000119209, 0.000249996781349},
                                                {0.873366389407, 0.0200000035763, 0.000312245983124},
                                                {0.807555683532, 0.118000026584, 0.00131192086656}});
  }
  SECTION("AdamW: p ← p − lr·wd·p before the update (wd 0.01)") {
    check_trajectory(run_scalar({.lr = 0.1f, .weight_decay = 0.01f}),
                     {{0.899000001791, 0.0500000119209, 0.000249996781349},
                      {0.871467389315, 0.0200000035763, 0.000312245983124},
                      {0.804785216010, 0.118000026584, 0.00131192086656}});
  }
  SECTION("Adam with L2: g ← g + wd·p (adamw_mode false, wd 0.01)") {
    check_trajectory(run_scalar({.lr = 0.1f, .weight_decay = 0.01f, .adamw_mode = false}),
                     {{0.900000001799, 0.0510000121370, 0.000260096651088},
                      {0.871229445553, 0.0218000039432, 0.000317916810104},
                      {0.804614890871, 0.120491256505, 0.00133508629006}});
  }
  SECTION("bias_correction false: both corrections are 1") {
    check_trajectory(run_scalar({.lr = 0.1f, .bias_correction = false}),
                     {{0.683770318205, 0.0500000119209, 0.000249996781349},
                      {0.570587265324, 0.0200000035763, 0.000312245983124},
                      {0.244804450135, 0.118000026584, 0.00131192086656}});
  }
}

TEST_CASE("per-step scalars follow DeepSpeed's IncrementStep", "[exec][adam]") {
  float p = 0, g = 0, m = 0, v = 0;
  AdamBuffers b;
  b.params = &p;
  b.grads = &g;
  b.exp_avg = &m;
  b.exp_avg_sq = &v;
  b.n = 1;
  CpuAdam adam({}, {.kernel = AdamKernel::scalar, .threads = 1});
  REQUIRE(adam.step(1, b).ok());
  REQUIRE(adam.step(2, b).ok());
  // Sequential steps multiply β^t in fp32: β1^2 = 0.9f·0.9f.
  const float b1t = 0.9f * 0.9f, b2t = 0.999f * 0.999f;
  CHECK(adam.last_scalars().step_size == -1.0f * 1e-3f / (1.0f - b1t));
  CHECK(adam.last_scalars().bias_correction2 == 1.0f / std::sqrt(1.0f - b2t));
  // A jump recomputes with pow.
  REQUIRE(adam.step(10, b).ok());
  const float b1t10 = static_cast<float>(std::pow(static_cast<double>(0.9f), 10.0));
  CHECK(adam.last_scalars().step_size == -1.0f * 1e-3f / (1.0f - b1t10));
  CHECK(!adam.step(0, b).ok());
}

namespace {

struct Case {
  GradDtype g;
  StateDtype s;
  LpDtype lp;
};

struct Arrays {
  std::vector<float> p;
  std::vector<float> g32;
  std::vector<uint16_t> g16;
  std::vector<float> m32, v32;
  std::vector<uint16_t> m16, v16, lp;
  AdamBuffers buffers(const Case& c) {
    AdamBuffers b;
    b.params = p.data();
    b.grad_dtype = c.g;
    b.grads = c.g == GradDtype::fp32 ? static_cast<const void*>(g32.data()) : g16.data();
    b.state_dtype = c.s;
    b.exp_avg = c.s == StateDtype::fp32 ? static_cast<void*>(m32.data()) : m16.data();
    b.exp_avg_sq = c.s == StateDtype::fp32 ? static_cast<void*>(v32.data()) : v16.data();
    b.lp_dtype = c.lp;
    b.lp_params = c.lp == LpDtype::none ? nullptr : lp.data();
    b.n = static_cast<int64_t>(p.size());
    return b;
  }
};

// Values over many binades, with zeros, tiny and huge gradients.
Arrays make_arrays(size_t n, GradDtype gd, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> N(0.0f, 1.0f);
  std::uniform_int_distribution<int> E(-20, 6);
  Arrays a;
  a.p.resize(n);
  a.g32.resize(n);
  a.g16.resize(n);
  a.m32.resize(n);
  a.v32.resize(n);
  a.m16.resize(n);
  a.v16.resize(n);
  a.lp.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    a.p[i] = std::ldexp(N(rng), E(rng) / 2);
    float g = std::ldexp(N(rng), E(rng));
    if (i % 97 == 0) g = 0.0f;
    a.g32[i] = g;
    a.g16[i] = gd == GradDtype::fp16 ? float_to_fp16(g) : float_to_bf16(g);
    a.m32[i] = 0.1f * std::ldexp(N(rng), E(rng));
    a.v32[i] = std::ldexp(std::fabs(N(rng)), 2 * E(rng));
    a.m16[i] = float_to_bf16(a.m32[i]);
    a.v16[i] = float_to_bf16(a.v32[i]);
  }
  return a;
}

int64_t max_ulp(const std::vector<float>& a, const std::vector<float>& b) {
  int64_t w = 0;
  for (size_t i = 0; i < a.size(); ++i) w = std::max(w, ulp_distance(a[i], b[i]));
  return w;
}
int64_t max_diff16(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b) {
  int64_t w = 0;
  for (size_t i = 0; i < a.size(); ++i) w = std::max<int64_t>(w, std::abs(int(a[i]) - int(b[i])));
  return w;
}

}  // namespace

TEST_CASE("SIMD kernels equal the scalar reference bit for bit (max ulp 0)", "[exec][adam]") {
  const std::vector<AdamHyper> hypers = {
      {},                                                                         // DeepSpeed defaults
      {.lr = 3e-4f, .weight_decay = 0.1f},                                        // AdamW
      {.lr = 1e-2f, .beta2 = 0.95f, .weight_decay = 0.05f, .adamw_mode = false},  // L2
      {.lr = 1e-3f, .eps = 1e-6f, .bias_correction = false},
  };
  const size_t n = 4099;  // not a multiple of 16: exercises the scalar tail
  for (AdamKernel k : {AdamKernel::avx2, AdamKernel::avx512}) {
    if (!adam_kernel_supported(k)) {
      WARN(to_string(k) << " not supported by this CPU: skipped");
      continue;
    }
    for (GradDtype gd : {GradDtype::fp32, GradDtype::fp16, GradDtype::bf16})
      for (StateDtype sd : {StateDtype::fp32, StateDtype::bf16})
        for (LpDtype lp : {LpDtype::none, LpDtype::fp16, LpDtype::bf16})
          for (size_t hi = 0; hi < hypers.size(); ++hi) {
            const Case c{gd, sd, lp};
            Arrays ref = make_arrays(n, gd, 1234u + static_cast<uint32_t>(hi));
            Arrays got = ref;
            CpuAdam a_ref(hypers[hi], {.kernel = AdamKernel::scalar, .threads = 1});
            CpuAdam a_got(hypers[hi], {.kernel = k, .threads = 1});
            for (int t = 1; t <= 3; ++t) {
              REQUIRE(a_ref.step(t, ref.buffers(c)).ok());
              REQUIRE(a_got.step(t, got.buffers(c)).ok());
            }
            INFO("kernel " << to_string(k) << " grad " << int(gd) << " state " << int(sd) << " lp " << int(lp)
                           << " hyper " << hi);
            CHECK(max_ulp(ref.p, got.p) == 0);
            if (sd == StateDtype::fp32) {
              CHECK(max_ulp(ref.m32, got.m32) == 0);
              CHECK(max_ulp(ref.v32, got.v32) == 0);
            } else {
              CHECK(max_diff16(ref.m16, got.m16) == 0);
              CHECK(max_diff16(ref.v16, got.v16) == 0);
            }
            if (lp != LpDtype::none) CHECK(max_diff16(ref.lp, got.lp) == 0);
          }
  }
}

TEST_CASE("the fused low-precision copy is the rounded updated master", "[exec][adam]") {
  Arrays a = make_arrays(1000, GradDtype::fp32, 7);
  for (LpDtype lp : {LpDtype::fp16, LpDtype::bf16}) {
    CpuAdam adam({}, {});
    REQUIRE(adam.step(1, a.buffers({GradDtype::fp32, StateDtype::fp32, lp})).ok());
    for (size_t i = 0; i < a.p.size(); ++i)
      REQUIRE(a.lp[i] == (lp == LpDtype::fp16 ? float_to_fp16(a.p[i]) : float_to_bf16(a.p[i])));
  }
}

TEST_CASE("multithreaded tiles equal one scalar pass", "[exec][adam]") {
  const size_t n = 300001;
  Arrays ref = make_arrays(n, GradDtype::fp16, 99);
  Arrays got = ref;
  const Case c{GradDtype::fp16, StateDtype::fp32, LpDtype::bf16};
  CpuAdam a_ref({.weight_decay = 0.01f}, {.kernel = AdamKernel::scalar, .threads = 1});
  CpuAdam a_got({.weight_decay = 0.01f}, {.threads = 0, .tile_elems = 1000});  // best kernel, all CPUs, odd tile
  CHECK(a_got.options().tile_elems % 64 == 0);
  for (int t = 1; t <= 2; ++t) {
    REQUIRE(a_ref.step(t, ref.buffers(c)).ok());
    REQUIRE(a_got.step(t, got.buffers(c)).ok());
  }
  CHECK(max_ulp(ref.p, got.p) == 0);
  CHECK(max_ulp(ref.m32, got.m32) == 0);
  CHECK(max_ulp(ref.v32, got.v32) == 0);
  CHECK(max_diff16(ref.lp, got.lp) == 0);
}

TEST_CASE("bad buffers are errors, not crashes", "[exec][adam]") {
  CpuAdam adam;
  AdamBuffers b;
  b.n = 10;
  CHECK(!adam.step(1, b).ok());
  float p[1] = {0}, g[1] = {0}, m[1] = {0}, v[1] = {0};
  b = {p, g, GradDtype::fp32, m, v};
  b.n = 1;
  b.lp_dtype = LpDtype::fp16;  // without lp_params
  auto s = adam.step(1, b);
  CHECK(!s.ok());
  CHECK(s.message().find("lp_params") != std::string::npos);
  CHECK(adam_bytes_per_element(GradDtype::fp32, StateDtype::fp32, LpDtype::none) == 28);
}

TEST_CASE("the SIMD fp32 -> lp copy-back casts equal the scalar converters bit for bit", "[exec][adam]") {
  // Random normals across exponents, plus the edge cases: ±0, ±inf, NaNs, fp16 overflow and subnormals, bf16
  // rounding ties (a 0x8000 low half, odd and even), and a tail that is not a whole vector.
  std::mt19937 rng(7);
  std::vector<float> in;
  for (int i = 0; i < 4096; ++i) {
    uint32_t u = rng();
    float f;
    std::memcpy(&f, &u, 4);
    in.push_back(f);
  }
  for (float f : {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 65504.0f, 65520.0f, 70000.0f, 1e-5f, 6e-8f, 3e-8f,
                  -2.98e-8f, 1.00390625f, 1.01171875f})
    in.push_back(f);
  for (uint32_t u : {0x3f808000u, 0x3f818000u, 0x7f800001u, 0xff800001u, 0x7fffffffu}) {
    float f;
    std::memcpy(&f, &u, 4);
    in.push_back(f);
  }
  in.push_back(1.5f);  // length 4117: not a multiple of 8 or 16
  const auto n = static_cast<int64_t>(in.size());
  for (LpDtype lp : {LpDtype::bf16, LpDtype::fp16}) {
    std::vector<uint16_t> ref(in.size());
    for (size_t i = 0; i < in.size(); ++i) ref[i] = lp == LpDtype::fp16 ? float_to_fp16(in[i]) : float_to_bf16(in[i]);
    for (AdamKernel k : {AdamKernel::scalar, AdamKernel::avx2, AdamKernel::avx512}) {
      if (!adam_kernel_supported(k)) continue;
      std::vector<uint16_t> out(in.size(), 0xdead);
      cast_to_lp(k, out.data(), in.data(), n, lp);
      size_t diff = 0;
      for (size_t i = 0; i < in.size(); ++i) diff += out[i] != ref[i];
      INFO(to_string(k) << (lp == LpDtype::fp16 ? " fp16" : " bf16"));
      CHECK(diff == 0);
    }
  }
}

TEST_CASE("the gradients' fp32 conversion and sum of squares: every kernel gives the reference's bits",
          "[exec][cpu_adam]") {
  // Gradients over many exponents (a norm summed in another order differs in its last bits), the edge values, and
  // lengths around the vector widths: the sum's lane order must survive every tail.
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> base;
  for (int i = 0; i < 4117; ++i) base.push_back(nd(rng) * std::ldexp(1.0f, static_cast<int>(rng() % 40) - 20));
  for (float f : {0.0f, -0.0f, 65504.0f, 6e-8f, 3e-38f, 1e-45f}) base.push_back(f);
  for (GradDtype g : {GradDtype::fp32, GradDtype::bf16, GradDtype::fp16}) {
    // The gradients in g's storage, and the reference's fp32 values and sum.
    std::vector<unsigned char> in(base.size() * 4);
    for (size_t i = 0; i < base.size(); ++i) {
      if (g == GradDtype::fp32) std::memcpy(in.data() + 4 * i, &base[i], 4);
      const uint16_t h = g == GradDtype::bf16 ? float_to_bf16(base[i]) : float_to_fp16(base[i]);
      if (g != GradDtype::fp32) std::memcpy(in.data() + 2 * i, &h, 2);
    }
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{3}, int64_t{7}, int64_t{8}, int64_t{9}, int64_t{15}, int64_t{17},
                      static_cast<int64_t>(base.size())}) {
      std::vector<float> ref(static_cast<size_t>(n) + 1, -1.0f);
      double want = 0;
      if (g == GradDtype::fp32)
        want = cast_to_f32_sumsq<float>(ref.data(), reinterpret_cast<const float*>(in.data()), n);
      if (g == GradDtype::bf16)
        want = cast_to_f32_sumsq<bf16_t>(ref.data(), reinterpret_cast<const bf16_t*>(in.data()), n);
      if (g == GradDtype::fp16)
        want = cast_to_f32_sumsq<fp16_t>(ref.data(), reinterpret_cast<const fp16_t*>(in.data()), n);
      for (AdamKernel k : {AdamKernel::scalar, AdamKernel::avx2, AdamKernel::avx512}) {
        if (!adam_kernel_supported(k)) continue;
        INFO(to_string(k) << " dtype " << static_cast<int>(g) << " n " << n);
        std::vector<float> out(static_cast<size_t>(n) + 1, -1.0f);
        const double got = grads_to_f32_sumsq(k, out.data(), in.data(), n, g);
        CHECK(std::memcmp(&got, &want, sizeof got) == 0);
        CHECK(std::memcmp(out.data(), ref.data(), out.size() * 4) == 0);  // and nothing past n written
        const double no_out = grads_to_f32_sumsq(k, nullptr, in.data(), n, g);
        CHECK(std::memcmp(&no_out, &want, sizeof got) == 0);
      }
    }
  }
  // A sum taken in another order is not the reference's: the check above can tell (the lanes matter).
  std::vector<float> f(base.begin(), base.begin() + 4096), tmp(4096);
  double serial = 0;
  for (float v : f) serial += static_cast<double>(v) * static_cast<double>(v);
  const double ref = cast_to_f32_sumsq<float>(tmp.data(), f.data(), 4096);
  CHECK(std::memcmp(&serial, &ref, sizeof ref) != 0);
}

TEST_CASE("the unscale pass: every kernel gives the scalar loop's bits, tails included", "[exec][cpu_adam]") {
  std::vector<float> in;
  uint32_t x = 0x9e3779b9u;
  for (int i = 0; i < 4099; ++i) {  // not a multiple of 8 or 16
    x = x * 1664525u + 1013904223u;
    uint32_t u = x & 0xbfffffffu;  // random sign, mantissa and exponent below 2^64: no overflow after the scale
    float f;
    std::memcpy(&f, &u, 4);
    in.push_back(f);
  }
  for (float f : {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-38f, 1e-45f, 3.4e38f}) in.push_back(f);
  const auto n = static_cast<int64_t>(in.size());
  for (float mul : {1.0f, 0.125f, 1.0f / 3.0f, 3.0f}) {
    std::vector<float> ref = in;
    for (float& f : ref) f *= mul;
    for (AdamKernel k : {AdamKernel::scalar, AdamKernel::avx2, AdamKernel::avx512}) {
      if (!adam_kernel_supported(k)) continue;
      for (int64_t off : {int64_t{0}, int64_t{3}}) {  // aligned and unaligned starts
        std::vector<float> out = in;
        scale_f32(k, out.data() + off, mul, n - off);
        size_t diff = 0;
        for (size_t i = 0; i < out.size(); ++i) {
          const float want = static_cast<int64_t>(i) < off ? in[i] : ref[i];
          diff += std::memcmp(&out[i], &want, 4) != 0;
        }
        INFO(to_string(k) << " mul " << mul << " offset " << off);
        CHECK(diff == 0);
      }
    }
  }
}

TEST_CASE("a pass's work units on CPU Adam's threads: ~8 per thread, 4096 to the cap, whole SIMD iterations",
          "[exec][adam]") {
  // tiny's group (120,576 elements) on 2 threads: 16 units of 7,552 (was 2 tiles of 65,536).
  CHECK(pool_unit_elems(120576, 2, kAdamTileElems) == 7552);
  CHECK(pool_unit_elems(120576, 1, kAdamTileElems) == 15104);
  CHECK(pool_unit_elems(120576, 0, kAdamTileElems) == 15104);  // no threads counts as one
  CHECK(pool_unit_elems(int64_t{1} << 24, 2, kAdamTileElems) == kAdamTileElems);
  CHECK(pool_unit_elems(int64_t{1} << 24, 2, kCpuPassChunkElems) == kCpuPassChunkElems);
  CHECK(pool_unit_elems(1000, 2, kCpuPassChunkElems) == 4096);
  for (int64_t n : {1, 4097, 100000, 3257856})
    for (int t : {1, 2, 16}) {
      const int64_t u = pool_unit_elems(n, t, kAdamTileElems);
      CHECK(u % 64 == 0);
      CHECK(u >= 4096);
      CHECK(u <= kAdamTileElems);
    }
}
