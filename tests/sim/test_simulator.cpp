// Golden tests: for trivial plans the simulated time equals the hand computation (bytes ÷ bandwidth + latency,
// flops ÷ rate), to within 1e-12 relative — SimGrid's CM02 model is exact, not calibrated.
#include <catch2/catch.hpp>
#include <random>

#include "core/collectives.h"
#include "sim/simulator.h"
#include "tests/sim/fixtures.h"

using namespace zs;
using core::OpKind;
using core::Stream;
using test::PlanBuilder;

namespace {

constexpr double kRel = 1e-12;

sim::SimResult run(const core::Plan& p, int64_t nodes = 1, int64_t gpus_per_node = 1,
                   const core::CostModel& c = test::exact_cost()) {
  sim::SimOptions o;
  o.nodes = nodes;
  o.gpus_per_node = gpus_per_node;
  auto r = sim::simulate(p, c, o);
  INFO((r ? std::string() : r.error().message));
  REQUIRE(r.ok());
  return std::move(*r);
}

const core::TraceEvent& event(const sim::SimResult& r, uint32_t op, int32_t rank = 0) {
  for (const auto& e : r.trace.events)
    if (e.op == op && e.rank == rank) return e;
  FAIL("no event for op " << op << " rank " << rank);
  return r.trace.events.front();
}

double duration(const sim::SimResult& r, uint32_t op, int32_t rank = 0) {
  const auto& e = event(r, op, rank);
  return e.end_s - e.start_s;
}

}  // namespace

