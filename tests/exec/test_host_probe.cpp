// The host device's probe (exec/host_probe.h): module rates, per-role scales, the passes sampled through a run,
// the optimizer's CPU passes and the run's NVMe swaps, folded into a profile the simulator reads.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/cost_model.h"
#include "core/hardware.h"
#include "core/json_reader.h"
#include "core/model.h"
#include "core/plan.h"
#include "core/strategy.h"
#include "exec/gpt_model.h"
#include "exec/host_probe.h"
#include "exec/probe.h"

using namespace zs;
namespace fs = std::filesystem;

namespace {
// The tiny model on the CI profile, micro batch 2, sequence 32, bf16, with `zero` as zero_optimization.
struct HostProbeCase {
  core::ModelSpec m;
  core::Hardware hw;
  core::Strategy s;
  core::Plan plan;
};
HostProbeCase host_probe_case(const std::string& zero) {
  auto m = core::load_model("tiny");
  auto hw = core::load_hardware("ci-2core");
  REQUIRE(m.ok());
  REQUIRE(hw.ok());
  core::RunSettings run;
  run.seq_len = 32;
  run.hidden = m->hidden;
  auto s = core::parse_ds_config_text(
      R"({"train_micro_batch_size_per_gpu": 2, "bf16": {"enabled": true}, "zero_optimization": )" + zero + "}",
      "probe.json", run);
  INFO((s.ok() ? std::string() : s.error().message));
  REQUIRE(s.ok());
  core::Plan plan = core::make_plan(*m, *hw, *s);
  return {*m, *hw, *s, std::move(plan)};
}

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

TEST_CASE("the host device's probe: rates from the module forwards, one backward/forward ratio, into the profile",
          "[exec][probe]") {
  const HostProbeCase k = host_probe_case(R"({"stage": 2})");
  const core::ModelSpec* m = &k.m;
  const core::Hardware* hw = &k.hw;
  const core::Strategy* s = &k.s;
  const core::Plan& plan = k.plan;
  auto hp = exec::probe_host_device(*m, *s, plan);
  REQUIRE(hp.ok());
  CHECK(hp->gemm_flops_per_s > 1e6);
  CHECK(hp->copy_Bps > 1e8);
  // A memcpy's fixed cost is a call: well under a GPU copy's ~10 us issue and DMA set-up (0-1 us here).
  CHECK(hp->copy_latency_s >= 0);
  CHECK(hp->copy_latency_s < 5e-6);
  CHECK(hp->modules >= 2 * m->layers);  // every block module with work, and the head
  // A backward does about twice a forward's work; the reference kernels' ratio is measured, not assumed.
  CHECK(hp->backward_ratio > 0.5);
  CHECK(hp->backward_ratio < 6.0);
  // Stream threads that slept: a wake-up takes microseconds, not nothing and not milliseconds.
  CHECK(hp->stream_spin_s > 0);
  CHECK(hp->stream_wake_s > 0.2e-6);
  CHECK(hp->stream_wake_s < 5e-3);
  const core::Hardware h = exec::apply_host_probe(*hw, *hp);
  REQUIRE(h.measured.backward_time_ratio.has_value());
  CHECK(*h.measured.backward_time_ratio == hp->backward_ratio);
  REQUIRE(h.measured.stream_wake_latency_us.has_value());
  CHECK(*h.measured.stream_wake_latency_us == Approx(hp->stream_wake_s * 1e6));
  REQUIRE(h.measured.pcie_latency_us.has_value());
  CHECK(*h.measured.pcie_latency_us == Approx(hp->copy_latency_s * 1e6));
  CHECK(h.gpu.peak_tflops_bf16 == Approx(hp->gemm_flops_per_s / 1e12));
  CHECK(h.source.find("backward") != std::string::npos);
  auto back = core::load_hardware_file([&] {
    const std::string p = (fs::temp_directory_path() / "zs_host_probe_profile.json").string();
    REQUIRE(core::write_file_atomic(p, core::hardware_to_json(h)).ok());
    return p;
  }());
  REQUIRE(back.ok());
  CHECK(*back->measured.backward_time_ratio == Approx(hp->backward_ratio).epsilon(1e-12));
  // Per module role, the profile prices the modules at their measured time: the role's forwards sum to the measured
  // sum, and so do its backwards, through the cost model the simulator uses.
  REQUIRE(hp->forward_ops.size() == hp->forward_s.size());
  CHECK(back->measured.module_time_scale.size() == h.measured.module_time_scale.size());
  std::set<std::string> roles;
  for (const auto& x : h.measured.module_time_scale) roles.insert(x.role);
  for (const char* r : {"embedding", "positions", "norm", "qkv", "attn_out", "mlp_in", "mlp_out", "head"})
    CHECK(roles.count(r) == 1);
  core::CostModel c = core::cost_model_for(*back, core::Precision::bf16);
  core::apply_model_shapes(c, *m, s->micro_batch_per_gpu * s->run.seq_len);
  std::map<core::ModuleRole, std::array<double, 4>> sum;  // predicted, measured: forward, backward
  for (size_t i = 0; i < hp->forward_ops.size(); ++i) {
    auto& x = sum[hp->forward_ops[i].role];
    x[0] += core::compute_time_s(c, hp->forward_ops[i]);
    x[1] += hp->forward_s[i];
    x[2] += core::compute_time_s(c, hp->backward_ops[i]);
    x[3] += hp->backward_s[i];
  }
  for (const auto& [r, x] : sum) {
    INFO(core::to_string(r));
    CHECK(x[0] == Approx(x[1]).epsilon(1e-9));
    CHECK(x[2] == Approx(x[3]).epsilon(1e-9));
  }
  // Module times that are the formula's times a factor per role (forward f, backward 2f): the scales are exactly
  // those factors and the profile prices every module at its time, which the two rates alone do not.
  core::Hardware unscaled = h;
  unscaled.measured.module_time_scale.clear();
  core::CostModel c0 = core::cost_model_for(unscaled, core::Precision::bf16);
  core::apply_model_shapes(c0, *m, s->micro_batch_per_gpu * s->run.seq_len);
  auto factor = [](core::ModuleRole r) { return 1.0 + 0.25 * static_cast<double>(r); };
  exec::HostDeviceProbe exact = *hp;
  for (size_t i = 0; i < exact.forward_ops.size(); ++i) {
    exact.forward_s[i] = factor(exact.forward_ops[i].role) * core::compute_time_s(c0, exact.forward_ops[i]);
    exact.backward_s[i] = 2 * factor(exact.forward_ops[i].role) * core::compute_time_s(c0, exact.backward_ops[i]);
  }
  const core::Hardware he = exec::apply_host_probe(*hw, exact);
  REQUIRE(he.measured.module_time_scale.size() == h.measured.module_time_scale.size());
  for (const auto& x : he.measured.module_time_scale) {
    INFO(x.role);
    CHECK(x.forward == Approx(factor(core::module_role_from(x.role))).epsilon(1e-9));
    CHECK(x.backward == Approx(2 * factor(core::module_role_from(x.role))).epsilon(1e-9));
  }
  CHECK(exec::role_scaled_fit_rms(he, exact) < 1e-9);
  CHECK(exec::role_scaled_fit_rms(unscaled, exact) > 0.1);

  // A second session merged with the first: each module's faster time, the rates fitted to those.
  REQUIRE(hp->forward_s.size() == exec::GptModel::create(*m, exec::DType::bf16, 2, 32)->modules().size());
  exec::HostDeviceProbe slow = *hp;  // the first session, as if a neighbour had slowed its GEMMs down 3x
  for (double& t : slow.forward_s) t *= 3;
  for (double& t : slow.backward_s) t *= 3;
  auto hp2 = exec::probe_host_device(*m, *s, plan, &slow);
  REQUIRE(hp2.ok());
  CHECK(hp2->sessions == 2);
  for (size_t i = 0; i < hp2->forward_s.size(); ++i) {
    CHECK(hp2->forward_s[i] <= slow.forward_s[i]);
    CHECK(hp2->backward_s[i] <= slow.backward_s[i]);
  }
  // Within 2x of the first session's rate: the slowed one was outvoted (it alone would give a third).
  CHECK(hp2->gemm_flops_per_s > 0.5 * hp->gemm_flops_per_s);
  CHECK(exec::apply_host_probe(*hw, *hp2).source.find("the faster of 2 sessions") != std::string::npos);
  exec::HostDeviceProbe other = *hp;
  other.forward_s.pop_back();
  auto bad = exec::probe_host_device(*m, *s, plan, &other);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("another model") != std::string::npos);
}

