// TraceComparison: two traces of one Plan held side by side — predicted (simulate --raw-trace) against measured
// (train --trace): rank 0's phases, busy time per op kind, peak memory per tier and the ops that disagree most.
//   TraceComparison c = compare_traces(predicted, measured, 10);
//   for (const auto& w : c.warnings) ...;  relative_error(c.predicted_step_s, c.measured_step_s);
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/plan.h"
#include "core/trace.h"

namespace zs::core {

// (predicted − measured) / measured; +inf when only the prediction is non-zero, 0 when both are.
double relative_error(double predicted_s, double measured_s);

// One op kind's busy time on rank 0 (the sum of its events' durations) and how many events it had.
struct KindBusy {
  std::string kind;  // to_string(OpKind)
  double predicted_s = 0, measured_s = 0;
  int predicted_ops = 0, measured_ops = 0;
};

// One Plan op on rank 0: its summed durations in both traces; what it is, from its last measured event.
struct OpDifference {
  uint32_t op = 0;
  OpKind kind = OpKind::forward;
  Phase phase = Phase::forward;
  int32_t layer = -1;
  double predicted_s = 0, measured_s = 0;
};

// A tier's peak in both traces; the framework's fixed bytes (Trace::overhead_bytes) are set apart, since
// `simulate` prices a PyTorch run that holds them and the engine holds tensors only.
struct TierPeak {
  int64_t predicted_bytes = 0, measured_bytes = 0;
  int64_t predicted_overhead_bytes = 0, measured_overhead_bytes = 0;
  int64_t predicted_tensor_bytes() const { return predicted_bytes - predicted_overhead_bytes; }
  int64_t measured_tensor_bytes() const { return measured_bytes - measured_overhead_bytes; }
};

struct TraceComparison {
  // Signs that the traces are not of the same Plan: schedules differ, rank 0 ran a different number of events.
  std::vector<std::string> warnings;
  double predicted_step_s = 0, measured_step_s = 0;  // Trace::step_time_s
  // Forward, backward, optimizer of rank 0 (phase_split, docs/SIM.md's rule).
  std::array<double, 3> predicted_phase_s{}, measured_phase_s{};
  std::vector<KindBusy> busy_by_kind;  // every kind either trace ran on rank 0, in name order
  std::array<TierPeak, 3> peaks{};     // gpu, cpu, nvme
  // Ops in both traces, the `top` with the largest |predicted − measured| first.
  std::vector<OpDifference> largest_differences;
};

// Rank 0 of both traces; `top` bounds largest_differences (0: none, negative: all).
TraceComparison compare_traces(const Trace& predicted, const Trace& measured, int top);

}  // namespace zs::core
