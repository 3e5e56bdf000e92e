// cuBLASLt linear layers against the reference matmul (both weight layouts, bias, accumulate), and GPU Adam against
// the scalar CPU Adam, bit for bit, over every gradient / state / low-precision-copy combination.
#include <cstring>

#include "exec/cpu_adam.h"
#include "exec/cuda/gemm.h"
#include "exec/cuda/kernels.cuh"
#include "exec/kernels_ref.h"
#include "tests/exec/cuda_test_util.h"

using namespace zs::exec;
using namespace zs::exec::test;

TEMPLATE_TEST_CASE("cuBLASLt linear layers match the reference matmul", "[.gpu][cuda][gemm]", float, bf16_t, fp16_t) {
  using T = TestType;
  require_gpu();
  auto gemm = CublasLtGemm::create();
  INFO((gemm ? std::string("ok") : gemm.error().message));
  REQUIRE(gemm.ok());
  std::mt19937 rng(11);
  const int64_t N = 96, IN = 136, OUT = 72;
  // Sums over IN (forward, dinp) and N (dW) of products of ±1 values: scale the tolerance by √K.
  const Tol<T> tol{tolerance<T>(20).atol * 4, tolerance<T>(20).rtol};
  for (WeightLayout layout : {WeightLayout::in_out, WeightLayout::out_in}) {
    for (GradWrite w : {GradWrite::overwrite, GradWrite::accumulate}) {
      INFO("layout " << (layout == WeightLayout::in_out ? "in_out" : "out_in") << ", "
                     << (w == GradWrite::overwrite ? "overwrite" : "accumulate"));
      auto inp = random_vec<T>(N * IN, rng), weight = random_vec<T>(IN * OUT, rng), bias = random_vec<T>(OUT, rng);
      auto dout = random_vec<T>(N * OUT, rng), dw = random_vec<T>(IN * OUT, rng), db = random_vec<T>(OUT, rng);
      auto dinp = random_vec<T>(N * IN, rng);
      DevBuf<T> d_inp(inp), d_w(weight), d_b(bias), d_out(N * OUT), d_dout(dout), d_dw(dw), d_db(db), d_dinp(dinp);

      std::vector<T> out(N * OUT);
      matmul_forward<T>(out.data(), inp.data(), weight.data(), bias.data(), N, IN, OUT, layout);
      REQUIRE(
          gemm->matmul_forward<T>(d_out.get(), d_inp.get(), d_w.get(), d_b.get(), N, IN, OUT, layout, nullptr).ok());
      expect_close(d_out.download(), out, tol, "forward with bias");
      matmul_forward<T>(out.data(), inp.data(), weight.data(), nullptr, N, IN, OUT, layout);
      REQUIRE(gemm->matmul_forward<T>(d_out.get(), d_inp.get(), d_w.get(), nullptr, N, IN, OUT, layout, nullptr).ok());
      expect_close(d_out.download(), out, tol, "forward without bias");

      const bool acc_dinp = w == GradWrite::accumulate;
      matmul_backward<T>(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), weight.data(), N, IN, OUT, layout,
                         w, acc_dinp);
      REQUIRE(gemm->matmul_backward<T>(d_dinp.get(), d_dw.get(), d_db.get(), d_dout.get(), d_inp.get(), d_w.get(), N,
                                       IN, OUT, layout, w, acc_dinp, nullptr)
                  .ok());
      expect_close(d_dw.download(), dw, tol, "dweight");
      expect_close(d_db.download(), db, tol, "dbias");
      expect_close(d_dinp.download(), dinp, tol, "dinp");
    }
  }
}