TEST_CASE("module times sampled through a run: the timer's passes, their median per module, the rates refitted",
          "[exec][probe]") {
  const HostProbeCase k = host_probe_case(R"({"stage": 2})");
  auto hp = exec::probe_host_device(k.m, k.s, k.plan);
  REQUIRE(hp.ok());
  auto timer = exec::ModuleTimer::create(k.m, k.s);
  REQUIRE(timer.ok());
  REQUIRE((*timer)->modules() == hp->forward_s.size());
  const exec::ModulePass real = (*timer)->pass();
  REQUIRE(real.forward_s.size() == hp->forward_s.size());
  REQUIRE(real.backward_s.size() == hp->backward_s.size());
  double sum = 0;
  for (size_t i = 0; i < real.forward_s.size(); ++i) {
    CHECK(real.forward_s[i] > 0);
    CHECK(real.backward_s[i] > 0);
    sum += real.forward_s[i] + real.backward_s[i];
  }
  CHECK(sum < 10.0);  // tiny at 2 x 32 tokens: milliseconds

  // Passes that are the session's times x 1, x 3 and x 2: each module's median is x 2, so every fitted time doubles,
  // the rates halve and the backward ratio and the fit's error stay.
  auto scaled = [&](double f) {
    exec::ModulePass x{hp->forward_s, hp->backward_s};
    for (double& t : x.forward_s) t *= f;
    for (double& t : x.backward_s) t *= f;
    return x;
  };
  auto odd = exec::with_module_times(*hp, {scaled(1), scaled(3), scaled(2)}, "three passes");
  REQUIRE(odd.ok());
  for (size_t i = 0; i < hp->forward_s.size(); ++i) {
    CHECK(odd->forward_s[i] == Approx(2 * hp->forward_s[i]).epsilon(1e-12));
    CHECK(odd->backward_s[i] == Approx(2 * hp->backward_s[i]).epsilon(1e-12));
  }
  CHECK(odd->gemm_flops_per_s == Approx(hp->gemm_flops_per_s / 2).epsilon(1e-9));
  if (hp->mem_bound_Bps < 1e14) CHECK(odd->mem_bound_Bps == Approx(hp->mem_bound_Bps / 2).epsilon(1e-9));
  CHECK(odd->backward_ratio == Approx(hp->backward_ratio).epsilon(1e-12));
  CHECK(odd->fit_rms_rel == Approx(hp->fit_rms_rel).margin(1e-12));
  CHECK(odd->copy_Bps == hp->copy_Bps);  // the session's other figures stay
  CHECK(odd->stream_wake_s == hp->stream_wake_s);
  // Of an even count, the mean of the middle two: x 1, x 5, x 2, x 3 gives x 2.5.
  auto even = exec::with_module_times(*hp, {scaled(1), scaled(5), scaled(2), scaled(3)}, "four passes");
  REQUIRE(even.ok());
  for (size_t i = 0; i < hp->forward_s.size(); ++i) CHECK(even->forward_s[i] == Approx(2.5 * hp->forward_s[i]));
  // The profile says where its module times came from.
  CHECK(exec::apply_host_probe(k.hw, *odd).source.find("module times: three passes") != std::string::npos);
  // Passes of another model are refused, as is none.
  exec::ModulePass short_pass = real;
  short_pass.backward_s.pop_back();
  auto bad = exec::with_module_times(*hp, {real, short_pass}, "x");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("another model") != std::string::npos);
  CHECK_FALSE(exec::with_module_times(*hp, {}, "x").ok());
}

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
  const auto h = exec::sleeping_stream_handoffs(plan, t, 200e-6);
  REQUIRE(h.size() == 4);
  CHECK(h[0] == Approx(50e-6).epsilon(1e-9));
  CHECK(h[1] == Approx(12e-6).epsilon(1e-9));
  CHECK(h[2] == Approx(40e-6).epsilon(1e-9));
  CHECK(h[3] == Approx(0).margin(1e-12));
  CHECK(exec::sleeping_stream_handoffs(plan, t, 2e-3).empty());  // a poll longer than every wait: none slept
  std::reverse(t.events.begin(), t.events.end());                // events are matched by op id, not position
  CHECK(exec::sleeping_stream_handoffs(plan, t, 200e-6) == h);

  // The trimmed mean drops the lowest and highest tenth: 1..8 and 20 us and a preempted 1 ms give the mean of 2..8
  // and 20 us, 6.875 us (their median would be 5.5 us).
  std::vector<double> v = {1e-3, 20e-6};
  for (int i = 1; i <= 8; ++i) v.push_back(i * 1e-6);
  CHECK(exec::trimmed_mean(v) == Approx(6.875e-6).epsilon(1e-12));
  CHECK(exec::trimmed_mean({3e-6, 5e-6}) == Approx(4e-6));  // under ten: nothing dropped
  CHECK(exec::trimmed_mean({}) == 0);

  exec::HostDeviceProbe p;
  p.stream_spin_s = 200e-6;
  p.stream_wake_s = 2e-6;  // a session's figure
  auto both = exec::with_run_wakes(p, v, {30e-6, 40e-6, 50e-6, 60e-6, 70e-6}, "steps 1-9");
  CHECK(both.stream_wake_s == Approx(6.875e-6).epsilon(1e-12));
  CHECK(both.pool_wake_s == Approx(50e-6).epsilon(1e-12));
  CHECK(both.wakes_from.find("10 hand-offs to a sleeping stream and of 5 wake-ups of CPU Adam's pool workers in "
                             "steps 1-9") != std::string::npos);
  // Fewer than kMinWakeSamples leave a figure as it was.
  auto few = exec::with_run_wakes(p, {1e-6, 2e-6, 3e-6, 4e-6}, {9e-6}, "x");
  CHECK(few.stream_wake_s == 2e-6);
  CHECK(few.pool_wake_s == 0);
  CHECK(few.wakes_from == p.wakes_from);
  auto pool_only = exec::with_run_wakes(p, {}, v, "x");
  CHECK(pool_only.stream_wake_s == 2e-6);
  CHECK(pool_only.pool_wake_s == Approx(6.875e-6).epsilon(1e-12));
  CHECK(pool_only.wakes_from.rfind("the trimmed mean of 10 wake-ups", 0) == 0);
  // Into the profile, said in its source; without a pool figure the key stays absent (the stream's stands in).
  const core::Hardware h1 = exec::apply_host_probe(*core::load_hardware("ci-2core"), both);
  REQUIRE(h1.measured.cpu_pool_wake_us.has_value());
  CHECK(*h1.measured.cpu_pool_wake_us == Approx(50));
  CHECK(*h1.measured.stream_wake_latency_us == Approx(6.875));
  CHECK(h1.source.find("pool workers asleep join 50 us late (the trimmed mean of 10") != std::string::npos);
  CHECK_FALSE(exec::apply_host_probe(*core::load_hardware("ci-2core"), p).measured.cpu_pool_wake_us.has_value());
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
  const auto v = exec::run_swaps(plan, t);
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
  exec::HostDeviceProbe p;
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
  std::vector<exec::RunSwap> run;
  for (int i = 0; i < 10; ++i) run.push_back({true, 1000000, 2 * 1100e-6, 0.1, 0});
  run.push_back({true, 1000000, 100 * 1100e-6, 0.1, 0});
  for (int i = 0; i < 10; ++i) run.push_back({false, 1000000, 0.5 * 550e-6, 0.1, 0});
  for (int i = 0; i < 6; ++i) run.push_back({false, 1000000, 0.5 * 550e-6 + 3 * 200e-6, 0.1, 30e-3});
  const auto q = exec::with_run_swaps(p, base, run, "steps 1-9");
  CHECK(q.swap_scale_read == Approx(2).epsilon(1e-9));
  CHECK(q.swap_scale_write == Approx(0.5).epsilon(1e-9));
  CHECK(q.swap_scale_idle == Approx(3).epsilon(1e-9));
  CHECK(q.swaps_from ==
        "scaled to the run's own swaps that ran alone in steps 1-9: reads x2.00 (11 swaps), writes "
        "x0.50 (10 swaps), the extra after an idle path x3.00 (6 swaps)");
  const core::Hardware h = exec::apply_host_probe(base, q);
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
  const auto few = exec::with_run_swaps(p, base, {run.begin(), run.begin() + 4}, "x");
  CHECK(few.swap_scale_read == 1);
  CHECK(few.swaps_from.find("reads as measured (4 swaps), writes as measured (0 swaps)") != std::string::npos);
  exec::HostDeviceProbe none;
  CHECK(exec::with_run_swaps(none, base, run, "x").swaps_from.empty());
  CHECK(exec::apply_host_probe(base, p).measured.nvme_read_latency_us == Approx(100));
}

