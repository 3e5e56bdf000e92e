#include "sim/predict.h"

namespace zs::sim {

core::Result<Prediction> predict(const core::ModelSpec& m, const core::Hardware& hw, const core::Strategy& s,
                                 core::Schedule schedule, double target_efficiency) {
  core::PlanOptions po;
  po.schedule = schedule;
  return predict_plan(core::make_plan(m, hw, s, po), m, hw, s, target_efficiency);
}

core::Result<Prediction> predict_plan(core::Plan plan, const core::ModelSpec& m, const core::Hardware& hw,
                                      const core::Strategy& s, double target_efficiency) {
  Prediction p;
  p.plan = std::move(plan);
  if (!p.plan.feasible) return p;
  p.cost = core::cost_model_for_run(hw, m, s);
  SimOptions so;
  so.nodes = s.run.nodes;
  so.gpus_per_node = s.run.gpus_per_node;
  auto r = simulate(p.plan, p.cost, so);
  if (!r) return r.error();
  p.result = std::move(*r);
  SummaryOptions sopt;
  sopt.samples_per_step = s.train_batch_size;
  sopt.target_efficiency = target_efficiency;
  p.summary = summarize(p.plan, p.result, sopt);
  p.breakdown = breakdown(p.plan, p.result);
  return p;
}

}  // namespace zs::sim
