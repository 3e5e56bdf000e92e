// The host device's profile from a run's own ops (probe/host_probe.h): the hand-offs to a sleeping stream and the
// pool's wake-ups, the NVMe swaps, the optimizer's CPU ops and the copies of a step's trace, and the figures they
// set or scale.
#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "core/cost_model.h"
#include "core/hardware.h"
#include "core/plan.h"
#include "core/trace.h"
#include "probe/host_probe.h"

using namespace zs;

namespace {
// Appends `op` to the plan, as op number plan.ops.size(), and its event, start_us to end_us, to the step's trace.
void add_traced_op(core::Plan& plan, core::Trace& t, core::Op op, double start_us, double end_us) {
  op.id = static_cast<uint32_t>(plan.ops.size());
  core::TraceEvent e;
  e.op = op.id;
  e.stream = op.stream;
  e.kind = op.kind;
  e.start_s = start_us * 1e-6;
  e.end_s = end_us * 1e-6;
  plan.ops.push_back(std::move(op));
  t.events.push_back(e);
}
}  // namespace

TEST_CASE("the run's own wake-ups: hand-offs to a sleeping stream from a step's trace, their trimmed mean",
          "[exec][probe]") {
  using core::OpKind;
  using core::Stream;
  core::Plan plan;
  core::Trace t;
  // (stream, kind, deps, start us, end us), in program order.
  struct O {
    Stream st;
    OpKind k;
    std::vector<uint32_t> deps;
    double s, e;
  };
  const std::vector<O> ops = {
      {Stream::compute, OpKind::forward, {}, 0, 1000},      // 0: a stream's first op, no wait
      {Stream::h2d, OpKind::h2d, {0}, 1050, 1100},          // 1: h2d idle from the start, 1 ms past its poll: 50 us
      {Stream::h2d, OpKind::h2d, {}, 1100, 1150},           // 2: right behind op 1: awake
      {Stream::comm, OpKind::allreduce, {0}, 1012, 1020},   // 3: comm's first, waited 1 ms: 12 us
      {Stream::compute, OpKind::release, {3}, 1300, 1300},  // 4: a release: never counted
      {Stream::compute, OpKind::forward, {1}, 1300, 1350},  // 5: behind the release at once
      {Stream::d2h, OpKind::d2h, {5}, 1390, 1400},          // 6: d2h's first, waited 1.35 ms: 40 us
      {Stream::comm, OpKind::allreduce, {2}, 1160, 1170},   // 7: comm waited 130 us < 200 us: still polling
      {Stream::comm, OpKind::allgather, {6}, 1400, 1410},   // 8: waited 230 us for op 6, started at once: 0
  };
  for (const auto& o : ops) {
    core::Op op;
    op.stream = o.st;
    op.kind = o.k;
    op.deps = o.deps;
    add_traced_op(plan, t, op, o.s, o.e);
  }
  const auto h = probe::sleeping_stream_handoffs(plan, t, 200e-6);
  // (from, to, delay us): the stream of the dependency that ended last hands over.
  const std::vector<std::tuple<Stream, Stream, double>> want = {{Stream::compute, Stream::h2d, 50},
                                                                {Stream::compute, Stream::comm, 12},
                                                                {Stream::compute, Stream::d2h, 40},
                                                                {Stream::d2h, Stream::comm, 0}};
  auto same = [&](const std::vector<probe::Handoff>& x) {
    REQUIRE(x.size() == want.size());
    for (size_t i = 0; i < x.size(); ++i) {
      INFO("hand-off " << i);
      CHECK(x[i].from == std::get<0>(want[i]));
      CHECK(x[i].to == std::get<1>(want[i]));
      CHECK(x[i].delay_s == Approx(std::get<2>(want[i]) * 1e-6).margin(1e-12));
    }
  };
  same(h);
  CHECK(probe::sleeping_stream_handoffs(plan, t, 2e-3).empty());  // a poll longer than every wait: none slept
  std::reverse(t.events.begin(), t.events.end());                 // events are matched by op id, not position
  same(probe::sleeping_stream_handoffs(plan, t, 200e-6));

  // The trimmed mean drops the lowest and highest tenth: 1..8 and 20 us and a preempted 1 ms give the mean of 2..8
  // and 20 us, 6.875 us (their median would be 5.5 us).
  std::vector<double> v = {1e-3, 20e-6};
  for (int i = 1; i <= 8; ++i) v.push_back(i * 1e-6);
  CHECK(probe::trimmed_mean(v) == Approx(6.875e-6).epsilon(1e-12));
  CHECK(probe::trimmed_mean({3e-6, 5e-6}) == Approx(4e-6));  // under ten: nothing dropped
  CHECK(probe::trimmed_mean({}) == 0);

  probe::HostDeviceProbe p;
  p.stream_spin_s = 200e-6;
  p.stream_wake_s = 2e-6;  // a session's figure
  // The ten above handed from the all-reduce to CPU Adam, four of 30 us from compute to H2D: the stream figure is
  // the trimmed mean of all 14 (2..8, 20 and 4 x 30 us: 14.583 us), the first pair has its own, the second too few.
  std::vector<probe::Handoff> hs;
  for (double x : v) hs.push_back({Stream::comm, Stream::cpu_adam, x});
  for (int i = 0; i < 4; ++i) hs.push_back({Stream::compute, Stream::h2d, 30e-6});
  auto both = probe::with_run_wakes(p, hs, {30e-6, 40e-6, 50e-6, 60e-6, 70e-6}, "steps 1-9");
  CHECK(both.stream_wake_s == Approx(175e-6 / 12).epsilon(1e-12));
  REQUIRE(both.stream_wake_pairs.size() == 1);
  CHECK(both.stream_wake_pairs[0].from == "comm");
  CHECK(both.stream_wake_pairs[0].to == "cpu_adam");
  CHECK(both.stream_wake_pairs[0].wake_us == Approx(6.875).epsilon(1e-12));
  CHECK(both.pool_wake_s == Approx(50e-6).epsilon(1e-12));
  CHECK(both.wakes_from.find("14 hand-offs to a sleeping stream (per stream pair with 5 or more, its own) and of 5 "
                             "wake-ups of CPU Adam's pool workers in steps 1-9") != std::string::npos);
  // Fewer than kMinWakeSamples leave a figure as it was.
  auto few = probe::with_run_wakes(p, {hs.begin(), hs.begin() + 4}, {9e-6}, "x");
  CHECK(few.stream_wake_s == 2e-6);
  CHECK(few.stream_wake_pairs.empty());
  CHECK(few.pool_wake_s == 0);
  CHECK(few.wakes_from == p.wakes_from);
  auto pool_only = probe::with_run_wakes(p, {}, v, "x");
  CHECK(pool_only.stream_wake_s == 2e-6);
  CHECK(pool_only.pool_wake_s == Approx(6.875e-6).epsilon(1e-12));
  CHECK(pool_only.wakes_from.rfind("the trimmed mean of 10 wake-ups", 0) == 0);
  // Into the profile, said in its source; without a pool figure the key stays absent (the stream's stands in).
  const core::Hardware h1 = probe::apply_host_probe(*core::load_hardware("ci-2core"), both);
  REQUIRE(h1.measured.cpu_pool_wake_us.has_value());
  CHECK(*h1.measured.cpu_pool_wake_us == Approx(50));
  CHECK(*h1.measured.stream_wake_latency_us == Approx(175.0 / 12));
  REQUIRE(h1.measured.stream_wake_pairs.size() == 1);
  CHECK(h1.measured.stream_wake_pairs[0].wake_us == Approx(6.875));
  CHECK(h1.source.find("starts 15 us late (by the pair that hands over: comm -> cpu_adam 7 us) and CPU Adam's pool "
                       "workers asleep join 50 us late (the trimmed mean of 14") != std::string::npos);
  CHECK_FALSE(probe::apply_host_probe(*core::load_hardware("ci-2core"), p).measured.cpu_pool_wake_us.has_value());
}