TEST_CASE("the host device's probe times the optimizer's CPU passes at the run's group, into the profile",
          "[exec][probe]") {
  const HostProbeCase k = host_probe_case(R"({"stage": 2, "offload_optimizer": {"device": "cpu"}})");
  const core::ModelSpec* m = &k.m;
  const core::Hardware* hw = &k.hw;
  const core::Strategy* s = &k.s;
  const core::Plan& plan = k.plan;
  int64_t group = 0;
  for (const auto& op : plan.ops)
    if (op.kind == core::OpKind::adam_cpu) group = std::max(group, op.elements);
  REQUIRE(group > 0);
  auto hp = exec::probe_host_device(*m, *s, plan, nullptr, 2);
  REQUIRE(hp.ok());
  CHECK(hp->opt_elements == group);
  CHECK(hp->opt_threads == 2);
  CHECK(hp->unscale_bytes == 8 * group);  // fp32 gradients read and written
  CHECK(hp->cast_bytes == 6 * group);     // fp32 master read, bf16 written
  // Each pass takes time, and none streams faster than 10 TB/s or runs Adam faster than 1e12 params/s.
  CHECK(hp->unscale_s > static_cast<double>(hp->unscale_bytes) / 1e13);
  CHECK(hp->cast_s > static_cast<double>(hp->cast_bytes) / 1e13);
  CHECK(hp->adam_s > static_cast<double>(group) / 1e12);
  const core::Hardware h = exec::apply_host_probe(*hw, *hp);
  REQUIRE(h.measured.cpu_adam_params_per_s.has_value());
  CHECK(*h.measured.cpu_adam_params_per_s == Approx(static_cast<double>(group) / hp->adam_s));
  REQUIRE(h.measured.cpu_adam_threads.has_value());
  CHECK(*h.measured.cpu_adam_threads == 2);
  // Each pass its own rate: the unscale reads and writes 8 B per element, the bf16 cast reads 4 and writes 2.
  REQUIRE(h.measured.cpu_pass_GBps.has_value());
  CHECK(*h.measured.cpu_pass_GBps == Approx(8.0 * static_cast<double>(group) / hp->unscale_s / 1e9));
  REQUIRE(h.measured.cpu_cast_GBps.has_value());
  CHECK(*h.measured.cpu_cast_GBps == Approx(6.0 * static_cast<double>(group) / hp->cast_s / 1e9));
  CHECK(h.source.find("CPU Adam") != std::string::npos);
  // The simulator prices the passes with them: the unscale inside adam_cpu, the cast op its bytes at its own rate.
  const core::CostModel c = core::cost_model_for(h, s->model_dtype());
  CHECK(c.dram_Bps == Approx(*h.measured.cpu_pass_GBps * 1e9));
  CHECK(c.cast_Bps == Approx(*h.measured.cpu_cast_GBps * 1e9));
  core::Op cast;
  cast.kind = core::OpKind::cast_cpu;
  cast.bytes = 6 * group;
  CHECK(core::compute_time_s(c, cast) == Approx(hp->cast_s));
  CHECK(c.cpu_adam_params_per_s == Approx(*h.measured.cpu_adam_params_per_s));
  // Round trip through the profile file.
  const std::string p = (fs::temp_directory_path() / "zs_host_probe_opt.json").string();
  REQUIRE(core::write_file_atomic(p, core::hardware_to_json(h)).ok());
  auto back = core::load_hardware_file(p);
  INFO((back.ok() ? std::string() : back.error().message));
  REQUIRE(back.ok());
  REQUIRE(back->measured.cpu_pass_GBps.has_value());
  CHECK(*back->measured.cpu_pass_GBps == Approx(*h.measured.cpu_pass_GBps).epsilon(1e-12));
  REQUIRE(back->measured.cpu_cast_GBps.has_value());
  CHECK(*back->measured.cpu_cast_GBps == Approx(*h.measured.cpu_cast_GBps).epsilon(1e-12));
  fs::remove(p);

  // Sampled through a run: a timer given the Plan times the three passes after the modules, at the same group on
  // the same threads, and each is the median over the passes (here x1, x4, x2 of a real pass: x2).
  auto timer = exec::ModuleTimer::create(*m, *s, &plan, 2);
  REQUIRE(timer.ok());
  const exec::ModulePass real = (*timer)->pass();
  CHECK(real.unscale_s > static_cast<double>(hp->unscale_bytes) / 1e13);
  CHECK(real.adam_s > static_cast<double>(group) / 1e12);
  CHECK(real.cast_s > static_cast<double>(hp->cast_bytes) / 1e13);
  auto times = [&](double f) {
    exec::ModulePass x = real;
    x.unscale_s *= f;
    x.adam_s *= f;
    x.cast_s *= f;
    return x;
  };
  auto sampled = exec::with_module_times(*hp, {times(1), times(4), times(2)}, "three passes");
  REQUIRE(sampled.ok());
  CHECK(sampled->unscale_s == Approx(2 * real.unscale_s).epsilon(1e-12));
  CHECK(sampled->adam_s == Approx(2 * real.adam_s).epsilon(1e-12));
  CHECK(sampled->cast_s == Approx(2 * real.cast_s).epsilon(1e-12));
  CHECK(exec::apply_host_probe(*hw, *sampled).source.find("the optimizer's CPU passes: the same passes; the swaps") !=
        std::string::npos);
  // Passes without them (a timer not given the Plan) leave the sessions' figures.
  auto plain_timer = exec::ModuleTimer::create(*m, *s);
  REQUIRE(plain_timer.ok());
  const exec::ModulePass plain = (*plain_timer)->pass();
  CHECK(plain.adam_s == 0);
  auto kept = exec::with_module_times(*hp, {plain, times(3)}, "two passes");
  REQUIRE(kept.ok());
  CHECK(kept->adam_s == hp->adam_s);
  CHECK(kept->opt_times.empty());
  CHECK(exec::apply_host_probe(*hw, *kept).source.find("the optimizer's CPU passes and swaps: the mean") !=
        std::string::npos);

  // A second session: each pass the mean of the two sessions' times (they drift with the machine, the run lies
  // between them), not the faster. With the first session 1000x slower the mean lies within (1/2, 1) of it; the
  // faster session would stand near a thousandth. (1000x, not 10x: a second session slowed 13x by a busy disk or
  // CPU, as under `ctest -j2`, put a 10x mean past the slowed figure once.)
  exec::HostDeviceProbe slow = *hp;
  slow.unscale_s *= 1000;
  slow.adam_s *= 1000;
  slow.cast_s *= 1000;
  auto hp2 = exec::probe_host_device(*m, *s, plan, &slow, 2);
  REQUIRE(hp2.ok());
  for (auto f : {&exec::HostDeviceProbe::unscale_s, &exec::HostDeviceProbe::adam_s, &exec::HostDeviceProbe::cast_s}) {
    CHECK((*hp2).*f > 0.5 * slow.*f);
    CHECK((*hp2).*f < slow.*f);
  }
  exec::HostDeviceProbe other = *hp;
  other.opt_elements += 1;
  auto bad = exec::probe_host_device(*m, *s, plan, &other, 2);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("optimizer group") != std::string::npos);

  // Optimizer on the GPU: no CPU passes, and the probe's CPU Adam figure stands.
  const HostProbeCase k0 = host_probe_case(R"({"stage": 2})");
  auto hp0 = exec::probe_host_device(k0.m, k0.s, k0.plan);
  REQUIRE(hp0.ok());
  CHECK(hp0->opt_elements == 0);
  CHECK_FALSE(exec::apply_host_probe(*hw, *hp0).measured.cpu_pass_GBps.has_value());
  CHECK_FALSE(exec::apply_host_probe(*hw, *hp0).measured.cpu_cast_GBps.has_value());
}

