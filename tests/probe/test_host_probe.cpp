// The host device's probe (probe/host_probe.h): module rates, per-role scales, the passes sampled through a run,
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
#include "probe/host_probe.h"
#include "probe/probe.h"

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

}  // namespace

TEST_CASE("the host device's probe: rates from the module forwards, one backward/forward ratio, into the profile",
          "[exec][probe]") {
  const HostProbeCase k = host_probe_case(R"({"stage": 2})");
  const core::ModelSpec* m = &k.m;
  const core::Hardware* hw = &k.hw;
  const core::Strategy* s = &k.s;
  const core::Plan& plan = k.plan;
  auto hp = probe::probe_host_device(*m, *s, plan);
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
  const core::Hardware h = probe::apply_host_probe(*hw, *hp);
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
  probe::HostDeviceProbe exact = *hp;
  for (size_t i = 0; i < exact.forward_ops.size(); ++i) {
    exact.forward_s[i] = factor(exact.forward_ops[i].role) * core::compute_time_s(c0, exact.forward_ops[i]);
    exact.backward_s[i] = 2 * factor(exact.forward_ops[i].role) * core::compute_time_s(c0, exact.backward_ops[i]);
  }
  const core::Hardware he = probe::apply_host_probe(*hw, exact);
  REQUIRE(he.measured.module_time_scale.size() == h.measured.module_time_scale.size());
  for (const auto& x : he.measured.module_time_scale) {
    INFO(x.role);
    CHECK(x.forward == Approx(factor(core::module_role_from(x.role))).epsilon(1e-9));
    CHECK(x.backward == Approx(2 * factor(core::module_role_from(x.role))).epsilon(1e-9));
  }
  CHECK(probe::role_scaled_fit_rms(he, exact) < 1e-9);
  CHECK(probe::role_scaled_fit_rms(unscaled, exact) > 0.1);

  // A second session merged with the first: each module's faster time, the rates fitted to those.
  REQUIRE(hp->forward_s.size() == exec::GptModel::create(*m, exec::DType::bf16, 2, 32)->modules().size());
  probe::HostDeviceProbe slow = *hp;  // the first session, as if a neighbour had slowed its GEMMs down 3x
  for (double& t : slow.forward_s) t *= 3;
  for (double& t : slow.backward_s) t *= 3;
  auto hp2 = probe::probe_host_device(*m, *s, plan, &slow);
  REQUIRE(hp2.ok());
  CHECK(hp2->sessions == 2);
  for (size_t i = 0; i < hp2->forward_s.size(); ++i) {
    CHECK(hp2->forward_s[i] <= slow.forward_s[i]);
    CHECK(hp2->backward_s[i] <= slow.backward_s[i]);
  }
  // Within 2x of the first session's rate: the slowed one was outvoted (it alone would give a third).
  CHECK(hp2->gemm_flops_per_s > 0.5 * hp->gemm_flops_per_s);
  CHECK(probe::apply_host_probe(*hw, *hp2).source.find("the faster of 2 sessions") != std::string::npos);
  probe::HostDeviceProbe other = *hp;
  other.forward_s.pop_back();
  auto bad = probe::probe_host_device(*m, *s, plan, &other);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("another model") != std::string::npos);
}

