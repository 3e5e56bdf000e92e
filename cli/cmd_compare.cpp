// `zerosim compare PREDICTED MEASURED`: two traces of one Plan (simulate --raw-trace, train --trace) side by side —
// step time and the forward/backward/optimizer phases (docs/SIM.md's rule: each instant belongs to the most recently
// started op still running, in a gap to the next op to start), busy time per op kind, peak memory per tier (the
// framework's fixed bytes apart: Trace::overhead_bytes), and the ops whose durations disagree most. Errors are
// (predicted − measured) / measured.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "core/memory.h"
#include "core/trace.h"

namespace zs::cli {
namespace {

using nlohmann::ordered_json;

struct Opts {
  std::string predicted, measured;
  bool json = false;
  int top = 10;
};

std::array<double, 3> phases(const core::Trace& t) { return core::phase_split(t, 0); }

std::map<std::string, std::pair<double, int>> busy_by_kind(const core::Trace& t) {
  std::map<std::string, std::pair<double, int>> m;
  for (const auto& e : t.events) {
    if (e.rank != 0) continue;
    auto& x = m[core::to_string(e.kind)];
    x.first += e.end_s - e.start_s;
    ++x.second;
  }
  return m;
}

// A tier's peak without the framework's fixed bytes (Trace::overhead_bytes).
double tensor_peak(const core::Trace& t, size_t tier) {
  return static_cast<double>(t.peak_bytes[tier] - t.overhead_bytes[tier]);
}

double err(double pred, double meas) { return meas > 0 ? (pred - meas) / meas : (pred > 0 ? INFINITY : 0); }

std::string pct(double e) {
  if (!std::isfinite(e)) return "n/a";
  char b[32];
  std::snprintf(b, sizeof b, "%+.1f%%", 100 * e);
  return b;
}

std::string ms(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f ms", 1e3 * s);
  return b;
}

void run_compare(const Opts& o, int& exit_code) {
  auto p = core::trace_from_json_file(o.predicted);
  if (!p) {
    std::cerr << "zerosim compare: " << p.error().message << "\n";
    exit_code = exit_code_for(p.error());
    return;
  }
  auto m = core::trace_from_json_file(o.measured);
  if (!m) {
    std::cerr << "zerosim compare: " << m.error().message << "\n";
    exit_code = exit_code_for(m.error());
    return;
  }
  std::vector<std::string> warnings;
  if (p->schedule != m->schedule) warnings.push_back("schedules differ: " + p->schedule + " vs " + m->schedule);
  size_t pn = 0, mn = 0;
  for (const auto& e : p->events) pn += e.rank == 0;
  for (const auto& e : m->events) mn += e.rank == 0;
  if (pn != mn)
    warnings.push_back("the traces have " + std::to_string(pn) + " and " + std::to_string(mn) +
                       " rank-0 events: not the same Plan?");
  const auto pp = phases(*p), mp = phases(*m);
  const auto pk = busy_by_kind(*p), mk = busy_by_kind(*m);
  std::map<uint32_t, double> pdur;
  for (const auto& e : p->events)
    if (e.rank == 0) pdur[e.op] += e.end_s - e.start_s;
  struct OpDiff {
    uint32_t op;
    const core::TraceEvent* ev;
    double pred, meas;
  };
  std::vector<OpDiff> diffs;
  std::map<uint32_t, double> mdur;
  std::map<uint32_t, const core::TraceEvent*> mev;
  for (const auto& e : m->events)
    if (e.rank == 0) {
      mdur[e.op] += e.end_s - e.start_s;
      mev[e.op] = &e;
    }
  for (const auto& [op, d] : mdur)
    if (pdur.count(op)) diffs.push_back({op, mev[op], pdur[op], d});
  std::sort(diffs.begin(), diffs.end(),
            [](const OpDiff& a, const OpDiff& b) { return std::fabs(a.pred - a.meas) > std::fabs(b.pred - b.meas); });
  if (diffs.size() > static_cast<size_t>(o.top)) diffs.resize(static_cast<size_t>(o.top));
  const char* names[3] = {"forward", "backward", "optimizer"};

  if (o.json) {
    ordered_json j;
    j["predicted"] = {{"file", o.predicted}, {"source", p->source}, {"schedule", p->schedule}};
    j["measured"] = {{"file", o.measured}, {"source", m->source}, {"schedule", m->schedule}};
    j["step_time_s"] = {
        {"predicted", p->step_time_s}, {"measured", m->step_time_s}, {"error", err(p->step_time_s, m->step_time_s)}};
    ordered_json ph = ordered_json::object();
    for (size_t i = 0; i < 3; ++i)
      ph[std::string(names[i]) + "_s"] = {{"predicted", pp[i]}, {"measured", mp[i]}, {"error", err(pp[i], mp[i])}};
    j["phases"] = ph;
    ordered_json kinds = ordered_json::object();
    std::map<std::string, int> all;
    for (const auto& [k, v] : pk) all[k] = 1;
    for (const auto& [k, v] : mk) all[k] = 1;
    for (const auto& [k, _] : all) {
      const double a = pk.count(k) ? pk.at(k).first : 0, b = mk.count(k) ? mk.at(k).first : 0;
      kinds[k] = {{"ops", mk.count(k) ? mk.at(k).second : pk.at(k).second},
                  {"predicted_s", a},
                  {"measured_s", b},
                  {"error", err(a, b)}};
    }
    j["busy_by_kind"] = kinds;
    ordered_json mem = ordered_json::object();
    const char* tiers[3] = {"gpu", "cpu", "nvme"};
    for (size_t t = 0; t < 3; ++t)
      mem[tiers[t]] = {{"predicted", p->peak_bytes[t]},
                       {"measured", m->peak_bytes[t]},
                       {"predicted_overhead", p->overhead_bytes[t]},
                       {"measured_overhead", m->overhead_bytes[t]},
                       {"error", err(tensor_peak(*p, t), tensor_peak(*m, t))}};
    j["peak_bytes"] = mem;
    ordered_json top = ordered_json::array();
    for (const auto& d : diffs)
      top.push_back({{"op", d.op},
                     {"kind", core::to_string(d.ev->kind)},
                     {"phase", core::to_string(d.ev->phase)},
                     {"layer", d.ev->layer},
                     {"predicted_s", d.pred},
                     {"measured_s", d.meas},
                     {"error", err(d.pred, d.meas)}});
    j["largest_errors"] = top;
    j["warnings"] = warnings;
    std::cout << j.dump(2) << "\n";
    exit_code = 0;
    return;
  }
  std::printf("predicted %s (%s, %s)\nmeasured  %s (%s, %s)\n\n", o.predicted.c_str(), p->source.c_str(),
              p->schedule.c_str(), o.measured.c_str(), m->source.c_str(), m->schedule.c_str());
  std::printf("%-22s %14s %14s %9s\n", "", "predicted", "measured", "error");
  std::printf("%-22s %14s %14s %9s\n", "step", ms(p->step_time_s).c_str(), ms(m->step_time_s).c_str(),
              pct(err(p->step_time_s, m->step_time_s)).c_str());
  for (size_t i = 0; i < 3; ++i)
    std::printf("  %-20s %14s %14s %9s\n", names[i], ms(pp[i]).c_str(), ms(mp[i]).c_str(),
                pct(err(pp[i], mp[i])).c_str());
  std::printf("\nbusy time by op kind (sum of durations)\n");
  std::map<std::string, int> all;
  for (const auto& [k, v] : pk) all[k] = 1;
  for (const auto& [k, v] : mk) all[k] = 1;
  for (const auto& [k, _] : all) {
    const double a = pk.count(k) ? pk.at(k).first : 0, b = mk.count(k) ? mk.at(k).first : 0;
    if (a == 0 && b == 0) continue;
    std::printf("  %-20s %14s %14s %9s\n", k.c_str(), ms(a).c_str(), ms(b).c_str(), pct(err(a, b)).c_str());
  }
  // Peaks without the framework's fixed bytes (the CUDA context, the allocator's reserve, the Python process):
  // `simulate` prices a PyTorch run, the engine holds tensors only, so those bytes are shown apart.
  const char* tiers[3] = {"gpu", "cpu", "nvme"};
  std::string fixed;
  for (size_t t = 0; t < 3; ++t)
    if (p->overhead_bytes[t] > 0 || m->overhead_bytes[t] > 0)
      fixed += std::string(fixed.empty() ? "" : ", ") + tiers[t] + " " + core::format_bytes(p->overhead_bytes[t]) +
               " predicted, " + core::format_bytes(m->overhead_bytes[t]) + " measured";
  std::printf("\npeak memory%s\n", fixed.empty() ? "" : " (tensors; the framework's fixed bytes apart)");
  for (size_t t = 0; t < 3; ++t)
    std::printf("  %-20s %14s %14s %9s\n", tiers[t],
                core::format_bytes(static_cast<int64_t>(tensor_peak(*p, t))).c_str(),
                core::format_bytes(static_cast<int64_t>(tensor_peak(*m, t))).c_str(),
                pct(err(tensor_peak(*p, t), tensor_peak(*m, t))).c_str());
  if (!fixed.empty())
    std::printf("  framework's fixed bytes (CUDA context, allocator reserve, Python process): %s\n", fixed.c_str());
  std::printf("\nops with the largest differences\n");
  for (const auto& d : diffs) {
    std::string what = core::to_string(d.ev->kind) + " (" + core::to_string(d.ev->phase) + ")";
    if (d.ev->layer >= 0) what += " L" + std::to_string(d.ev->layer);
    std::printf("  op %-6u %-26s %12s %12s %9s\n", d.op, what.c_str(), ms(d.pred).c_str(), ms(d.meas).c_str(),
                pct(err(d.pred, d.meas)).c_str());
  }
  for (const auto& w : warnings) std::printf("warning: %s\n", w.c_str());
  exit_code = 0;
}

}  // namespace

void add_compare(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<Opts>();
  auto* sub =
      app.add_subcommand("compare", "predicted vs measured: a simulate trace against a train trace of the same Plan");
  sub->add_option("PREDICTED", o->predicted, "zerosim trace JSON (simulate --raw-trace)")->required();
  sub->add_option("MEASURED", o->measured, "zerosim trace JSON (train --trace)")->required();
  sub->add_flag("--json", o->json, "print the comparison as JSON");
  sub->add_option("--top", o->top, "ops listed with the largest differences")->capture_default_str();
  sub->callback([o, &exit_code] { run_compare(*o, exit_code); });
}

}  // namespace zs::cli