TEST_CASE("one transfer takes bytes / bandwidth + latency", "[sim][golden]") {
  const auto c = test::exact_cost();
  SECTION("PCIe host to GPU, pinned") {
    PlanBuilder b;
    b.transfer(OpKind::h2d, 1'000'000'000);
    auto r = run(b.plan());
    const double expect = 1e9 / c.pcie_h2d_Bps + c.pcie_latency_s;  // 0.10001 s
    CHECK(r.trace.step_time_s == Approx(expect).epsilon(kRel));
    CHECK(duration(r, 0) == Approx(expect).epsilon(kRel));
  }
  SECTION("GPU to host") {
    PlanBuilder b;
    b.transfer(OpKind::d2h, 300'000'000);
    CHECK(run(b.plan()).trace.step_time_s == Approx(3e8 / c.pcie_d2h_Bps + c.pcie_latency_s).epsilon(kRel));
  }
  SECTION("NVMe read and write are links of their own bandwidth") {
    PlanBuilder b;
    b.transfer(OpKind::nvme_read, 3'000'000'000);
    b.transfer(OpKind::nvme_write, 1'000'000'000);
    auto r = run(b.plan());
    CHECK(duration(r, 0) == Approx(1.0 + c.nvme_read_latency_s).epsilon(kRel));
    CHECK(duration(r, 1) == Approx(0.5 + c.nvme_write_latency_s).epsilon(kRel));
  }
  SECTION("a pageable source moves at the pageable rate") {
    PlanBuilder b;
    core::PlanTensor t;
    t.home = core::Tier::cpu;
    t.pinned = false;
    b.plan().tensors.push_back(t);
    b.op(b.transfer(OpKind::h2d, 1'000'000'000)).tensor = 0;
    CHECK(run(b.plan()).trace.step_time_s == Approx(1e9 / c.pcie_h2d_pageable_Bps + c.pcie_latency_s).epsilon(kRel));
  }
}

TEST_CASE("compute alone takes flops / rate", "[sim][golden]") {
  const auto c = test::exact_cost();
  SECTION("GEMM flops at peak x efficiency") {
    PlanBuilder b;
    b.compute(50e12);
    CHECK(run(b.plan()).trace.step_time_s == Approx(50e12 / c.peak_flops).epsilon(kRel));
  }
  SECTION("memory-bound bytes at HBM bandwidth, plus launch overhead per kernel") {
    auto c2 = c;
    c2.kernel_launch_s = 5e-6;
    PlanBuilder b;
    uint32_t id = b.compute(10e12);
    b.op(id).mem_bound_bytes = 200'000'000'000;
    const double expect = 10e12 / c.peak_flops + 2e11 / c.hbm_Bps + 1 * 5e-6;  // no model shapes: 1 kernel
    CHECK(run(b.plan(), 1, 1, c2).trace.step_time_s == Approx(expect).epsilon(kRel));
  }
  SECTION("CPU Adam at the node's parameter rate, after the unscale pass over the fp32 gradients") {
    PlanBuilder b;
    b.op(b.add(Stream::cpu_adam, OpKind::adam_cpu)).elements = 2'000'000'000;
    CHECK(run(b.plan()).trace.step_time_s == Approx(2e9 / c.cpu_adam_params_per_s).epsilon(kRel));
    auto c2 = c;
    c2.unscale_bytes_per_param = 8;
    CHECK(run(b.plan(), 1, 1, c2).trace.step_time_s ==
          Approx(2e9 / c.cpu_adam_params_per_s + 2e9 * 8 / c.dram_Bps).epsilon(kRel));
  }
  SECTION("ledger ops take no time") {
    PlanBuilder b;
    b.add(Stream::compute, OpKind::alloc);
    b.compute(1e12, {0});
    b.add(Stream::compute, OpKind::release, {1});
    CHECK(run(b.plan()).trace.step_time_s == Approx(0.01).epsilon(kRel));
  }
}

TEST_CASE("two independent streams overlap; one stream is an in-order queue", "[sim][golden]") {
  const auto c = test::exact_cost();
  const double t_h2d = 1e9 / c.pcie_h2d_Bps + c.pcie_latency_s;
  SECTION("compute and a transfer on different streams overlap") {
    PlanBuilder b;
    b.compute(50e12);
    b.transfer(OpKind::h2d, 1'000'000'000);
    auto r = run(b.plan());
    CHECK(r.trace.step_time_s == Approx(0.5).epsilon(kRel));
    CHECK(event(r, 1).start_s == 0.0);
  }
  SECTION("the same stream serialises") {
    PlanBuilder b;
    b.compute(50e12);
    b.compute(50e12);
    CHECK(run(b.plan()).trace.step_time_s == Approx(1.0).epsilon(kRel));
  }
  SECTION("a dependency across streams waits") {
    PlanBuilder b;
    b.compute(50e12);
    b.transfer(OpKind::h2d, 1'000'000'000, {0});
    auto r = run(b.plan());
    CHECK(event(r, 1).start_s == Approx(0.5).epsilon(kRel));
    CHECK(r.trace.step_time_s == Approx(0.5 + t_h2d).epsilon(kRel));
  }
  SECTION("a stream's head blocks the ops queued behind it") {
    PlanBuilder b;
    b.compute(50e12);                             // 0: 0.5 s
    b.transfer(OpKind::h2d, 1'000'000'000, {0});  // 1: waits for 0
    b.transfer(OpKind::h2d, 1'000'000'000);       // 2: free, but queued behind 1
    auto r = run(b.plan());
    CHECK(event(r, 2).start_s == Approx(0.5 + t_h2d).epsilon(kRel));
  }
  SECTION("H2D and D2H of one GPU are separate directions") {
    PlanBuilder b;
    b.transfer(OpKind::h2d, 1'000'000'000);
    b.transfer(OpKind::d2h, 1'000'000'000);
    CHECK(run(b.plan()).trace.step_time_s == Approx(t_h2d).epsilon(kRel));
  }
}

TEST_CASE("an NVMe swap costs by the age of its data: hot figures at once, settled ones after nvme_settle_s",
          "[sim][golden]") {
  auto c = test::exact_cost();  // settled: read 50 us + 3 GB/s, write 80 us + 2 GB/s
  c.nvme_settle_s = 0.5;
  c.nvme_hot_read_Bps = 4e9;
  c.nvme_hot_read_latency_s = 20e-6;
  c.nvme_hot_write_Bps = 2.5e9;
  c.nvme_hot_write_latency_s = 30e-6;
  const int64_t B = 300'000'000;
  PlanBuilder b;
  b.plan().tensors.resize(4);
  const uint32_t w = b.transfer(OpKind::nvme_write, B);  // 0: tensor 0, never written this step: age 0, hot
  b.op(w).tensor = 0;
  const uint32_t r = b.transfer(OpKind::nvme_read, B, {w});  // 1: reads tensor 0 right after its write: hot
  b.op(r).tensor = 0;
  const uint32_t g = b.compute(25e12, {r});                   // 2: 0.25 s
  const uint32_t r2 = b.transfer(OpKind::nvme_read, B, {g});  // 3: tensor 0 again, 0.25 s after its write
  b.op(r2).tensor = 0;
  const uint32_t r3 = b.transfer(OpKind::nvme_read, B, {r2});  // 4: tensors 1-2, never written: age = time in step
  b.op(r3).tensor = 1;
  b.op(r3).tensor_count = 2;
  auto res = run(b.plan(), 1, 1, c);
  const double hot_w = 30e-6 + B / 2.5e9, hot_r = 20e-6 + B / 4e9, cold_r = 50e-6 + B / 3e9;
  CHECK(duration(res, 0) == Approx(hot_w).epsilon(kRel));
  CHECK(duration(res, 1) == Approx(hot_r).epsilon(kRel));
  const double age2 = event(res, 3).start_s - event(res, 0).end_s;
  CHECK(age2 == Approx(hot_r + 0.25).epsilon(kRel));
  CHECK(duration(res, 3) == Approx(hot_r + age2 / 0.5 * (cold_r - hot_r)).epsilon(kRel));
  CHECK(event(res, 4).start_s > 0.5);  // older than nvme_settle_s: the settled figures
  CHECK(duration(res, 4) == Approx(cold_r).epsilon(kRel));
  SECTION("without hot figures every swap costs the settled ones") {
    auto plain = run(b.plan(), 1, 1, test::exact_cost());
    CHECK(duration(plain, 1) == Approx(cold_r).epsilon(kRel));
    CHECK(duration(plain, 0) == Approx(80e-6 + B / 2e9).epsilon(kRel));
  }
}

TEST_CASE("the first NVMe swap after the path rested pays its wake-up; swaps beside or right after it do not",
          "[sim][golden]") {
  auto c = test::exact_cost();  // settled: read 50 us + 3 GB/s, write 80 us + 2 GB/s
  c.nvme_idle_wake = {{0.01, 100e-6}, {0.1, 400e-6}};
  const int64_t B = 30'000'000;
  const double rd = 50e-6 + B / 3e9, wr = 80e-6 + B / 2e9;
  PlanBuilder b;
  const uint32_t g = b.compute(5e12);                           // 0: 0.05 s, the path idle since the step began
  const uint32_t r1 = b.transfer(OpKind::nvme_read, B, {g});    // 1: after 0.05 s idle: 100 + 300 * log(5)/log(10) us
  const uint32_t w1 = b.transfer(OpKind::nvme_write, B, {g});   // 2: starts beside 1: the path is awake
  const uint32_t r2 = b.transfer(OpKind::nvme_read, B, {r1});   // 3: right after 1: awake
  const uint32_t g2 = b.compute(50e12, {r2, w1});               // 4: 0.5 s
  const uint32_t w2 = b.transfer(OpKind::nvme_write, B, {g2});  // 5: after 0.5 s idle: past the last point, its 400 us
  (void)w2;
  auto res = run(b.plan(), 1, 1, c);
  const double x1 = 100e-6 + 300e-6 * std::log(5.0) / std::log(10.0);
  CHECK(event(res, 1).start_s == Approx(0.05).epsilon(kRel));
  CHECK(duration(res, 1) == Approx(x1 + rd).epsilon(kRel));
  CHECK(duration(res, 2) == Approx(wr).epsilon(kRel));
  CHECK(duration(res, 3) == Approx(rd).epsilon(kRel));
  CHECK(duration(res, 5) == Approx(400e-6 + wr).epsilon(kRel));
  SECTION("without the measured figures every swap costs the same") {
    auto plain = run(b.plan(), 1, 1, test::exact_cost());
    CHECK(duration(plain, 1) == Approx(rd).epsilon(kRel));
    CHECK(duration(plain, 5) == Approx(wr).epsilon(kRel));
  }
}

TEST_CASE("a stream that waited past its poll budget starts a wake-up late (measured.stream_wake_latency_us)",
          "[sim][golden]") {
  auto c = test::exact_cost();
  c.stream_spin_s = 200e-6;
  c.stream_wake_s = 40e-6;
  const double t_h2d = 1e9 / c.pcie_h2d_Bps + c.pcie_latency_s;
  PlanBuilder b;
  b.compute(50e12);                             // 0: 0.5 s; its stream had no wait
  b.compute(1e9, {});                           // 1: right behind 0 on a busy stream: no wake-up
  b.transfer(OpKind::h2d, 1'000'000'000, {0});  // 2: its stream waited 0.5 s for op 0: slept
  b.transfer(OpKind::h2d, 1'000'000'000);       // 3: queued behind 2: the stream is awake
  auto r = run(b.plan(), 1, 1, c);
  CHECK(event(r, 0).start_s == Approx(0.0).margin(1e-12));  // a stream's first op at step start: no wait yet
  CHECK(event(r, 1).start_s == Approx(0.5).epsilon(kRel));
  CHECK(event(r, 2).start_s == Approx(0.5 + 40e-6).epsilon(kRel));
  CHECK(event(r, 3).start_s == Approx(event(r, 2).end_s).epsilon(kRel));
  CHECK(event(r, 3).end_s == Approx(0.5 + 40e-6 + 2 * t_h2d).epsilon(kRel));
  SECTION("a stream pair with its own figure (measured.stream_wake_pairs): compute -> h2d") {
    auto cp = c;
    cp.stream_wake_pair_s[static_cast<size_t>(Stream::compute)][static_cast<size_t>(Stream::h2d)] = 5e-6;
    auto rp = run(b.plan(), 1, 1, cp);
    CHECK(event(rp, 2).start_s == Approx(0.5 + 5e-6).epsilon(kRel));
    cp.stream_wake_pair_s = core::no_pairs();  // another pair's figure leaves this one at the stream's
    cp.stream_wake_pair_s[static_cast<size_t>(Stream::comm)][static_cast<size_t>(Stream::h2d)] = 5e-6;
    CHECK(event(run(b.plan(), 1, 1, cp), 2).start_s == Approx(0.5 + 40e-6).epsilon(kRel));
    cp.stream_wake_pair_s[static_cast<size_t>(Stream::compute)][static_cast<size_t>(Stream::h2d)] = 0;  // none
    CHECK(event(run(b.plan(), 1, 1, cp), 2).start_s == Approx(0.5).epsilon(kRel));
  }
  SECTION("a wait shorter than the poll budget costs nothing") {
    PlanBuilder q;
    q.compute(10e9);                              // 0: 100 us
    q.transfer(OpKind::h2d, 1'000'000'000, {0});  // 1: waited 100 us < 200 us
    auto rq = run(q.plan(), 1, 1, c);
    CHECK(event(rq, 1).start_s == Approx(100e-6).epsilon(kRel));
  }
  SECTION("without the measured figures (a GPU's queues) nothing changes") {
    auto rg = run(b.plan());
    CHECK(event(rg, 2).start_s == Approx(0.5).epsilon(kRel));
  }
  SECTION("a CPU op after its stream slept: the pool's second thread joins a wake-up late") {
    auto cc = c;
    cc.cpu_pool_threads = 2;
    cc.cpu_pool_wake_s = 40e-6;
    PlanBuilder q;
    q.compute(50e12);                                                     // 0: 0.5 s
    const uint32_t big = q.add(Stream::cpu_adam, OpKind::adam_cpu, {0});  // 1: 1e6 params, 1 ms at 1e9/s
    q.op(big).elements = 1'000'000;
    const uint32_t next = q.add(Stream::cpu_adam, OpKind::adam_cpu, {1});  // 2: right behind: the pool is awake
    q.op(next).elements = 1'000'000;
    const uint32_t tiny = q.add(Stream::cpu_adam, OpKind::adam_cpu, {0, 2});
    q.op(tiny).elements = 10'000;  // 3: 10 us at 2 threads, but it follows op 2 at once: no wake-up
    auto rq = run(q.plan(), 1, 1, cc);
    CHECK(event(rq, 1).start_s == Approx(0.5 + 40e-6).epsilon(kRel));
    CHECK(duration(rq, 1) == Approx(1e-3 + 40e-6 / 2).epsilon(kRel));  // 40 us with one thread of two
    CHECK(duration(rq, 2) == Approx(1e-3).epsilon(kRel));
    CHECK(duration(rq, 3) == Approx(10e-6).epsilon(1e-6));  // a 10 us span at t = 0.5 s: SimGrid's clock ~1e-12 s
    PlanBuilder w;
    w.compute(50e12);
    const uint32_t alone = w.add(Stream::cpu_adam, OpKind::adam_cpu, {0});
    w.op(alone).elements = 10'000;  // 10 us at 2 threads, 20 us alone: done before the worker wakes
    auto rw = run(w.plan(), 1, 1, cc);
    CHECK(duration(rw, 1) == Approx(20e-6).epsilon(1e-6));
    // A wake-up longer than the op: the op after it at once still starts alone, until the workers join.
    const uint32_t after = w.add(Stream::cpu_adam, OpKind::adam_cpu, {alone});
    w.op(after).elements = 1'000'000;  // 1 ms at 2 threads
    auto ra = run(w.plan(), 1, 1, cc);
    CHECK(event(ra, 2).start_s == Approx(event(ra, 1).end_s).epsilon(kRel));
    CHECK(duration(ra, 2) == Approx(1e-3 + 20e-6 / 2).epsilon(kRel));  // 20 us of the 40 us wake-up left
    // The pool's own figure, where measured, not the stream's.
    cc.cpu_pool_wake_s = 100e-6;
    auto rp = run(q.plan(), 1, 1, cc);
    CHECK(event(rp, 1).start_s == Approx(0.5 + 40e-6).epsilon(kRel));  // the stream's wake-up
    CHECK(duration(rp, 1) == Approx(1e-3 + 100e-6 / 2).epsilon(kRel));
    cc.cpu_pool_wake_s = 0;  // none: the pool's workers count as awake
    CHECK(duration(run(q.plan(), 1, 1, cc), 1) == Approx(1e-3).epsilon(kRel));
  }
  SECTION("CPU Adam's pool sleeps when idle past its poll, not when used a moment before") {
    auto cc = c;
    cc.cpu_pool_threads = 2;
    cc.cpu_pool_wake_s = 40e-6;
    PlanBuilder q;
    const uint32_t a = q.add(Stream::cpu_adam, OpKind::adam_cpu);  // 0: at the step's start, 1 ms
    q.op(a).elements = 1'000'000;
    const uint32_t x = q.compute(1e9, {a});                             // 1: 10 us on the compute stream
    const uint32_t g = q.add(Stream::cpu_adam, OpKind::adam_cpu, {x});  // 2: its stream and the pool idle 50 us
    q.op(g).elements = 1'000'000;
    const uint32_t y = q.compute(50e9, {g});                            // 3: 500 us
    const uint32_t l = q.add(Stream::cpu_adam, OpKind::adam_cpu, {y});  // 4: the stream slept, and the pool
    q.op(l).elements = 1'000'000;
    auto r = run(q.plan(), 1, 1, cc);
    CHECK(duration(r, 0) == Approx(1e-3).epsilon(kRel));  // the step's start: the pool was just used
    CHECK(duration(r, 2) == Approx(1e-3).epsilon(kRel));
    CHECK(event(r, 4).start_s == Approx(event(r, 3).end_s + 40e-6).epsilon(kRel));
    CHECK(duration(r, 4) == Approx(1e-3 + 40e-6 / 2).epsilon(kRel));
  }
}

TEST_CASE("two flows on one link share it", "[sim][golden]") {
  auto c = test::exact_cost();
  SECTION("two GPUs' H2D copies through a host uplink as fast as one GPU's link") {
    c.pcie_host_Bps = c.pcie_h2d_Bps;
    PlanBuilder b(2);
    b.transfer(OpKind::h2d, 1'000'000'000);
    auto r = run(b.plan(), 1, 2, c);
    CHECK(duration(r, 0, 0) == Approx(2e9 / c.pcie_host_Bps + c.pcie_latency_s).epsilon(kRel));
    CHECK(duration(r, 0, 1) == Approx(2e9 / c.pcie_host_Bps + c.pcie_latency_s).epsilon(kRel));
  }
  SECTION("a wide uplink does not slow them") {
    PlanBuilder b(2);
    b.transfer(OpKind::h2d, 1'000'000'000);
    CHECK(run(b.plan(), 1, 2, c).trace.step_time_s == Approx(1e9 / c.pcie_h2d_Bps + c.pcie_latency_s).epsilon(kRel));
  }
  SECTION("16 GPUs share the node's NVMe array") {
    PlanBuilder b(16);
    b.transfer(OpKind::nvme_read, 300'000'000);
    CHECK(run(b.plan(), 1, 16, c).trace.step_time_s ==
          Approx(16 * 3e8 / c.nvme_read_Bps + c.nvme_read_latency_s).epsilon(kRel));
  }
  SECTION("CPU Adam of several ranks shares the CPU") {
    PlanBuilder b(4);
    b.op(b.add(Stream::cpu_adam, OpKind::adam_cpu)).elements = 1'000'000'000;
    CHECK(run(b.plan(), 1, 4, c).trace.step_time_s == Approx(4.0).epsilon(kRel));
  }
}

TEST_CASE("a ring collective matches the formula in collectives.h", "[sim][golden]") {
  const auto c = test::exact_cost();
  const int64_t bytes = 1'000'000'000;
  SECTION("all-reduce over 4 GPUs on NVLink") {
    PlanBuilder b(4);
    b.collective(OpKind::allreduce, bytes, 4);
    auto r = run(b.plan(), 1, 4);
    const double expect =
        core::collective_time_s(core::Collective::allreduce, bytes, 4, c.nvlink_Bps, c.nvlink_latency_s);
    CHECK(r.trace.step_time_s == Approx(expect).epsilon(kRel));
    for (int32_t k = 0; k < 4; ++k) CHECK(duration(r, 0, k) == Approx(expect).epsilon(kRel));
  }
  SECTION("all-gather and reduce-scatter over 8 GPUs") {
    for (OpKind k : {OpKind::allgather, OpKind::reduce_scatter}) {
      PlanBuilder b(8);
      b.collective(k, bytes, 8);
      const auto coll = k == OpKind::allgather ? core::Collective::allgather : core::Collective::reduce_scatter;
      CHECK(run(b.plan(), 1, 8).trace.step_time_s ==
            Approx(core::collective_time_s(coll, bytes, 8, c.nvlink_Bps, c.nvlink_latency_s)).epsilon(kRel));
    }
  }
  SECTION("an all-gather across 2 nodes runs at the slower of NVLink and the NIC") {
    PlanBuilder b(8);
    b.collective(OpKind::allgather, bytes, 8);
    const double expect = core::collective_time_s(core::Collective::allgather, bytes, 8, c.nic_Bps, c.nic_latency_s);
    CHECK(run(b.plan(), 2, 4).trace.step_time_s == Approx(expect).epsilon(kRel));
  }
  SECTION("an all-reduce across nodes takes NCCL's tree: same bytes, log-depth latency") {
    PlanBuilder b(16);
    b.collective(OpKind::allreduce, bytes, 16);
    const double wire = core::wire_bytes_per_rank(core::Collective::allreduce, bytes, 16);
    const int64_t steps = 2 * ((4 - 1) + 2);  // chain of 4 in the node, log2(4 nodes) across
    CHECK(run(b.plan(), 4, 4).trace.step_time_s == Approx(wire / c.nic_Bps + steps * c.nic_latency_s).epsilon(kRel));
  }
  SECTION("without NVLink, peer traffic crosses PCIe and the host uplink") {
    auto c2 = c;
    c2.nvlink_Bps = 0;
    PlanBuilder b(2);
    b.collective(OpKind::allgather, bytes, 2);
    const double expect =
        core::collective_time_s(core::Collective::allgather, bytes, 2, c2.pcie_d2h_Bps, 2 * c2.pcie_latency_s);
    CHECK(run(b.plan(), 1, 2, c2).trace.step_time_s == Approx(expect).epsilon(kRel));
  }
  SECTION("a group of one moves nothing") {
    PlanBuilder b(1);
    b.collective(OpKind::allreduce, bytes, 1);
    CHECK(run(b.plan()).trace.step_time_s == 0.0);
  }
}

namespace {

// A random DAG over every stream and op kind, for determinism and stress.
core::Plan random_plan(uint32_t seed, int ops, int64_t ranks) {
  std::mt19937 rng(seed);
  PlanBuilder b(ranks);
  const OpKind kinds[] = {OpKind::forward,        OpKind::backward,   OpKind::h2d,      OpKind::d2h,
                          OpKind::nvme_read,      OpKind::nvme_write, OpKind::adam_cpu, OpKind::allgather,
                          OpKind::reduce_scatter, OpKind::cast_cpu};
  for (int i = 0; i < ops; ++i) {
    const OpKind k = kinds[rng() % std::size(kinds)];
    std::vector<uint32_t> deps;
    for (int d = 0; d < 2 && i > 0; ++d)
      if (rng() % 2) deps.push_back(static_cast<uint32_t>(rng() % static_cast<uint32_t>(i)));
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    uint32_t id;
    switch (k) {
      case OpKind::forward:
      case OpKind::backward:
        id = b.compute(1e9 * (1 + rng() % 100));
        b.op(id).kind = k;
        break;
      case OpKind::h2d:
      case OpKind::d2h:
      case OpKind::nvme_read:
      case OpKind::nvme_write:
        id = b.transfer(k, 1000 * (1 + rng() % 100000));
        break;
      case OpKind::adam_cpu:
        id = b.add(Stream::cpu_adam, k);
        b.op(id).elements = 1000 * (1 + rng() % 10000);
        break;
      case OpKind::cast_cpu:
        id = b.add(Stream::cpu_adam, k);
        b.op(id).bytes = 1000 * (1 + rng() % 10000);
        break;
      default:
        id = b.collective(k, 1000 * (1 + rng() % 100000), static_cast<int32_t>(ranks));
        break;
    }
    b.op(id).deps = deps;
    b.op(id).mem_delta = {static_cast<int64_t>(rng() % 1000) - 500, 0, 0};
  }
  return b.plan();
}

}  // namespace

TEST_CASE("the simulator is deterministic", "[sim][golden]") {
  const core::Plan p = random_plan(7, 2000, 4);
  auto a = run(p, 1, 4);
  auto b = run(p, 1, 4);
  REQUIRE(a.trace.events.size() == 4 * 2000);
  REQUIRE(b.trace.events.size() == a.trace.events.size());
  CHECK(a.trace.step_time_s == b.trace.step_time_s);
  bool same = true;
  for (size_t i = 0; i < a.trace.events.size(); ++i)
    same = same && a.trace.events[i].start_s == b.trace.events[i].start_s &&
           a.trace.events[i].end_s == b.trace.events[i].end_s;
  CHECK(same);
  CHECK(core::trace_to_json(a.trace) == core::trace_to_json(b.trace));
  CHECK(a.trace.memory.size() == b.trace.memory.size());
}

TEST_CASE("every op runs after its dependencies and its stream predecessor", "[sim]") {
  const core::Plan p = random_plan(11, 3000, 2);
  auto r = run(p, 1, 2);
  std::vector<std::vector<const core::TraceEvent*>> by(2, std::vector<const core::TraceEvent*>(p.ops.size()));
  for (const auto& e : r.trace.events) by[static_cast<size_t>(e.rank)][e.op] = &e;
  bool ok = true;
  for (int rank = 0; rank < 2; ++rank) {
    std::array<double, 7> stream_end{};
    for (const auto& op : p.ops) {
      const auto* e = by[static_cast<size_t>(rank)][op.id];
      ok = ok && e && e->end_s >= e->start_s && e->start_s >= stream_end[static_cast<size_t>(op.stream)] - 1e-15;
      for (uint32_t d : op.deps) ok = ok && e->start_s >= by[static_cast<size_t>(rank)][d]->end_s - 1e-15;
      stream_end[static_cast<size_t>(op.stream)] = e->end_s;
    }
  }
  CHECK(ok);
  double last = 0;
  for (const auto& e : r.trace.events) last = std::max(last, e.end_s);
  CHECK(r.trace.step_time_s == last);
}

TEST_CASE("rank 0's memory timeline follows op completions", "[sim]") {
  PlanBuilder b;
  b.plan().static_bytes = {100, 1000, 0};
  uint32_t a = b.add(Stream::compute, OpKind::alloc);
  b.op(a).mem_delta = {50, 0, 0};
  uint32_t f = b.compute(10e12, {a});  // 0.1 s
  uint32_t rel = b.add(Stream::compute, OpKind::release, {f});
  b.op(rel).mem_delta = {-50, 0, 0};
  uint32_t w = b.transfer(OpKind::nvme_write, 2'000'000'000, {f});
  b.op(w).mem_delta = {0, 0, 7};
  auto r = run(b.plan());
  const auto& m = r.trace.memory;
  REQUIRE(m.size() == 3);
  CHECK(m[0].t_s == 0.0);
  CHECK(m[0].bytes == std::array<int64_t, 3>{150, 1000, 0});  // static + the alloc at t = 0
  CHECK(m[1].t_s == Approx(0.1).epsilon(kRel));
  CHECK(m[1].bytes[0] == 100);
  CHECK(m[2].bytes[2] == 7);
  CHECK(r.trace.peak_bytes == std::array<int64_t, 3>{150, 1000, 7});
}

TEST_CASE("bad plans and hardware come back as errors", "[sim]") {
  SECTION("a dependency on a later op") {
    PlanBuilder b;
    b.compute(1e9);
    b.compute(1e9);
    b.op(0).deps = {1};
    auto r = sim::simulate(b.plan(), test::exact_cost(), {});
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message, Catch::Contains("not an earlier op"));
  }
  SECTION("NVMe traffic without NVMe") {
    auto c = test::exact_cost();
    c.nvme_read_Bps = c.nvme_write_Bps = 0;
    PlanBuilder b;
    b.transfer(OpKind::nvme_read, 100);
    auto r = sim::simulate(b.plan(), c, {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind == core::ErrorKind::bad_input);
  }
  SECTION("a collective across nodes without a network") {
    auto c = test::exact_cost();
    c.nic_Bps = 0;
    PlanBuilder b(8);
    b.collective(OpKind::allgather, 1000, 8);
    sim::SimOptions o;
    o.nodes = 2;
    o.gpus_per_node = 4;
    auto r = sim::simulate(b.plan(), c, o);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message, Catch::Contains("no network"));
  }
}

TEST_CASE("a large plan simulates quickly with only the frontier alive", "[sim][perf]") {
  const core::Plan p = random_plan(3, 20000, 16);
  auto r = run(p, 1, 16);
  CHECK(r.trace.events.size() == 16 * 20000);
  CHECK(r.wall_s < 10.0);
  CHECK(r.activities > 0);
}

TEST_CASE("plans that list several ranks run as listed; collectives match by issue order", "[sim]") {
  const auto c = test::exact_cost();
  test::PlanBuilder b(2);
  b.plan().represented_ranks = 2;
  const uint32_t f0 = b.compute(10e12);  // rank 0: 0.1 s
  const uint32_t f1 = b.compute(30e12);  // rank 1: 0.3 s
  b.op(f1).rank = 1;
  const uint32_t a0 = b.collective(OpKind::allgather, 1'000'000'000, 2, {f0});
  const uint32_t a1 = b.collective(OpKind::allgather, 1'000'000'000, 2, {f1});
  b.op(a1).rank = 1;
  auto r = run(b.plan(), 1, 2);
  REQUIRE(r.trace.events.size() == 4);
  const double coll =
      core::collective_time_s(core::Collective::allgather, 1'000'000'000, 2, c.nvlink_Bps, c.nvlink_latency_s);
  CHECK(event(r, a0, 0).start_s == Approx(0.3).epsilon(kRel));  // waits for rank 1
  CHECK(event(r, a1, 1).end_s == Approx(0.3 + coll).epsilon(kRel));
  CHECK(r.trace.step_time_s == Approx(0.3 + coll).epsilon(kRel));
}
