// Every shipped model × hardware × DeepSpeed config (the CLI's defaults: nodes and GPUs from the profile,
// the model's sequence length) is planned and, when it fits, simulated and summarised without error.
#include <catch2/catch.hpp>
#include <cmath>

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
        ++simulated;
      }
    }
  }
  INFO(simulated << " simulated, " << infeasible << " do not fit");
  CHECK(failures == 0);
  CHECK(simulated >= 100);
}
