// sim/summary.cpp on a hand-made ZeRO-Offload-shaped step: forward, backward, gradients to the host, CPU Adam,
// parameters back. Every figure is a hand computation.
#include <cmath>
#include <catch2/catch.hpp>

#include "sim/requirements.h"
#include "sim/summary.h"
#include "tests/sim/fixtures.h"

using namespace zs;
using core::OpKind;
using core::Phase;
using core::Stream;

namespace {

const sim::Exposure* exposure(const sim::Summary& s, const std::string& key) {
  for (const auto& x : s.exposed)
    if (x.key == key) return &x;
  return nullptr;
}
const sim::Requirement* requirement(const sim::Summary& s, const std::string& key) {
  for (const auto& q : s.required)
    if (q.key == key) return &q;
  return nullptr;
}
double utilization(const sim::Summary& s, const std::string& kind) {
  for (const auto& [k, u] : s.utilization)
    if (k == kind) return u;
  return -1;
}

}  // namespace

TEST_CASE("summary of an offload step: phases, throughput, exposure, bottleneck, requirements", "[summary]") {
  const auto c = test::exact_cost();
  test::PlanBuilder b;
  const uint32_t fwd = b.compute(50e12);          // 0.5 s
  const uint32_t bwd = b.compute(100e12, {fwd});  // 1.0 s
  b.op(bwd).kind = OpKind::backward;
  b.op(bwd).phase = Phase::backward;
  const uint32_t d2h = b.transfer(OpKind::d2h, 1'000'000'000, {bwd});  // 0.10001 s
  b.op(d2h).phase = Phase::backward;
  const uint32_t adam = b.add(Stream::cpu_adam, OpKind::adam_cpu, {d2h});  // 2 s
  b.op(adam).elements = 2'000'000'000;
  b.op(adam).phase = Phase::optimizer;
  const uint32_t h2d = b.transfer(OpKind::h2d, 1'000'000'000, {adam});
  b.op(h2d).phase = Phase::optimizer;
  core::Plan& p = b.plan();
  p.tokens_per_step = 1000;
  p.model_flops_per_step = 150e12;
  p.capacity_bytes = {1000, 1000, 1000};

  auto r = sim::simulate(p, c, {});
  REQUIRE(r.ok());
  sim::SummaryOptions o;
  o.samples_per_step = 4;
  o.target_efficiency = 0.9;
  const sim::Summary s = sim::summarize(p, *r, o);

  const double t_link = 0.1 + c.pcie_latency_s;
  const double step = 0.5 + 1.0 + t_link + 2.0 + t_link;
  CHECK(s.step_time_s == Approx(step).epsilon(1e-12));
  CHECK(s.forward_s == Approx(0.5).epsilon(1e-12));
  CHECK(s.backward_s == Approx(1.0 + t_link).epsilon(1e-12));
  CHECK(s.optimizer_s == Approx(2.0 + t_link).epsilon(1e-12));
  CHECK(s.tokens_per_s == Approx(1000 / step));
  CHECK(s.samples_per_s == Approx(4 / step));
  CHECK(s.model_tflops_per_gpu == Approx(150 / step));
  CHECK(s.hardware_tflops_per_gpu == Approx(150 / step));
  CHECK(s.mfu == Approx(150e12 / step / c.peak_flops));
  CHECK(s.gpu_compute_s == Approx(1.5));

  REQUIRE(exposure(s, "cpu_adam"));
  CHECK(exposure(s, "cpu_adam")->exposed_s == Approx(2.0));
  CHECK(exposure(s, "pcie_d2h")->exposed_s == Approx(t_link));
  CHECK(exposure(s, "pcie_h2d")->exposed_s == Approx(t_link));
  CHECK(s.bottleneck_key == "cpu_adam");
  CHECK(s.bottleneck ==
        "CPU Adam: 54% of the step, exposed (GPU computes 41%); also exposed: PCIe host→GPU 3%, PCIe GPU→host 3%");

  CHECK(utilization(s, "gpu") == Approx(1.5 / step));
  CHECK(utilization(s, "cpu") == Approx(2.0 / step));
  CHECK(utilization(s, "pcie_d2h") == Approx(0.1 / step));
  CHECK(utilization(s, "host_up") == Approx(1e9 / c.pcie_host_Bps / step));

  // Target: 90% GPU efficiency → step 1.5 / 0.9 s; CPU Adam moves 28 B per parameter.
  const double target_step = 1.5 / 0.9;
  REQUIRE(requirement(s, "cpu_adam"));
  CHECK(requirement(s, "cpu_adam")->need_GBps_per_gpu == Approx(2e9 * 28 / target_step / 1e9));
  CHECK(requirement(s, "cpu_adam")->has_GBps_per_gpu == Approx(28.0));
  CHECK(requirement(s, "cpu_adam")->short_);
  CHECK(requirement(s, "pcie_d2h")->need_GBps_per_gpu == Approx(1e9 / target_step / 1e9));
  CHECK(requirement(s, "pcie_d2h")->has_GBps_per_gpu == Approx(10.0));
  CHECK_FALSE(requirement(s, "pcie_d2h")->short_);
  CHECK(requirement(s, "nvme_read") == nullptr);
  CHECK(s.warnings.empty());
  CHECK_THAT(sim::summary_text(s), Catch::Contains("CPU Adam DRAM traffic needs at least 34 GB/s, has 28 GB/s"));
}

TEST_CASE("a compute-led step says so; overlapped transfers are not exposed", "[summary]") {
  test::PlanBuilder b;
  b.compute(50e12);                        // 0.5 s
  b.transfer(OpKind::h2d, 1'000'000'000);  // 0.1 s, hidden under the compute
  b.plan().model_flops_per_step = 50e12;
  auto r = sim::simulate(b.plan(), test::exact_cost(), {});
  REQUIRE(r.ok());
  const sim::Summary s = sim::summarize(b.plan(), *r, {});
  CHECK(s.bottleneck_key == "gpu_compute");
  CHECK(s.bottleneck == "GPU compute: 100% of the step (MFU 100%)");
  REQUIRE(exposure(s, "pcie_h2d"));
  CHECK(exposure(s, "pcie_h2d")->exposed_s == 0.0);
}

// Around half the step the words used to flip from "compute-bound" to "no single bottleneck" while 41% of the step
// was exposed CPU Adam; now both shares are named on either side of the crossing.
TEST_CASE("the bottleneck names compute and the exposed CPU Adam on both sides of half the step", "[summary]") {
  for (const auto& [compute_s, adam_s] : {std::pair{0.51, 0.41}, std::pair{0.41, 0.51}}) {
    test::PlanBuilder b;
    const uint32_t fwd = b.compute(compute_s * 100e12);
    const uint32_t adam = b.add(Stream::cpu_adam, OpKind::adam_cpu, {fwd});
    b.op(adam).elements = static_cast<int64_t>(adam_s * 1e9);
    b.op(adam).phase = Phase::optimizer;
    b.plan().model_flops_per_step = compute_s * 100e12;
    auto r = sim::simulate(b.plan(), test::exact_cost(), {});
    REQUIRE(r.ok());
    const sim::Summary s = sim::summarize(b.plan(), *r, {});
    const std::string c = std::to_string(static_cast<int>(std::lround(100 * compute_s / (compute_s + adam_s))));
    const std::string a = std::to_string(static_cast<int>(std::lround(100 * adam_s / (compute_s + adam_s))));
    if (compute_s > adam_s) {
      CHECK(s.bottleneck_key == "gpu_compute");
      CHECK(s.bottleneck == "GPU compute: " + c + "% of the step (MFU " + c + "%); exposed: CPU Adam " + a + "%");
    } else {
      CHECK(s.bottleneck_key == "cpu_adam");
      CHECK(s.bottleneck == "CPU Adam: " + a + "% of the step, exposed (GPU computes " + c + "%)");
    }
  }
}

TEST_CASE("a timeline that overflows a tier the plan said fits is a warning", "[summary]") {
  test::PlanBuilder b;
  b.plan().capacity_bytes = {100, 0, 0};
  const uint32_t a = b.transfer(OpKind::h2d, 1000);  // allocs on a copy stream run ahead of the compute
  b.op(a).mem_delta = {150, 0, 0};
  b.compute(1e12, {});
  auto r = sim::simulate(b.plan(), test::exact_cost(), {});
  REQUIRE(r.ok());
  const sim::Summary s = sim::summarize(b.plan(), *r, {});
  REQUIRE(s.warnings.size() == 1);
  CHECK_THAT(s.warnings[0], Catch::Contains("simulated GPU peak"));
}

TEST_CASE("requirements by re-simulation scale one tier at a time", "[summary][requirements]") {
  const auto c = test::exact_cost();
  test::PlanBuilder b;
  const uint32_t fwd = b.compute(150e12);                                  // 1.5 s
  const uint32_t d2h = b.transfer(OpKind::d2h, 1'000'000'000, {fwd});      // 0.10001 s
  const uint32_t adam = b.add(Stream::cpu_adam, OpKind::adam_cpu, {d2h});  // 2 s at 1e9 params/s
  b.op(adam).elements = 2'000'000'000;
  core::Plan& p = b.plan();
  p.model_flops_per_step = 150e12;
  auto r = sim::simulate(p, c, {});
  REQUIRE(r.ok());
  const sim::Summary s = sim::summarize(p, *r, {});
  auto req = sim::simulate_requirements(p, c, {}, s, 0.5);  // step ≤ 3 s
  REQUIRE(req.ok());
  const sim::Requirement* adam_q = nullptr;
  const sim::Requirement* d2h_q = nullptr;
  for (const auto& q : *req) {
    if (q.key == "cpu_adam") adam_q = &q;
    if (q.key == "pcie_d2h") d2h_q = &q;
  }
  REQUIRE(adam_q);
  REQUIRE(d2h_q);
  // 1.5 + 0.10001 + 2/k ≤ 3  →  k ≥ 1.4286: 28 GB/s of Adam DRAM traffic × k (bisection to ~3%)
  CHECK(adam_q->simulated);
  CHECK(adam_q->reachable);
  CHECK(adam_q->need_GBps_per_gpu == Approx(28.0 * 2.0 / (3.0 - 1.5 - 0.1 - c.pcie_latency_s)).epsilon(0.04));
  CHECK(adam_q->need_GBps_per_gpu >= 28.0 * 2.0 / (3.0 - 1.5 - 0.1 - c.pcie_latency_s));
  CHECK(adam_q->short_);
  // PCIe alone cannot: 1.5 + 2 + 0.1/64 > 3
  CHECK_FALSE(d2h_q->reachable);
  CHECK(d2h_q->best_efficiency == Approx(1.5 / (3.5 + 0.1 / 64 + c.pcie_latency_s)).epsilon(1e-9));
  CHECK_THAT(sim::summary_text([&] {
               auto t = s;
               t.required = *req;
               t.target_efficiency = 0.5;
               return t;
             }()),
             Catch::Contains("PCIe GPU→host alone cannot reach it"));
}