TEST_CASE("the run's own swaps: which ran alone, their age and rest, and the sessions' lines scaled to them",
          "[exec][probe][nvme]") {
  using core::OpKind;
  core::Plan plan;
  core::Trace t;
  struct O {
    OpKind k;
    int64_t bytes;
    int32_t tensor;
    double s, e;  // us
  };
  const std::vector<O> ops = {
      {OpKind::forward, 0, -1, 0, 900},           // 0: not a swap
      {OpKind::nvme_write, 1000, 0, 1000, 1500},  // 1: rested 1 ms (the step's start); tensor 0 unwritten: age 1 ms
      {OpKind::nvme_read, 1000, 0, 1600, 2000},   // 2: rested 100 us; tensor 0 written at 1500: age 100 us
      {OpKind::nvme_read, 1000, 1, 2000, 2300},   // 3: right behind op 2; tensor 1 unwritten: age 2 ms
      {OpKind::nvme_read, 1000, 2, 3000, 3500},   // 4: shares the path with op 5: left out
      {OpKind::nvme_write, 1000, 3, 3200, 3400},  // 5: left out
      {OpKind::nvme_read, 0, 3, 3600, 3600},      // 6: no bytes
      {OpKind::nvme_read, 1000, 3, 4000, 4200},   // 7: rested 500 us; tensor 3 written at 3400: age 600 us
  };
  for (const auto& o : ops) {
    core::Op op;
    op.kind = o.k;
    op.bytes = o.bytes;
    op.tensor = o.tensor;
    add_traced_op(plan, t, op, o.s, o.e);
  }
  std::reverse(t.events.begin(), t.events.end());  // matched by op id, taken in start order
  const auto v = probe::run_swaps(plan, t);
  REQUIRE(v.size() == 4);
  const std::vector<std::array<double, 4>> want = {
      {0, 500, 1000, 1000}, {1, 400, 100, 100}, {1, 300, 2000, 0}, {1, 200, 600, 500}};  // read, took, age, rested
  for (size_t i = 0; i < v.size(); ++i) {
    INFO("swap " << i);
    CHECK(v[i].read == (want[i][0] == 1));
    CHECK(v[i].bytes == 1000);
    CHECK(v[i].took_s == Approx(want[i][1] * 1e-6).epsilon(1e-9));
    CHECK(v[i].age_s == Approx(want[i][2] * 1e-6).epsilon(1e-9));
    CHECK(v[i].idle_s == Approx(want[i][3] * 1e-6).margin(1e-12));
  }

  // Session lines, settled and at once alike: read 100 us + bytes at 1 GB/s, write 50 us + bytes at 2 GB/s; after an
  // idle path +100, +200, +400 us.
  probe::HostDeviceProbe p;
  p.nvme_small = 100000;
  p.nvme_large = 1000000;
  p.aio_block_size = 1048576;
  p.aio_queue_depth = 8;
  for (int hot = 0; hot < 2; ++hot) {
    p.read_small_s[hot] = 200e-6;
    p.read_large_s[hot] = 1100e-6;
    p.write_small_s[hot] = 100e-6;
    p.write_large_s[hot] = 550e-6;
  }
  p.nvme_idle = {{3e-3, 100e-6}, {30e-3, 200e-6}, {300e-3, 400e-6}};
  const core::Hardware base = *core::load_hardware("ci-2core");
  // The run: 1 MB reads at twice the line, and one 100x slower (the trimmed tenth); writes at half the line; writes
  // after a 30 ms rest at half the line + three times the extra.
  std::vector<probe::RunSwap> run;
  for (int i = 0; i < 10; ++i) run.push_back({true, 1000000, 2 * 1100e-6, 0.1, 0});
  run.push_back({true, 1000000, 100 * 1100e-6, 0.1, 0});
  for (int i = 0; i < 10; ++i) run.push_back({false, 1000000, 0.5 * 550e-6, 0.1, 0});
  for (int i = 0; i < 6; ++i) run.push_back({false, 1000000, 0.5 * 550e-6 + 3 * 200e-6, 0.1, 30e-3});
  const auto q = probe::with_run_swaps(p, base, run, "steps 1-9");
  CHECK(q.swap_scale_read == Approx(2).epsilon(1e-9));
  CHECK(q.swap_scale_write == Approx(0.5).epsilon(1e-9));
  CHECK(q.swap_scale_idle == Approx(3).epsilon(1e-9));
  CHECK(q.swaps_from ==
        "scaled to the run's own swaps that ran alone in steps 1-9: reads x2.00 (11 swaps), writes "
        "x0.50 (10 swaps), the extra after an idle path x3.00 (6 swaps)");
  const core::Hardware h = probe::apply_host_probe(base, q);
  CHECK(*h.measured.nvme_read_latency_us == Approx(200));
  CHECK(*h.measured.nvme_read_GBps == Approx(0.5));
  CHECK(*h.measured.nvme_hot_read_latency_us == Approx(200));
  CHECK(*h.measured.nvme_write_latency_us == Approx(25));
  CHECK(*h.measured.nvme_hot_write_GBps == Approx(4));
  REQUIRE(h.measured.nvme_idle_wake.size() == 3);
  CHECK(h.measured.nvme_idle_wake[2].extra_us == Approx(1200));
  CHECK(h.source.find("the sessions' swaps scaled to the run's own swaps") != std::string::npos);
  const core::CostModel c = core::cost_model_for(h, core::Precision::bf16);  // the simulator prices the run's swaps
  CHECK(core::nvme_swap_time_s(c, true, 1000000, 0.1) == Approx(2200e-6).epsilon(1e-6));
  CHECK(core::nvme_swap_time_s(c, false, 1000000, 0.1) + core::nvme_idle_extra_s(c, 30e-3) ==
        Approx(0.5 * 550e-6 + 3 * 200e-6).epsilon(1e-6));
  // Too few of a kind leave its scale at 1; without the sessions' swaps nothing changes.
  const auto few = probe::with_run_swaps(p, base, {run.begin(), run.begin() + 4}, "x");
  CHECK(few.swap_scale_read == 1);
  CHECK(few.swaps_from.find("reads as measured (4 swaps), writes as measured (0 swaps)") != std::string::npos);
  probe::HostDeviceProbe none;
  CHECK(probe::with_run_swaps(none, base, run, "x").swaps_from.empty());
  CHECK(probe::apply_host_probe(base, p).measured.nvme_read_latency_us == Approx(100));
}

