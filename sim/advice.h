// Advice: when the optimizer step or a copy is exposed, which schedule or setting would hide it and by how much —
// each alternative planned and simulated like the run itself (predict.h), so "by how much" is a simulated step.
//   auto a = advise(model, hw, strategy, Schedule::deepspeed, prediction);
//   for (const Advice& x : *a) std::cout << x.change << ": " << x.step_time_s << " s\n";
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "sim/predict.h"

namespace zs::sim {

struct Advice {
  std::string change;      // "--schedule dpu", "--bind-cores-to-rank (64 threads per rank)", ...
  std::string hides;       // what it hides: "CPU Adam and the parameter upload behind the next step's compute"
  double step_time_s = 0;  // simulated with the change
  double saved_s = 0;      // the run's step time minus that
};

// Alternatives for an offloaded run whose optimizer passes or copies are exposed: the other schedules (dpu,
// overlap), the deepspeed launcher's core binding when a rank has fewer threads than its share of the cores, and
// pin_memory for pageable copies. Only those that save ≥ 1% of the step, best first.
core::Result<std::vector<Advice>> advise(const core::ModelSpec& m, const core::Hardware& hw, const core::Strategy& s,
                                         core::Schedule schedule, const Prediction& base);

std::string advice_text(const std::vector<Advice>& a, double step_time_s);

}  // namespace zs::sim
