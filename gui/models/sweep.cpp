#include "gui/models/sweep.h"

#include <algorithm>
#include <sstream>

namespace zs::gui {

core::Result<Scenario> cell_scenario(const Scenario& base, const SweepSpec& spec, size_t ix, size_t iy) {
  // Stage first when it is an axis: other knobs (offload_param) are only valid under some stages.
  const bool y_first = spec.y.knob == Knob::stage && spec.x.knob != Knob::stage;
  const SweepAxis& a = y_first ? spec.y : spec.x;
  const SweepAxis& b = y_first ? spec.x : spec.y;
  const size_t ia = y_first ? iy : ix, ib = y_first ? ix : iy;
  auto s1 = with_knob(base, a.knob, a.values.at(ia));
  if (!s1) return s1.error();
  return with_knob(*s1, b.knob, b.values.at(ib));
}

SweepCell evaluate_cell(const Scenario& base, const SweepSpec& spec, size_t ix, size_t iy, const Predictor& predictor) {
  SweepCell c;
  c.state = CellState::done;
  auto s = cell_scenario(base, spec, ix, iy);
  if (!s) {
    c.reason = "invalid: " + s.error().message;
    return c;
  }
  const core::MemoryReport r = core::memory_model(s->model, s->hardware, s->strategy);
  if (!r.fits) {
    c.reason = verdict_text(r);
    for (const auto& p : r.problems) c.reason += "\n" + p;
    return c;
  }
  auto p = predictor(*s);
  if (!p) {
    c.reason = p.error().message;
    return c;
  }
  if (!p->feasible) {
    c.reason = p->infeasible_reason;
    return c;
  }
  c.feasible = true;
  c.tokens_per_s = p->tokens_per_s;
  c.step_time_s = p->step_time_s;
  c.mfu = p->mfu;
  c.bottleneck = p->bottleneck;
  return c;
}

std::vector<std::string> parse_axis_values(Knob k, const std::string& text) {
  std::string t = text;
  std::replace(t.begin(), t.end(), ',', ' ');
  std::istringstream in(t);
  std::vector<std::string> v;
  for (std::string w; in >> w;)
    if (std::find(v.begin(), v.end(), w) == v.end()) v.push_back(w);
  if (v.empty() || (v.size() == 1 && v[0] == "*")) return knob_info(k).choices;
  return v;
}

std::vector<std::string> default_axis_values(const Scenario& s, Knob k) {
  const auto& info = knob_info(k);
  if (!info.choices.empty()) return info.choices;
  switch (k) {
    case Knob::micro_batch:
    case Knob::grad_accum: return {"1", "2", "4", "8", "16", "32"};
    case Knob::nodes: return {"1", "2", "4", "8", "16"};
    case Knob::gpus_per_node: {
      std::vector<std::string> v;
      for (int64_t g = 1; g <= s.hardware.gpus_per_node; g *= 2) v.push_back(std::to_string(g));
      return v;
    }
    case Knob::seq_len: {
      std::vector<std::string> v;
      for (int64_t n = 256; n <= std::max<int64_t>(256, s.model.max_seq_len) && v.size() < 8; n *= 2)
        v.push_back(std::to_string(n));
      return v;
    }
    default: return {"10000000", "50000000", "100000000", "500000000"};
  }
}

}  // namespace zs::gui
