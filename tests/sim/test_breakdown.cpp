// sim/breakdown.cpp on a hand-made ZeRO-Offload-shaped step: each optimizer pass and each kind of copy with its
// simulated time, rate and exposure; every figure a hand computation (tests/sim/fixtures.h's exact cost model).
#include <catch2/catch.hpp>

#include "sim/breakdown.h"
#include "tests/sim/fixtures.h"

using namespace zs;
using core::OpKind;
using core::Phase;
using core::Stream;
using core::TensorKind;

namespace {

const sim::StepPart* part(const std::vector<sim::StepPart>& v, const std::string& key) {
  for (const auto& p : v)
    if (p.key == key) return &p;
  return nullptr;
}

}  // namespace

TEST_CASE("breakdown: the CPU step's two passes, the copies by what they carry, exposure", "[breakdown]") {
  auto c = test::exact_cost();
  c.unscale_bytes_per_param = 8;  // 1e9 params: 8 GB at 50 GB/s = 0.16 s beside Adam's 1 s
  c.cpu_threads_per_rank = 4;
  c.cpu_ranks_per_node = 2;
  c.cpu_threads_active = 8;
  c.cpu_core_Bps = 10e9;
  c.cpu_threads_why = "set by the test";
  test::PlanBuilder b;
  core::Plan& p = b.plan();
  p.tensors.push_back({"w.grad", TensorKind::lp_grad, 0, 500'000'000, 1'000'000'000, core::Tier::gpu, false, false});
  p.tensors.push_back({"w", TensorKind::lp_param, 0, 500'000'000, 1'000'000'000, core::Tier::cpu, false, false});
  const uint32_t fwd = b.compute(50e12);                                  // 0.5 s
  const uint32_t d2h = b.transfer(OpKind::d2h, 1'000'000'000, {});        // 0.1 s beside the forward: hidden
  b.op(d2h).tensor = 0;
  const uint32_t adam = b.add(Stream::cpu_adam, OpKind::adam_cpu, {fwd, d2h});
  b.op(adam).elements = 1'000'000'000;
  b.op(adam).phase = Phase::optimizer;
  const uint32_t h2d = b.transfer(OpKind::h2d, 1'000'000'000, {adam});  // pageable: 5 GB/s, exposed
  b.op(h2d).tensor = 1;
  auto r = sim::simulate(p, c, {});
  REQUIRE(r.ok());
  const sim::Breakdown bd = sim::breakdown(p, *r);

  CHECK(bd.threads.per_rank == 4);
  CHECK(bd.threads.active == 8);
  CHECK(bd.threads.core_GBps == Approx(10.0));
  REQUIRE(bd.passes.size() == 2);
  const sim::StepPart* unscale = part(bd.passes, "cpu_unscale");
  const sim::StepPart* cpu_adam = part(bd.passes, "cpu_adam");
  REQUIRE(unscale);
  REQUIRE(cpu_adam);
  CHECK(unscale->busy_s == Approx(0.16).epsilon(1e-9));
  CHECK(cpu_adam->busy_s == Approx(1.0).epsilon(1e-9));
  CHECK(cpu_adam->exposed_s == Approx(1.0).epsilon(1e-9));  // nothing computes after the forward
  CHECK(cpu_adam->bytes == Approx(28e9));
  CHECK(cpu_adam->rate_Bps == Approx(28e9));

  REQUIRE(bd.copies.size() == 2);
  const sim::StepPart* grads = part(bd.copies, "d2h.grads");
  const sim::StepPart* params = part(bd.copies, "h2d.params.pageable");
  REQUIRE(grads);
  REQUIRE(params);
  CHECK(grads->label == "16-bit gradients GPU→host");
  CHECK(grads->busy_s == Approx(0.1 + c.pcie_latency_s).epsilon(1e-9));
  CHECK(grads->exposed_s == Approx(0.0).margin(1e-12));  // under the forward
  CHECK(params->pageable);
  CHECK(params->busy_s == Approx(0.2 + c.pcie_latency_s).epsilon(1e-9));  // the 5 GB/s staging copy sets the pace
  CHECK(params->exposed_s == Approx(params->busy_s).epsilon(1e-9));
  const std::string text = sim::breakdown_text(bd);
  CHECK(text.find("4 per rank x 2 ranks, 8 running at 10.0 GB/s per core; optimizer states on 1 of 1 NUMA nodes (set by "
                   "the test)") != std::string::npos);
  CHECK(text.find("CPU Adam (DeepSpeedCPUAdam") != std::string::npos);
  CHECK(text.find("16-bit parameters host→GPU (pageable)") != std::string::npos);
}
