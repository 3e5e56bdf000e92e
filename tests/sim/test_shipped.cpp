// Every shipped model × hardware × DeepSpeed config (the CLI's defaults: nodes and GPUs from the profile,
// the model's sequence length) is planned and, when it fits, simulated and summarised without error, and its
// simulated memory timeline stays within the plan's peaks (the plan's deps keep allocations in program order).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>

#include "core/cost_model.h"
#include "core/hardware.h"
#include "core/model.h"
#include "core/paths.h"
#include "core/plan.h"
#include "core/strategy.h"
#include "sim/summary.h"

using namespace zs;

TEST_CASE("simulate runs on every shipped model x hardware x config", "[sim][shipped]") {
  const auto models = core::shipped_inputs(core::InputKind::model);
  const auto hardware = core::shipped_inputs(core::InputKind::hardware);
  const auto configs = core::shipped_inputs(core::InputKind::deepspeed);
  REQUIRE(models.size() >= 10);
  REQUIRE(hardware.size() >= 5);
  REQUIRE(configs.size() >= 6);
  int simulated = 0, infeasible = 0, failures = 0;
  double worst = 0;  // largest simulated peak / plan peak over tiers and combinations
  std::string worst_case;
  for (const auto& mp : models) {
    auto m = core::load_model(mp);
    REQUIRE(m.ok());
    for (const auto& hp : hardware) {
      auto h = core::load_hardware(hp);
      REQUIRE(h.ok());
      for (const auto& cp : configs) {
        core::RunSettings run;
        run.nodes = h->nodes;
        run.gpus_per_node = h->gpus_per_node;
        run.seq_len = m->max_seq_len;
        run.hidden = m->hidden;
        auto s = core::load_strategy(cp, run);
        REQUIRE(s.ok());
        const core::Plan plan = core::make_plan(*m, *h, *s, {});
        if (!plan.feasible) {
          ++infeasible;
          continue;
        }
        core::CostModel cost = core::cost_model_for(*h, s->model_dtype());
        core::apply_model_shapes(cost, *m, s->micro_batch_per_gpu * s->run.seq_len);
        sim::SimOptions o;
        o.nodes = run.nodes;
        o.gpus_per_node = run.gpus_per_node;
        auto r = sim::simulate(plan, cost, o);
        const std::string what = mp + " x " + hp + " x " + cp;
        if (!r.ok()) {
          ++failures;
          FAIL_CHECK(what << ": " << r.error().message);
          continue;
        }
        sim::SummaryOptions so;
        so.samples_per_step = s->train_batch_size;
        const sim::Summary sum = sim::summarize(plan, *r, so);
        const bool ok =
            sum.step_time_s > 0 && std::isfinite(sum.step_time_s) &&
            std::abs(sum.forward_s + sum.backward_s + sum.optimizer_s - sum.step_time_s) <= 1e-9 * sum.step_time_s &&
            sum.tokens_per_s > 0 && sum.mfu > 0 && sum.mfu < 1 && !sum.bottleneck.empty() &&
            r->trace.events.size() == plan.ops.size() * static_cast<size_t>(r->topology.shape.local_ranks);
        if (!ok) {
          ++failures;
          FAIL_CHECK(what << ": step " << sum.step_time_s << " s, MFU " << sum.mfu << ", bottleneck '" << sum.bottleneck
                          << "'");
        }
        // mem_delta lands when an op completes; the plan's ledger is in program order. 1% slack for frees that
        // finish on a copy stream after later compute (cpu_checkpointing's D2H).
        for (size_t k = 0; k < 3; ++k) {
          const double plan_peak = static_cast<double>(plan.peak_bytes[k]);
          const double sim_peak = static_cast<double>(r->trace.peak_bytes[k]);
          if (plan_peak > 0 && sim_peak / plan_peak > worst) {
            worst = sim_peak / plan_peak;
            worst_case = what + " tier " + std::to_string(k);
          }
          INFO(what << " tier " << k << ": simulated peak " << sim_peak << " B, plan peak " << plan_peak << " B");
          CHECK(sim_peak <= 1.01 * plan_peak);
        }
        ++simulated;
      }
    }
  }
  INFO(simulated << " simulated, " << infeasible << " do not fit");
  std::printf("simulated vs plan peak: %d combinations, worst ratio %.4f (%s)\n", simulated, worst, worst_case.c_str());
  CHECK(failures == 0);
  CHECK(simulated >= 100);
}

TEST_CASE("100B ZeRO-Infinity on one GPU: the simulated GPU timeline stays within the plan's peak", "[sim][shipped]") {
  // zerosim simulate --model gpt-100b --hardware dgx2 --gpus-per-node 1 --ds-config zero3-offload-nvme: before
  // prefetches waited for the module before theirs, they ran ~150 modules ahead (94.5 GiB simulated vs 10.3).
  auto m = core::load_model("gpt-100b");
  auto h = core::load_hardware("dgx2");
  REQUIRE(m.ok());
  REQUIRE(h.ok());
  core::RunSettings run;
  run.gpus_per_node = 1;
  run.seq_len = m->max_seq_len;
  run.hidden = m->hidden;
  auto s = core::load_ds_config(*core::resolve_input("zero3-offload-nvme", core::InputKind::deepspeed), run);
  REQUIRE(s.ok());
  const core::Plan plan = core::make_plan(*m, *h, *s, {});
  REQUIRE(plan.feasible);
  core::CostModel cost = core::cost_model_for(*h, s->model_dtype());
  core::apply_model_shapes(cost, *m, s->micro_batch_per_gpu * s->run.seq_len);
  auto r = sim::simulate(plan, cost, {});
  REQUIRE(r.ok());
  for (size_t k = 0; k < 3; ++k) {
    INFO("tier " << k);
    CHECK(r->trace.peak_bytes[k] <= plan.peak_bytes[k]);
  }
  CHECK(r->trace.peak_bytes[0] > plan.static_bytes[0]);  // the timeline did gather parameters
}
