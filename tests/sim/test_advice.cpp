// sim/advice.cpp: an offloaded run with its CPU Adam exposed gets the schedules that hide it, each simulated, and
// a rank with fewer threads than its share of the cores gets the launcher's core binding.
#include <catch2/catch.hpp>

#include "sim/advice.h"

using namespace zs;

namespace {

core::Strategy offload(const core::ModelSpec& m, core::Launcher launcher) {
  core::RunSettings run;
  run.gpus_per_node = 8;
  run.seq_len = 1024;
  run.hidden = m.hidden;
  run.launch.launcher = launcher;
  auto s = core::parse_ds_config_text(
      R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
          "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}})",
      "inline", run);
  REQUIRE(s.ok());
  return *s;
}

const sim::Advice* find(const std::vector<sim::Advice>& v, const std::string& prefix) {
  for (const auto& a : v)
    if (a.change.rfind(prefix, 0) == 0) return &a;
  return nullptr;
}

}  // namespace

TEST_CASE("advice: other schedules and core binding, each simulated, best first", "[advice]") {
  auto m = core::load_model("gpt2-1.5b");
  auto hw = core::load_hardware("dgx-a100-80gb");
  REQUIRE(m.ok());
  REQUIRE(hw.ok());
  const core::Strategy s = offload(*m, core::Launcher::torchrun);  // one thread per rank
  auto base = sim::predict(*m, *hw, s, core::Schedule::deepspeed);
  REQUIRE(base.ok());
  REQUIRE(base->plan.feasible);
  auto a = sim::advise(*m, *hw, s, core::Schedule::deepspeed, *base);
  REQUIRE(a.ok());
  REQUIRE(!a->empty());
  const sim::Advice* dpu = find(*a, "--schedule dpu");
  const sim::Advice* bind = find(*a, "--launcher deepspeed --bind-cores-to-rank");
  REQUIRE(dpu);
  REQUIRE(bind);
  CHECK(bind->change.find("(16 threads per rank)") != std::string::npos);  // 128 cores over 8 ranks
  for (const auto& x : *a) CHECK(x.saved_s >= 0.01 * base->summary.step_time_s);
  for (size_t i = 1; i < a->size(); ++i) CHECK((*a)[i - 1].saved_s >= (*a)[i].saved_s);
  // The alternative really is that run: simulated on its own it gives the same step.
  auto dpu_run = sim::predict(*m, *hw, s, core::Schedule::dpu);
  REQUIRE(dpu_run.ok());
  CHECK(dpu->step_time_s == Approx(dpu_run->summary.step_time_s));
  // No offload: nothing to advise.
  core::Strategy none = s;
  none.zero.offload_optimizer.device = core::OffloadDevice::none;
  auto plain = sim::predict(*m, *hw, none, core::Schedule::deepspeed);
  REQUIRE(plain.ok());
  auto quiet = sim::advise(*m, *hw, none, core::Schedule::deepspeed, *plain);
  REQUIRE(quiet.ok());
  CHECK(quiet->empty());
}