TEST_CASE("the run's own CPU ops: their busy runs as the simulator sees the pool, and the passes scaled to them",
          "[exec][probe]") {
  using core::OpKind;
  core::Plan plan;
  core::Trace t;
  core::Op fwd, adam, cast;
  fwd.kind = OpKind::forward;
  adam.kind = OpKind::adam_cpu;
  adam.elements = 120000;
  cast.kind = OpKind::cast_cpu;
  cast.bytes = 720000;
  add_traced_op(plan, t, fwd, 0, 1000);      // not a CPU op
  add_traced_op(plan, t, adam, 2000, 2150);  // a busy run begins after 2 ms (the step's start)
  add_traced_op(plan, t, cast, 2160, 2200);  // 10 us later: the same run, 160 us after its start
  add_traced_op(plan, t, adam, 2500, 2640);  // 300 us > the 200 us poll: a new run
  add_traced_op(plan, t, cast, 2650, 2690);
  std::reverse(t.events.begin(), t.events.end());
  const auto v = probe::run_cpu_ops(plan, t, 200e-6);
  REQUIRE(v.size() == 4);
  const std::vector<std::array<double, 4>> want = {// adam?, took, rest, after (us)
                                                   {1, 150, 2000, 0},
                                                   {0, 40, 2000, 160},
                                                   {1, 140, 300, 0},
                                                   {0, 40, 300, 150}};
  for (size_t i = 0; i < v.size(); ++i) {
    INFO("op " << i);
    CHECK((v[i].op.kind == OpKind::adam_cpu) == (want[i][0] == 1));
    CHECK(v[i].took_s == Approx(want[i][1] * 1e-6).epsilon(1e-9));
    CHECK(v[i].rest_s == Approx(want[i][2] * 1e-6).epsilon(1e-9));
    CHECK(v[i].after_s == Approx(want[i][3] * 1e-6).epsilon(1e-9));
  }

  // Passes of 120,000 elements on 2 threads: Adam 1.2e9 params/s, the unscale 24 GB/s, the cast 18 GB/s; the pool's
  // workers join 30 us late after the 200 us poll.
  probe::HostDeviceProbe p;
  p.opt_elements = 120000;
  p.opt_threads = 2;
  p.adam_s = 100e-6;
  p.unscale_bytes = 960000;
  p.unscale_s = 40e-6;
  p.cast_bytes = 720000;
  p.cast_s = 40e-6;
  p.stream_spin_s = 200e-6;
  p.stream_wake_s = 20e-6;
  p.pool_wake_s = 30e-6;
  const core::Hardware base = *core::load_hardware("ci-2core");
  const core::CostModel c0 = core::cost_model_for(probe::apply_host_probe(base, p), core::Precision::bf16);
  const double wa = core::compute_time_s(c0, adam), wc = core::compute_time_s(c0, cast);
  REQUIRE(wa == Approx(100e-6 + 40e-6));
  // The run: Adam at 1.5x the passes (after a rest the caller works alone for 30 us: +15 us on 2 threads), one
  // 50x (the trimmed tenth); the cast at 0.8x, 10 us into a woken run (+10 us).
  std::vector<probe::RunCpuOp> run;
  for (int i = 0; i < 10; ++i) run.push_back({adam, 1.5 * wa + 15e-6, 1e-3, 0});
  for (int i = 0; i < 10; ++i) run.push_back({adam, 1.5 * wa, 100e-6, 0});
  run.push_back({adam, 50 * wa, 100e-6, 0});
  for (int i = 0; i < 6; ++i) run.push_back({cast, 0.8 * wc + 10e-6, 1e-3, 10e-6});
  const auto q = probe::with_run_cpu_ops(p, base, run, "steps 1-9");
  CHECK(q.adam_op_scale == Approx(1.5).epsilon(1e-9));
  CHECK(q.cast_op_scale == Approx(0.8).epsilon(1e-9));
  CHECK(q.cpu_ops_from == "scaled to the run's own CPU ops in steps 1-9: Adam x1.50 (21 ops), the cast x0.80 (6 ops)");
  const core::Hardware h = probe::apply_host_probe(base, q);
  CHECK(*h.measured.cpu_adam_params_per_s == Approx(0.8e9));
  CHECK(*h.measured.cpu_pass_GBps == Approx(16));
  CHECK(*h.measured.cpu_cast_GBps == Approx(22.5));
  CHECK(h.source.find("; the passes scaled to the run's own CPU ops in steps 1-9") != std::string::npos);
  const core::CostModel c = core::cost_model_for(h, core::Precision::bf16);
  CHECK(core::compute_time_s(c, adam) == Approx(1.5 * wa));
  CHECK(core::compute_time_s(c, cast) == Approx(0.8 * wc));
  // Too few of a kind leave it at 1; without timed passes nothing changes.
  const auto few = probe::with_run_cpu_ops(p, base, {run.end() - 6, run.end() - 2}, "x");
  CHECK(few.cast_op_scale == 1);
  CHECK(few.cpu_ops_from.find("Adam as measured (0 ops), the cast as measured (4 ops)") != std::string::npos);
  CHECK(probe::with_run_cpu_ops(probe::HostDeviceProbe{}, base, run, "x").cpu_ops_from.empty());
}

