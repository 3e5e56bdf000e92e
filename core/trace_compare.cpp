#include "core/trace_compare.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

namespace zs::core {
namespace {

// Rank 0's busy time and event count per op kind, by the kind's name.
std::map<std::string, std::pair<double, int>> busy_by_kind(const Trace& t) {
  std::map<std::string, std::pair<double, int>> m;
  for (const auto& e : t.events) {
    if (e.rank != 0) continue;
    auto& x = m[to_string(e.kind)];
    x.first += e.end_s - e.start_s;
    ++x.second;
  }
  return m;
}

std::vector<KindBusy> busy_both(const Trace& p, const Trace& m) {
  const auto pk = busy_by_kind(p), mk = busy_by_kind(m);
  std::map<std::string, KindBusy> all;
  for (const auto& [k, v] : pk) {
    auto& b = all[k];
    b.predicted_s = v.first;
    b.predicted_ops = v.second;
  }
  for (const auto& [k, v] : mk) {
    auto& b = all[k];
    b.measured_s = v.first;
    b.measured_ops = v.second;
  }
  std::vector<KindBusy> out;
  for (auto& [k, b] : all) {
    b.kind = k;
    out.push_back(std::move(b));
  }
  return out;
}

std::vector<std::string> plan_mismatch_warnings(const Trace& p, const Trace& m) {
  std::vector<std::string> warnings;
  if (p.schedule != m.schedule) warnings.push_back("schedules differ: " + p.schedule + " vs " + m.schedule);
  size_t pn = 0, mn = 0;
  for (const auto& e : p.events) pn += e.rank == 0;
  for (const auto& e : m.events) mn += e.rank == 0;
  if (pn != mn)
    warnings.push_back("the traces have " + std::to_string(pn) + " and " + std::to_string(mn) +
                       " rank-0 events: not the same Plan?");
  return warnings;
}

// Rank 0's ops in both traces by their summed durations, the `top` with the largest absolute difference first.
std::vector<OpDifference> largest_differences(const Trace& p, const Trace& m, int top) {
  std::map<uint32_t, double> pdur, mdur;
  std::map<uint32_t, const TraceEvent*> last;  // the op's last measured event says what it is
  for (const auto& e : p.events)
    if (e.rank == 0) pdur[e.op] += e.end_s - e.start_s;
  for (const auto& e : m.events)
    if (e.rank == 0) {
      mdur[e.op] += e.end_s - e.start_s;
      last[e.op] = &e;
    }
  std::vector<OpDifference> diffs;
  for (const auto& [op, d] : mdur) {
    const auto it = pdur.find(op);
    if (it == pdur.end()) continue;
    const TraceEvent& e = *last.at(op);
    diffs.push_back({op, e.kind, e.phase, e.layer, it->second, d});
  }
  std::sort(diffs.begin(), diffs.end(), [](const OpDifference& a, const OpDifference& b) {
    return std::fabs(a.predicted_s - a.measured_s) > std::fabs(b.predicted_s - b.measured_s);
  });
  if (top >= 0 && diffs.size() > static_cast<size_t>(top)) diffs.resize(static_cast<size_t>(top));
  return diffs;
}

}  // namespace

double relative_error(double predicted_s, double measured_s) {
  return measured_s > 0 ? (predicted_s - measured_s) / measured_s : (predicted_s > 0 ? INFINITY : 0);
}

TraceComparison compare_traces(const Trace& predicted, const Trace& measured, int top) {
  TraceComparison c;
  c.warnings = plan_mismatch_warnings(predicted, measured);
  c.predicted_step_s = predicted.step_time_s;
  c.measured_step_s = measured.step_time_s;
  c.predicted_phase_s = phase_split(predicted, 0);
  c.measured_phase_s = phase_split(measured, 0);
  c.busy_by_kind = busy_both(predicted, measured);
  for (size_t t = 0; t < 3; ++t)
    c.peaks[t] = {predicted.peak_bytes[t], measured.peak_bytes[t], predicted.overhead_bytes[t],
                  measured.overhead_bytes[t]};
  c.largest_differences = largest_differences(predicted, measured, top);
  return c;
}

}  // namespace zs::core
