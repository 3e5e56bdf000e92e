// Predict: one training step of (model, hardware, ds_config, schedule) from inputs to a summary — make_plan, the
// run's cost model (core::cost_model_for_run), simulate, summarize, and the breakdown of its passes and copies.
// The recipe `simulate`, the advice's alternatives and the validation share.
//   Result<Prediction> p = predict(model, hw, strategy, Schedule::deepspeed);
//   if (p->plan.feasible) std::cout << p->summary.step_time_s;
#pragma once

#include "core/cost_model.h"
#include "core/plan.h"
#include "core/status.h"
#include "sim/breakdown.h"
#include "sim/simulator.h"
#include "sim/summary.h"

namespace zs::sim {

struct Prediction {
  core::Plan plan;     // feasible false: the rest is empty (the plan does not fit: a result, not an error)
  core::CostModel cost;
  SimResult result;
  Summary summary;
  Breakdown breakdown;
};

core::Result<Prediction> predict(const core::ModelSpec& m, const core::Hardware& hw, const core::Strategy& s,
                                 core::Schedule schedule, double target_efficiency = 0.9);
// The same from a plan already made of (m, hw, s) (the GUI plans first, to say "does not fit" without the simulator).
core::Result<Prediction> predict_plan(core::Plan plan, const core::ModelSpec& m, const core::Hardware& hw,
                                      const core::Strategy& s, double target_efficiency = 0.9);

}  // namespace zs::sim