TEST_CASE("module times sampled through a run: the timer's passes, their median per module, the rates refitted",
          "[exec][probe]") {
  const HostProbeCase k = host_probe_case(R"({"stage": 2})");
  auto hp = probe::probe_host_device(k.m, k.s, k.plan);
  REQUIRE(hp.ok());
  auto timer = probe::ModuleTimer::create(k.m, k.s);
  REQUIRE(timer.ok());
  REQUIRE((*timer)->modules() == hp->forward_s.size());
  const probe::ModulePass real = (*timer)->pass();
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
    probe::ModulePass x{hp->forward_s, hp->backward_s};
    for (double& t : x.forward_s) t *= f;
    for (double& t : x.backward_s) t *= f;
    return x;
  };
  auto odd = probe::with_module_times(*hp, {scaled(1), scaled(3), scaled(2)}, "three passes");
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
  auto even = probe::with_module_times(*hp, {scaled(1), scaled(5), scaled(2), scaled(3)}, "four passes");
  REQUIRE(even.ok());
  for (size_t i = 0; i < hp->forward_s.size(); ++i) CHECK(even->forward_s[i] == Approx(2.5 * hp->forward_s[i]));
  // The profile says where its module times came from.
  CHECK(probe::apply_host_probe(k.hw, *odd).source.find("module times: three passes") != std::string::npos);
  // Passes of another model are refused, as is none.
  probe::ModulePass short_pass = real;
  short_pass.backward_s.pop_back();
  auto bad = probe::with_module_times(*hp, {real, short_pass}, "x");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("another model") != std::string::npos);
  CHECK_FALSE(probe::with_module_times(*hp, {}, "x").ok());
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
  auto hp = probe::probe_host_device(*m, *s, plan, nullptr, 2);
  REQUIRE(hp.ok());
  CHECK(hp->opt_elements == group);
  CHECK(hp->opt_threads == 2);
  CHECK(hp->unscale_bytes == 8 * group);  // fp32 gradients read and written
  CHECK(hp->cast_bytes == 6 * group);     // fp32 master read, bf16 written
  // Each pass takes time, and none streams faster than 10 TB/s or runs Adam faster than 1e12 params/s.
  CHECK(hp->unscale_s > static_cast<double>(hp->unscale_bytes) / 1e13);
  CHECK(hp->cast_s > static_cast<double>(hp->cast_bytes) / 1e13);
  CHECK(hp->adam_s > static_cast<double>(group) / 1e12);
  const core::Hardware h = probe::apply_host_probe(*hw, *hp);
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
  auto timer = probe::ModuleTimer::create(*m, *s, &plan, 2);
  REQUIRE(timer.ok());
  const probe::ModulePass real = (*timer)->pass();
  CHECK(real.unscale_s > static_cast<double>(hp->unscale_bytes) / 1e13);
  CHECK(real.adam_s > static_cast<double>(group) / 1e12);
  CHECK(real.cast_s > static_cast<double>(hp->cast_bytes) / 1e13);
  auto times = [&](double f) {
    probe::ModulePass x = real;
    x.unscale_s *= f;
    x.adam_s *= f;
    x.cast_s *= f;
    return x;
  };
  auto sampled = probe::with_module_times(*hp, {times(1), times(4), times(2)}, "three passes");
  REQUIRE(sampled.ok());
  CHECK(sampled->unscale_s == Approx(2 * real.unscale_s).epsilon(1e-12));
  CHECK(sampled->adam_s == Approx(2 * real.adam_s).epsilon(1e-12));
  CHECK(sampled->cast_s == Approx(2 * real.cast_s).epsilon(1e-12));
  CHECK(probe::apply_host_probe(*hw, *sampled).source.find("the optimizer's CPU passes: the same passes; the swaps") !=
        std::string::npos);
  // Passes without them (a timer not given the Plan) leave the sessions' figures.
  auto plain_timer = probe::ModuleTimer::create(*m, *s);
  REQUIRE(plain_timer.ok());
  const probe::ModulePass plain = (*plain_timer)->pass();
  CHECK(plain.adam_s == 0);
  auto kept = probe::with_module_times(*hp, {plain, times(3)}, "two passes");
  REQUIRE(kept.ok());
  CHECK(kept->adam_s == hp->adam_s);
  CHECK(kept->opt_times.empty());
  CHECK(probe::apply_host_probe(*hw, *kept).source.find("the optimizer's CPU passes and swaps: the mean") !=
        std::string::npos);

  // A second session: each pass the mean of the two sessions' times (they drift with the machine, the run lies
  // between them), not the faster. With the first session 1000x slower the mean lies within (1/2, 1) of it; the
  // faster session would stand near a thousandth. (1000x, not 10x: a second session slowed 13x by a busy disk or
  // CPU, as under `ctest -j2`, put a 10x mean past the slowed figure once.)
  probe::HostDeviceProbe slow = *hp;
  slow.unscale_s *= 1000;
  slow.adam_s *= 1000;
  slow.cast_s *= 1000;
  auto hp2 = probe::probe_host_device(*m, *s, plan, &slow, 2);
  REQUIRE(hp2.ok());
  for (auto f :
       {&probe::HostDeviceProbe::unscale_s, &probe::HostDeviceProbe::adam_s, &probe::HostDeviceProbe::cast_s}) {
    CHECK((*hp2).*f > 0.5 * slow.*f);
    CHECK((*hp2).*f < slow.*f);
  }
  probe::HostDeviceProbe other = *hp;
  other.opt_elements += 1;
  auto bad = probe::probe_host_device(*m, *s, plan, &other, 2);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("optimizer group") != std::string::npos);

  // Optimizer on the GPU: no CPU passes, and the probe's CPU Adam figure stands.
  const HostProbeCase k0 = host_probe_case(R"({"stage": 2})");
  auto hp0 = probe::probe_host_device(k0.m, k0.s, k0.plan);
  REQUIRE(hp0.ok());
  CHECK(hp0->opt_elements == 0);
  CHECK_FALSE(probe::apply_host_probe(*hw, *hp0).measured.cpu_pass_GBps.has_value());
  CHECK_FALSE(probe::apply_host_probe(*hw, *hp0).measured.cpu_cast_GBps.has_value());
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
  auto hp = probe::probe_host_device(k.m, k.s, k.plan);
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
  const core::Hardware h = probe::apply_host_probe(k.hw, *hp);
  const probe::SwapLine r =
      probe::fit_swap_line(hp->nvme_small, hp->read_small_s[0], hp->nvme_large, hp->read_large_s[0]);
  REQUIRE(h.measured.nvme_read_GBps.has_value());
  CHECK(*h.measured.nvme_read_GBps == Approx(r.rate_Bps / 1e9));
  CHECK(*h.measured.nvme_read_latency_us == Approx(r.latency_s * 1e6).margin(1e-9));
  CHECK(h.measured.nvme_hot_write_GBps.has_value());
  CHECK(*h.measured.nvme_settle_s == probe::kNvmeSettleS);
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
  probe::HostDeviceProbe slow = *hp;
  for (int hot = 0; hot < 2; ++hot)
    for (double* t :
         {&slow.read_small_s[hot], &slow.read_large_s[hot], &slow.write_small_s[hot], &slow.write_large_s[hot]})
      *t *= 1000;
  auto hp2 = probe::probe_host_device(k.m, k.s, k.plan, &slow);
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
  auto e = probe::probe_host_device(bad.m, bad.s, bad.plan);
  REQUIRE_FALSE(e.ok());
  CHECK(e.error().message.find("/nonexistent/zs") != std::string::npos);
}