namespace {

// The CPU scalar reference and the GPU kernel run three steps from the same state; every array must be identical.
void adam_case(GradDtype gd, StateDtype sd, LpDtype ld, AdamHyper h) {
  const int64_t n = 40000;
  std::mt19937 rng(13);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> p(n), m(n, 0.0f), v(n, 0.0f);
  for (auto& x : p) x = u(rng);
  std::vector<uint16_t> m16(n, 0), v16(n, 0), lp(n, 0);
  std::vector<float> g32(n);
  std::vector<uint16_t> g16(n);

  DevBuf<float> d_p(p), d_m(m), d_v(v), d_g32(n);
  DevBuf<uint16_t> d_m16(m16), d_v16(v16), d_lp(n), d_g16(n);
  CpuAdam adam(h, {.kernel = AdamKernel::scalar, .threads = 1});
  for (int step = 1; step <= 3; ++step) {
    for (int64_t i = 0; i < n; ++i) {
      g32[i] = u(rng) * 0.1f;
      g16[i] = gd == GradDtype::fp16 ? float_to_fp16(g32[i]) : float_to_bf16(g32[i]);
    }
    d_g32.upload(g32);
    d_g16.upload(g16);
    AdamBuffers cpu;
    cpu.params = p.data();
    cpu.grads = gd == GradDtype::fp32 ? static_cast<const void*>(g32.data()) : g16.data();
    cpu.grad_dtype = gd;
    cpu.exp_avg = sd == StateDtype::fp32 ? static_cast<void*>(m.data()) : m16.data();
    cpu.exp_avg_sq = sd == StateDtype::fp32 ? static_cast<void*>(v.data()) : v16.data();
    cpu.state_dtype = sd;
    cpu.lp_params = ld == LpDtype::none ? nullptr : lp.data();
    cpu.lp_dtype = ld;
    cpu.n = n;
    REQUIRE(adam.step(step, cpu).ok());

    AdamBuffers gpu = cpu;
    gpu.params = d_p.get();
    gpu.grads = gd == GradDtype::fp32 ? static_cast<const void*>(d_g32.get()) : d_g16.get();
    gpu.exp_avg = sd == StateDtype::fp32 ? static_cast<void*>(d_m.get()) : d_m16.get();
    gpu.exp_avg_sq = sd == StateDtype::fp32 ? static_cast<void*>(d_v.get()) : d_v16.get();
    gpu.lp_params = ld == LpDtype::none ? nullptr : d_lp.get();
    cuda_ok(gpu::adam_step(adam.last_scalars(), gpu, nullptr));
  }
  auto gp = d_p.download();
  CHECK(std::memcmp(gp.data(), p.data(), sizeof(float) * n) == 0);
  CHECK(p[0] != 0.0f);
  if (sd == StateDtype::fp32) {
    auto gm = d_m.download(), gv = d_v.download();
    CHECK(std::memcmp(gm.data(), m.data(), sizeof(float) * n) == 0);
    CHECK(std::memcmp(gv.data(), v.data(), sizeof(float) * n) == 0);
  } else {
    auto gm = d_m16.download(), gv = d_v16.download();
    CHECK(gm == m16);
    CHECK(gv == v16);
  }
  if (ld != LpDtype::none) CHECK(d_lp.download() == lp);
}

}  // namespace

TEST_CASE("GPU Adam is bit-identical to the scalar CPU Adam", "[.gpu][cuda][adam]") {
  require_gpu();
  for (GradDtype gd : {GradDtype::fp32, GradDtype::fp16, GradDtype::bf16})
    for (StateDtype sd : {StateDtype::fp32, StateDtype::bf16})
      for (LpDtype ld : {LpDtype::none, LpDtype::fp16, LpDtype::bf16}) {
        INFO("grad " << int(gd) << " state " << int(sd) << " lp " << int(ld));
        adam_case(gd, sd, ld, {.lr = 1e-3f, .weight_decay = 0.01f, .adamw_mode = true});
      }
  INFO("L2 mode, no bias correction");
  adam_case(GradDtype::fp32, StateDtype::fp32, LpDtype::bf16,
            {.lr = 2e-3f, .weight_decay = 0.1f, .adamw_mode = false, .bias_correction = false});
}
