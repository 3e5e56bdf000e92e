#include "gui/models/prediction.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#ifdef ZEROSIM_GUI_WITH_SIM
#include "core/cost_model.h"
#include "sim/advice.h"
#include "sim/predict.h"
#include "sim/simulator.h"
#include "sim/summary.h"
#endif

namespace zs::gui {

#ifdef ZEROSIM_GUI_WITH_SIM
struct Prediction::SimContext {
  sim::SimResult result;  // topology and cost model (the trace itself moved into Prediction::trace)
  int64_t samples_per_step = 0;
};
#else
struct Prediction::SimContext {};
#endif

namespace {

#ifdef ZEROSIM_GUI_WITH_SIM
void fill_from_summary(Prediction& p, const sim::Summary& s) {
  p.step_time_s = s.step_time_s;
  p.forward_s = s.forward_s;
  p.backward_s = s.backward_s;
  p.optimizer_s = s.optimizer_s;
  p.tokens_per_s = s.tokens_per_s;
  p.samples_per_s = s.samples_per_s;
  p.model_tflops_per_gpu = s.model_tflops_per_gpu;
  p.hardware_tflops_per_gpu = s.hardware_tflops_per_gpu;
  p.mfu = s.mfu;
  p.gpu_efficiency = s.gpu_efficiency;
  p.bottleneck = s.bottleneck;
  p.bottleneck_key = s.bottleneck_key;
  p.target_efficiency = s.target_efficiency;
  p.utilization = s.utilization;
  p.peak_bytes = s.peak_bytes;
  p.exposed.clear();
  for (const auto& x : s.exposed) p.exposed.push_back({x.key, x.label, x.active_s, x.exposed_s});
  p.required.clear();
  for (const auto& q : s.required) p.required.push_back({q.label, q.need_GBps_per_gpu, q.has_GBps_per_gpu, q.short_});
}
#endif

void fill_from_breakdown(Prediction& p, const sim::Breakdown& b, const std::vector<sim::Advice>& advice) {
  char t[320];
  std::snprintf(t, sizeof t, "%lld per rank x %lld ranks (%lld running), %.0f GB/s per core; states on %lld of %lld NUMA nodes",
                static_cast<long long>(b.threads.per_rank), static_cast<long long>(b.threads.ranks_per_node),
                static_cast<long long>(b.threads.active), b.threads.core_GBps,
                static_cast<long long>(b.threads.numa_home), static_cast<long long>(b.threads.numa_nodes));
  p.cpu_threads = b.threads.active > 0 ? std::string(t) + " — " + b.threads.why : std::string();
  auto part = [](const sim::StepPart& x) {
    return StepPart{x.key, x.label, x.name, x.busy_s, x.exposed_s, x.rate_Bps / 1e9,
                    x.elements > 0 && x.busy_s > 0 ? x.elements / x.busy_s / 1e9 : 0, x.ops};
  };
  p.passes.clear();
  p.copies.clear();
  p.advice.clear();
  for (const auto& x : b.passes) p.passes.push_back(part(x));
  for (const auto& x : b.copies) p.copies.push_back(part(x));
  for (const auto& a : advice) p.advice.push_back({a.change, a.hides, a.step_time_s, a.saved_s});
}

void report(ProgressFn fn, void* ctx, double f, const char* what) {
  if (fn) fn(ctx, f, what);
}

}  // namespace

bool simulator_available() {
#ifdef ZEROSIM_GUI_WITH_SIM
  return true;
#else
  return false;
#endif
}

core::Result<Prediction> predict(const Scenario& s, const std::atomic<bool>* cancel, ProgressFn progress, void* ctx,
                                 bool with_advice) {
  auto cancelled = [&] { return cancel && cancel->load(); };
  report(progress, ctx, 0.0, "planning");
  core::PlanOptions po;
  po.schedule = s.schedule;
  auto plan = std::make_shared<core::Plan>(core::make_plan(s.model, s.hardware, s.strategy, po));
  Prediction p;
  p.plan = plan;
  p.ops = static_cast<int64_t>(plan->ops.size());
  p.capacity_bytes = plan->capacity_bytes;
  p.notes = plan->notes;
  p.peak_bytes = plan->peak_bytes;
  if (!plan->feasible) {
    p.feasible = false;
    p.infeasible_reason = plan->infeasible_reason;
    return p;
  }
  if (cancelled()) return core::Error{core::ErrorKind::internal, "cancelled"};
#ifdef ZEROSIM_GUI_WITH_SIM
  report(progress, ctx, 0.2, "simulating");
  auto pred = sim::predict_plan(*plan, s.model, s.hardware, s.strategy);
  if (!pred) return pred.error();
  if (cancelled()) return core::Error{core::ErrorKind::internal, "cancelled"};
  core::Result<std::vector<sim::Advice>> advice = std::vector<sim::Advice>{};
  if (with_advice) {
    report(progress, ctx, 0.8, "simulating what would hide the exposed time");
    advice = sim::advise(s.model, s.hardware, s.strategy, s.schedule, *pred);
    if (!advice) return advice.error();
    if (cancelled()) return core::Error{core::ErrorKind::internal, "cancelled"};
  }
  report(progress, ctx, 0.95, "summarising");
  auto r = &pred->result;
  fill_from_summary(p, pred->summary);
  fill_from_breakdown(p, pred->breakdown, *advice);
  p.simulated_gpus = r->topology.shape.local_ranks;
  p.wall_s = r->wall_s;
  p.trace = std::move(r->trace);
  auto sc = std::make_shared<Prediction::SimContext>();
  sc->result = std::move(*r);
  sc->result.trace = core::Trace{};  // the copy lives in p.trace
  sc->samples_per_step = s.strategy.train_batch_size;
  p.sim = std::move(sc);
  report(progress, ctx, 1.0, "done");
  return p;
#else
  return core::Error{core::ErrorKind::unsupported,
                     "this build has no simulator (SimGrid was not found at configure time): the Explore tab works, "
                     "simulation needs libsimgrid-dev"};
#endif
}

core::Result<Prediction> measured(const Prediction& predicted, const core::Trace& trace) {
  if (!predicted.plan) return core::bad_input("no prediction to compare with: simulate first");
  const core::Plan& plan = *predicted.plan;
  std::vector<char> known(plan.ops.size() + 1, 0);
  uint32_t max_id = 0;
  for (const auto& op : plan.ops) max_id = std::max(max_id, op.id);
  known.assign(static_cast<size_t>(max_id) + 1, 0);
  for (const auto& op : plan.ops) known[op.id] = 1;
  for (const auto& e : trace.events)
    if (e.op >= known.size() || !known[e.op])
      return core::bad_input("the trace's op " + std::to_string(e.op) +
                             " is not in the current plan: it was recorded for another configuration");
  Prediction m;
  m.plan = predicted.plan;
  m.capacity_bytes = predicted.capacity_bytes;
  m.ops = predicted.ops;
  m.trace = trace;
#ifdef ZEROSIM_GUI_WITH_SIM
  if (!predicted.sim) return core::bad_input("the prediction has no simulator context");
  sim::SimResult r = predicted.sim->result;
  r.trace = trace;
  sim::SummaryOptions sopt;
  sopt.samples_per_step = predicted.sim->samples_per_step;
  sopt.target_efficiency = predicted.target_efficiency;
  fill_from_summary(m, sim::summarize(plan, r, sopt));
  m.peak_bytes = trace.peak_bytes;
  m.simulated_gpus = predicted.simulated_gpus;
  return m;
#else
  return core::Error{core::ErrorKind::unsupported, "this build has no simulator"};
#endif
}

std::array<double, 3> phase_spans(const core::Trace& t) {
  std::array<double, 3> lo, hi, out{};
  lo.fill(std::numeric_limits<double>::infinity());
  hi.fill(-std::numeric_limits<double>::infinity());
  for (const auto& e : t.events) {
    if (e.rank != 0) continue;
    const auto k = static_cast<size_t>(e.phase);
    lo[k] = std::min(lo[k], e.start_s);
    hi[k] = std::max(hi[k], e.end_s);
  }
  for (size_t k = 0; k < 3; ++k) out[k] = hi[k] > lo[k] ? hi[k] - lo[k] : 0;
  return out;
}

}  // namespace zs::gui
