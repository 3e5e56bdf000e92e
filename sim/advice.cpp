#include "sim/advice.h"

#include <algorithm>
#include <cstdio>

namespace zs::sim {
namespace {

double exposed_share(const Summary& s, std::initializer_list<const char*> keys) {
  double e = 0;
  for (const auto& x : s.exposed)
    for (const char* k : keys)
      if (x.key == k) e += x.exposed_s;
  return s.step_time_s > 0 ? e / s.step_time_s : 0;
}

}  // namespace

core::Result<std::vector<Advice>> advise(const core::ModelSpec& m, const core::Hardware& hw, const core::Strategy& s,
                                         core::Schedule schedule, const Prediction& base) {
  std::vector<Advice> out;
  const double step = base.summary.step_time_s;
  const bool offloaded = s.zero.offload_optimizer.device != core::OffloadDevice::none;
  if (!base.plan.feasible || step <= 0 || !offloaded) return out;
  const double cpu_exposed = exposed_share(base.summary, {"cpu_adam", "cpu_cast"});
  const double copy_exposed = exposed_share(base.summary, {"pcie_h2d", "pcie_d2h", "nvme_read", "nvme_write"});
  if (cpu_exposed + copy_exposed < 0.05) return out;
  auto consider = [&](const std::string& change, const std::string& hides, const core::Strategy& alt,
                      core::Schedule sched) -> core::Status {
    auto p = predict(m, hw, alt, sched);
    if (!p) return core::Status{p.error()};
    if (!p->plan.feasible) return core::Status{};
    const double saved = step - p->summary.step_time_s;
    if (saved >= 0.01 * step) out.push_back({change, hides, p->summary.step_time_s, saved});
    return core::Status{};
  };
  for (core::Schedule alt : {core::Schedule::dpu, core::Schedule::overlap}) {
    if (alt == schedule) continue;
    const std::string hides = alt == core::Schedule::dpu
                                  ? "the CPU optimizer step behind the next step's forward and backward (one-step "
                                    "delayed update)"
                                  : "each sub-group's CPU Adam behind the rest of the backward";
    ZS_TRY(consider("--schedule " + core::to_string(alt), hides, s, alt));
  }
  const int64_t ranks = std::max<int64_t>(1, std::min(s.run.gpus_per_node, s.run.world()));
  const int64_t share = std::max<int64_t>(1, hw.cpu.cores / ranks);
  if (cpu_exposed > 0.01 && base.cost.cpu_threads_per_rank < share) {
    core::Strategy alt = s;
    alt.run.launch = {};
    alt.run.launch.launcher = core::Launcher::deepspeed;
    alt.run.launch.bind_cores_to_rank = true;
    alt.run.launch.attn_implementation = s.run.launch.attn_implementation;
    ZS_TRY(consider("--launcher deepspeed --bind-cores-to-rank (" + std::to_string(share) + " threads per rank)",
                    "part of the CPU passes (each rank runs on its share of the cores)", alt, schedule));
  }
  bool pageable = false;
  for (const auto& c : base.breakdown.copies) pageable = pageable || (c.pageable && c.exposed_s > 0);
  if (pageable) {
    core::Strategy alt = s;
    alt.zero.offload_optimizer.pin_memory = true;
    alt.zero.offload_param.pin_memory = true;
    ZS_TRY(consider("pin_memory: true in the offload blocks", "the pageable copies' staging", alt, schedule));
  }
  std::stable_sort(out.begin(), out.end(), [](const Advice& a, const Advice& b) { return a.saved_s > b.saved_s; });
  return out;
}

std::string advice_text(const std::vector<Advice>& a, double step_time_s) {
  std::string o;
  char line[400];
  for (const auto& x : a) {
    std::snprintf(line, sizeof line, "  %s hides %s: step %.4g s (-%.4g s, -%.0f%%)\n", x.change.c_str(),
                  x.hides.c_str(), x.step_time_s, x.saved_s, step_time_s > 0 ? 100.0 * x.saved_s / step_time_s : 0);
    o += line;
  }
  return o;
}

}  // namespace zs::sim