TEST_CASE("the run's own copies: page-locked ones that ran alone, and the copy rate scaled to them per direction",
          "[exec][probe]") {
  using core::OpKind;
  core::Plan plan;
  core::Trace t;
  plan.tensors.resize(2);
  plan.tensors[0].home = core::Tier::cpu;  // pageable: the simulator routes it apart
  plan.tensors[1].home = core::Tier::cpu;
  plan.tensors[1].pinned = true;
  auto copy = [](OpKind k, int32_t tensor, int64_t bytes) {
    core::Op op;
    op.kind = k;
    op.tensor = tensor;
    op.bytes = bytes;
    return op;
  };
  add_traced_op(plan, t, copy(OpKind::h2d, 1, 1000), 0, 100);    // alone
  add_traced_op(plan, t, copy(OpKind::d2h, 1, 2000), 200, 300);  // alone
  add_traced_op(plan, t, copy(OpKind::h2d, 1, 1000), 400, 500);  // shares the link with the next
  add_traced_op(plan, t, copy(OpKind::d2h, 1, 1000), 450, 550);
  add_traced_op(plan, t, copy(OpKind::h2d, 0, 1000), 600, 700);  // pageable
  add_traced_op(plan, t, copy(OpKind::h2d, 1, 0), 800, 800);     // no bytes
  const auto v = probe::run_copies(plan, t);
  REQUIRE(v.size() == 2);
  CHECK(v[0].h2d);
  CHECK(v[0].bytes == 1000);
  CHECK(v[0].took_s == Approx(100e-6));
  CHECK_FALSE(v[1].h2d);
  CHECK(v[1].bytes == 2000);

  probe::HostDeviceProbe p;
  p.copy_Bps = 5e9;
  p.copy_latency_s = 2e-6;
  std::vector<probe::RunCopy> run;
  for (int i = 0; i < 10; ++i) run.push_back({true, 1000000, 2e-6 + 0.5 * 200e-6});
  for (int i = 0; i < 10; ++i) run.push_back({false, 1000000, 2e-6 + 1.25 * 200e-6});
  run.push_back({false, 1000000, 1.0});  // preempted: the trimmed tenth
  const auto q = probe::with_run_copies(p, run, "steps 1-9");
  CHECK(q.h2d_scale == Approx(0.5).epsilon(1e-9));
  CHECK(q.d2h_scale == Approx(1.25).epsilon(1e-9));
  CHECK(q.copies_from ==
        "scaled to the run's own copies that ran alone in steps 1-9: H2D x0.50 (10 copies), D2H x1.25 (11 copies)");
  const core::Hardware h = probe::apply_host_probe(*core::load_hardware("ci-2core"), q);
  CHECK(h.links.pcie_h2d_GBps == Approx(10));
  CHECK(h.links.pcie_d2h_GBps == Approx(4));
  CHECK(h.links.pcie_host_GBps == Approx(10));  // the host's link never the narrower
  CHECK(h.source.find("copies 5.00 GB/s + 2.00 us each (scaled to the run's own copies") != std::string::npos);
  const auto few = probe::with_run_copies(p, {run.begin(), run.begin() + 4}, "x");
  CHECK(few.h2d_scale == 1);
  CHECK(few.copies_from.find("H2D as measured (4 copies), D2H as measured (0 copies)") != std::string::npos);
  CHECK(probe::with_run_copies(probe::HostDeviceProbe{}, run, "x").copies_from.empty());
}
