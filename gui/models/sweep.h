// Sweep: two knobs (e.g. micro batch × optimizer offload) over a grid of values; each cell is the base scenario
// with both knobs set, checked by the memory model and then predicted. An infeasible cell is a result with the
// reason ("gpu needs 83.2 GiB, has 80.0 GiB"), not an error.
//   SweepSpec sp{{Knob::micro_batch, {"1", "2", "4"}}, {Knob::offload_optimizer, {"none", "cpu"}}};
//   SweepCell c = evaluate_cell(base, sp, /*ix=*/1, /*iy=*/0, predict_for_sweep);
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "gui/models/prediction.h"
#include "gui/models/scenario.h"

namespace zs::gui {

struct SweepAxis {
  Knob knob = Knob::micro_batch;
  std::vector<std::string> values;
};

struct SweepSpec {
  SweepAxis x, y;  // columns, rows
  size_t cells() const { return x.values.size() * y.values.size(); }
};

enum class CellState { pending, done };

struct SweepCell {
  CellState state = CellState::pending;
  bool feasible = false;
  double tokens_per_s = 0;
  double step_time_s = 0;
  double mfu = 0;
  std::string bottleneck;
  std::string reason;  // why infeasible or invalid
};

// The scenario of cell (ix, iy); an error when a knob value is invalid there (e.g. offload_param under stage 2).
core::Result<Scenario> cell_scenario(const Scenario& base, const SweepSpec& spec, size_t ix, size_t iy);

// Predicts a feasible scenario; the sweep job passes predict(), tests may pass a stand-in.
using Predictor = std::function<core::Result<Prediction>(const Scenario&)>;

// Memory model first (cheap; "does not fit" stops there), then the predictor.
SweepCell evaluate_cell(const Scenario& base, const SweepSpec& spec, size_t ix, size_t iy, const Predictor& predictor);

// "1, 2, 4, 8" → values (commas or spaces); the knob's choices when `text` is empty or "*".
std::vector<std::string> parse_axis_values(Knob k, const std::string& text);
// A sensible default axis for a knob around the scenario's current value.
std::vector<std::string> default_axis_values(const Scenario& s, Knob k);

}  // namespace zs::gui
