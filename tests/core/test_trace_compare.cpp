// compare_traces (core/trace_compare.h) on two traces written by hand: rank 0's phases (docs/SIM.md's rule), busy
// time per op kind, the ops that disagree most, the peaks with the framework's bytes apart, and the warnings that
// the traces are not of one Plan. Every duration is a binary fraction, so the expectations are exact.
#include <catch2/catch.hpp>
#include <cmath>

#include "core/trace_compare.h"

using namespace zs::core;

namespace {

TraceEvent ev(uint32_t op, OpKind kind, Phase phase, int32_t layer, double start_s, double end_s, int32_t rank = 0) {
  TraceEvent e;
  e.op = op;
  e.rank = rank;
  e.kind = kind;
  e.phase = phase;
  e.layer = layer;
  e.start_s = start_s;
  e.end_s = end_s;
  return e;
}

// Predicted: an upload beside the forward, the backward, CPU Adam; rank 1's long forward is not rank 0's.
Trace predicted() {
  Trace t;
  t.source = "simulate";
  t.schedule = "deepspeed";
  t.step_time_s = 7;
  t.events = {ev(3, OpKind::h2d, Phase::forward, 0, 0, 1), ev(0, OpKind::forward, Phase::forward, 0, 0, 2),
              ev(1, OpKind::backward, Phase::backward, 0, 2, 6), ev(2, OpKind::adam_cpu, Phase::optimizer, -1, 6, 7),
              ev(0, OpKind::forward, Phase::forward, 0, 0, 100, 1)};
  t.peak_bytes = {140, 50, 0};
  t.overhead_bytes = {40, 30, 0};
  return t;
}

// Measured: no upload, the backward in two micro-steps (op 1 twice), a faster Adam.
Trace measured() {
  Trace t;
  t.source = "train";
  t.schedule = "deepspeed";
  t.step_time_s = 9.5;
  t.events = {ev(0, OpKind::forward, Phase::forward, 0, 0, 3), ev(1, OpKind::backward, Phase::backward, 0, 3, 8),
              ev(1, OpKind::backward, Phase::backward, 0, 8, 9), ev(2, OpKind::adam_cpu, Phase::optimizer, -1, 9, 9.5)};
  t.peak_bytes = {100, 20, 0};
  return t;
}

}  // namespace

TEST_CASE("compare_traces: phases, busy time per kind, peaks", "[compare]") {
  const TraceComparison c = compare_traces(predicted(), measured(), 10);
  CHECK(c.warnings.empty());  // same schedule, 4 rank-0 events each
  CHECK(c.predicted_step_s == 7);
  CHECK(c.measured_step_s == 9.5);
  // [0, 2) forward (the upload and the forward), [2, 6) backward, [6, 7) optimizer.
  CHECK(c.predicted_phase_s == std::array<double, 3>{2, 4, 1});
  CHECK(c.measured_phase_s == std::array<double, 3>{3, 6, 0.5});

  REQUIRE(c.busy_by_kind.size() == 4);  // by name: adam_cpu, backward, forward, h2d
  CHECK(c.busy_by_kind[0].kind == "adam_cpu");
  CHECK(c.busy_by_kind[0].predicted_s == 1);
  CHECK(c.busy_by_kind[0].measured_s == 0.5);
  CHECK(c.busy_by_kind[1].kind == "backward");
  CHECK(c.busy_by_kind[1].predicted_s == 4);
  CHECK(c.busy_by_kind[1].measured_s == 6);
  CHECK(c.busy_by_kind[1].predicted_ops == 1);
  CHECK(c.busy_by_kind[1].measured_ops == 2);
  CHECK(c.busy_by_kind[2].kind == "forward");
  CHECK(c.busy_by_kind[2].predicted_s == 2);  // rank 1's 100 s left out
  CHECK(c.busy_by_kind[2].measured_s == 3);
  CHECK(c.busy_by_kind[3].kind == "h2d");
  CHECK(c.busy_by_kind[3].predicted_s == 1);
  CHECK(c.busy_by_kind[3].measured_s == 0);
  CHECK(c.busy_by_kind[3].measured_ops == 0);

  CHECK(c.peaks[0].predicted_tensor_bytes() == 100);
  CHECK(c.peaks[0].measured_tensor_bytes() == 100);
  CHECK(c.peaks[1].predicted_tensor_bytes() == 20);
  CHECK(c.peaks[1].predicted_overhead_bytes == 30);
  CHECK(c.peaks[2].measured_bytes == 0);
}

TEST_CASE("compare_traces: the ops with the largest differences", "[compare]") {
  const TraceComparison c = compare_traces(predicted(), measured(), 2);
  // Op 1 differs by 2 s (its two measured events summed), op 0 by 1 s, op 2 by 0.5 s; op 3 ran in one trace only.
  REQUIRE(c.largest_differences.size() == 2);
  const OpDifference& a = c.largest_differences[0];
  CHECK(a.op == 1);
  CHECK(a.kind == OpKind::backward);
  CHECK(a.phase == Phase::backward);
  CHECK(a.layer == 0);
  CHECK(a.predicted_s == 4);
  CHECK(a.measured_s == 6);
  CHECK(relative_error(a.predicted_s, a.measured_s) == Approx(-1.0 / 3));
  CHECK(c.largest_differences[1].op == 0);
  CHECK(c.largest_differences[1].predicted_s == 2);
  CHECK(c.largest_differences[1].measured_s == 3);

  const TraceComparison all = compare_traces(predicted(), measured(), -1);
  REQUIRE(all.largest_differences.size() == 3);
  CHECK(all.largest_differences[2].op == 2);
  CHECK(all.largest_differences[2].layer == -1);
  CHECK(compare_traces(predicted(), measured(), 0).largest_differences.empty());
}

TEST_CASE("compare_traces: warnings and errors", "[compare]") {
  Trace m = measured();
  m.schedule = "zerosim";
  m.events.push_back(ev(4, OpKind::d2h, Phase::backward, 0, 8, 8.5));
  const TraceComparison c = compare_traces(predicted(), m, 10);
  REQUIRE(c.warnings.size() == 2);
  CHECK(c.warnings[0] == "schedules differ: deepspeed vs zerosim");
  CHECK(c.warnings[1] == "the traces have 4 and 5 rank-0 events: not the same Plan?");
  // A kind only the measurement ran: measured time, no predicted time.
  CHECK(c.busy_by_kind[2].kind == "d2h");
  CHECK(c.busy_by_kind[2].predicted_s == 0);
  CHECK(c.busy_by_kind[2].measured_s == 0.5);

  CHECK(relative_error(3, 2) == 0.5);
  CHECK(std::isinf(relative_error(1, 0)));
  CHECK(relative_error(0, 0) == 0);
}