TEST_CASE("the host device's probe times the run's NVMe swaps at the ds_config's aio settings, into the profile",
          "[exec][probe][nvme]") {
  const fs::path dir = fs::temp_directory_path() / ("zs_host_probe_nvme_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string p = dir.string();
  const HostProbeCase k = host_probe_case(
      R"({"stage": 3, "stage3_param_persistence_threshold": 0, "offload_optimizer": {"device": "nvme", "nvme_path": ")" +
      p + R"("}, "offload_param": {"device": "nvme", "nvme_path": ")" + p +
      R"(", "buffer_size": 65536}}, "aio": {"block_size": 262144, "queue_depth": 16})");
  int64_t lo = 0, hi = 0;
  for (const auto& op : k.plan.ops)
    if ((op.kind == core::OpKind::nvme_read || op.kind == core::OpKind::nvme_write) && op.bytes > 0) {
      lo = lo == 0 ? op.bytes : std::min(lo, op.bytes);
      hi = std::max(hi, op.bytes);
    }
  REQUIRE(hi > 0);
  auto hp = exec::probe_host_device(k.m, k.s, k.plan);
  REQUIRE(hp.ok());
  CHECK(hp->nvme_large == hi);
  CHECK(hp->nvme_small == (hi < 2 * lo ? std::max<int64_t>(4096, hi / 8) : lo));
  CHECK(hp->aio_block_size == 262144);
  CHECK(hp->aio_queue_depth == 16);
  for (int hot = 0; hot < 2; ++hot) {
    CHECK(hp->read_small_s[hot] > 0);
    CHECK(hp->read_large_s[hot] > 0);
    CHECK(hp->write_small_s[hot] > 0);
    CHECK(hp->write_large_s[hot] > 0);
  }
  const core::Hardware h = exec::apply_host_probe(k.hw, *hp);
  const exec::SwapLine r =
      exec::fit_swap_line(hp->nvme_small, hp->read_small_s[0], hp->nvme_large, hp->read_large_s[0]);
  REQUIRE(h.measured.nvme_read_GBps.has_value());
  CHECK(*h.measured.nvme_read_GBps == Approx(r.rate_Bps / 1e9));
  CHECK(*h.measured.nvme_read_latency_us == Approx(r.latency_s * 1e6).margin(1e-9));
  CHECK(h.measured.nvme_hot_write_GBps.has_value());
  CHECK(*h.measured.nvme_settle_s == exec::kNvmeSettleS);
  CHECK(*h.measured.aio_block_size == 262144);
  CHECK(*h.measured.aio_queue_depth == 16);
  // The line goes through both medians, or, where they cross, has the large swap's rate.
  const double big = static_cast<double>(hp->nvme_large);
  CHECK((r.latency_s + big / r.rate_Bps == Approx(hp->read_large_s[0]).epsilon(1e-9) ||
         r.rate_Bps == Approx(big / hp->read_large_s[0]).epsilon(1e-9)));
  CHECK(h.source.find("NVMe swaps of") != std::string::npos);
  // The first large swap after the path rested: three idle times, extras that never fall, into the profile.
  REQUIRE(hp->nvme_idle.size() == 3);
  CHECK(hp->nvme_idle[0].first == Approx(3e-3));
  CHECK(hp->nvme_idle[2].first == Approx(0.3));
  CHECK(hp->nvme_idle[0].second >= 0);
  CHECK(hp->nvme_idle[1].second >= hp->nvme_idle[0].second);
  CHECK(hp->nvme_idle[2].second >= hp->nvme_idle[1].second);
  CHECK(hp->nvme_idle[2].second < 1.0);
  REQUIRE(h.measured.nvme_idle_wake.size() == 3);
  CHECK(h.measured.nvme_idle_wake[1].idle_ms == Approx(30));
  CHECK(h.measured.nvme_idle_wake[2].extra_us == Approx(hp->nvme_idle[2].second * 1e6));
  CHECK(h.source.find("the first after an idle path") != std::string::npos);
  // A second session: each swap the mean of the two sessions' medians (the disk drifts, the run lies between
  // them), not the faster. With the first session 1000x slower the mean lies within (1/2, 1) of it (1000x: a
  // second session's write at once once ran 13x the first's under `ctest -j2`, past a 10x slowed figure).
  exec::HostDeviceProbe slow = *hp;
  for (int hot = 0; hot < 2; ++hot)
    for (double* t :
         {&slow.read_small_s[hot], &slow.read_large_s[hot], &slow.write_small_s[hot], &slow.write_large_s[hot]})
      *t *= 1000;
  auto hp2 = exec::probe_host_device(k.m, k.s, k.plan, &slow);
  REQUIRE(hp2.ok());
  CHECK(hp2->sessions == 2);
  for (int hot = 0; hot < 2; ++hot) {
    INFO("hot " << hot);
    CHECK(hp2->read_large_s[hot] > 0.5 * slow.read_large_s[hot]);
    CHECK(hp2->read_large_s[hot] < slow.read_large_s[hot]);
    CHECK(hp2->read_small_s[hot] > 0.5 * slow.read_small_s[hot]);
    CHECK(hp2->write_large_s[hot] > 0.5 * slow.write_large_s[hot]);
    CHECK(hp2->write_large_s[hot] < slow.write_large_s[hot]);
    CHECK(hp2->write_small_s[hot] > 0.5 * slow.write_small_s[hot]);
  }
  // The probe leaves no file behind.
  CHECK(fs::is_empty(dir));
  fs::remove_all(dir);

  // An unusable path is an I/O error naming it.
  const HostProbeCase bad = host_probe_case(
      R"({"stage": 3, "offload_optimizer": {"device": "nvme", "nvme_path": "/nonexistent/zs"}, "offload_param": {"device": "nvme", "nvme_path": "/nonexistent/zs"}})");
  auto e = exec::probe_host_device(bad.m, bad.s, bad.plan);
  REQUIRE_FALSE(e.ok());
  CHECK(e.error().message.find("/nonexistent/zs") != std::string::npos);
}
