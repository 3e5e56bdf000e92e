// `zerosim compare PREDICTED MEASURED`: two traces of one Plan (simulate --raw-trace, train --trace) side by side —
// step time and the forward/backward/optimizer phases (docs/SIM.md's rule: each instant belongs to the most recently
// started op still running, in a gap to the next op to start), busy time per op kind, peak memory per tier (the
// framework's fixed bytes apart: Trace::overhead_bytes), and the ops whose durations disagree most. Errors are
// (predicted − measured) / measured. The comparison itself is core/trace_compare.h; this file prints it.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "core/memory.h"
#include "core/trace.h"
#include "core/trace_compare.h"

namespace zs::cli {
namespace {

using nlohmann::ordered_json;

struct Opts {
  std::string predicted, measured;
  bool json = false;
  int top = 10;
};

double err(double pred, double meas) { return core::relative_error(pred, meas); }

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

const char* const kPhaseNames[3] = {"forward", "backward", "optimizer"};
const char* const kTierNames[3] = {"gpu", "cpu", "nvme"};

// The header: each trace's file, source and schedule.
struct Sides {
  const core::Trace& p;  // predicted
  const core::Trace& m;  // measured
};

void print_comparison_json(const Opts& o, const Sides& s, const core::TraceComparison& c) {
  ordered_json j;
  j["predicted"] = {{"file", o.predicted}, {"source", s.p.source}, {"schedule", s.p.schedule}};
  j["measured"] = {{"file", o.measured}, {"source", s.m.source}, {"schedule", s.m.schedule}};
  j["step_time_s"] = {{"predicted", c.predicted_step_s},
                      {"measured", c.measured_step_s},
                      {"error", err(c.predicted_step_s, c.measured_step_s)}};
  ordered_json ph = ordered_json::object();
  for (size_t i = 0; i < 3; ++i)
    ph[std::string(kPhaseNames[i]) + "_s"] = {{"predicted", c.predicted_phase_s[i]},
                                              {"measured", c.measured_phase_s[i]},
                                              {"error", err(c.predicted_phase_s[i], c.measured_phase_s[i])}};
  j["phases"] = ph;
  ordered_json kinds = ordered_json::object();
  for (const auto& k : c.busy_by_kind)
    kinds[k.kind] = {{"ops", k.measured_ops > 0 ? k.measured_ops : k.predicted_ops},
                     {"predicted_s", k.predicted_s},
                     {"measured_s", k.measured_s},
                     {"error", err(k.predicted_s, k.measured_s)}};
  j["busy_by_kind"] = kinds;
  ordered_json mem = ordered_json::object();
  for (size_t t = 0; t < 3; ++t) {
    const core::TierPeak& pk = c.peaks[t];
    mem[kTierNames[t]] = {{"predicted", pk.predicted_bytes},
                          {"measured", pk.measured_bytes},
                          {"predicted_overhead", pk.predicted_overhead_bytes},
                          {"measured_overhead", pk.measured_overhead_bytes},
                          {"error", err(static_cast<double>(pk.predicted_tensor_bytes()),
                                        static_cast<double>(pk.measured_tensor_bytes()))}};
  }
  j["peak_bytes"] = mem;
  ordered_json top = ordered_json::array();
  for (const auto& d : c.largest_differences)
    top.push_back({{"op", d.op},
                   {"kind", core::to_string(d.kind)},
                   {"phase", core::to_string(d.phase)},
                   {"layer", d.layer},
                   {"predicted_s", d.predicted_s},
                   {"measured_s", d.measured_s},
                   {"error", err(d.predicted_s, d.measured_s)}});
  j["largest_errors"] = top;
  j["warnings"] = c.warnings;
  std::cout << j.dump(2) << "\n";
}

// Peaks without the framework's fixed bytes (the CUDA context, the allocator's reserve, the Python process):
// `simulate` prices a PyTorch run, the engine holds tensors only, so those bytes are shown apart.
void print_peaks_text(const core::TraceComparison& c) {
  std::string fixed;
  for (size_t t = 0; t < 3; ++t) {
    const core::TierPeak& pk = c.peaks[t];
    if (pk.predicted_overhead_bytes > 0 || pk.measured_overhead_bytes > 0)
      fixed += std::string(fixed.empty() ? "" : ", ") + kTierNames[t] + " " +
               core::format_bytes(pk.predicted_overhead_bytes) + " predicted, " +
               core::format_bytes(pk.measured_overhead_bytes) + " measured";
  }
  std::printf("\npeak memory%s\n", fixed.empty() ? "" : " (tensors; the framework's fixed bytes apart)");
  for (size_t t = 0; t < 3; ++t) {
    const core::TierPeak& pk = c.peaks[t];
    std::printf("  %-20s %14s %14s %9s\n", kTierNames[t], core::format_bytes(pk.predicted_tensor_bytes()).c_str(),
                core::format_bytes(pk.measured_tensor_bytes()).c_str(),
                pct(err(static_cast<double>(pk.predicted_tensor_bytes()),
                        static_cast<double>(pk.measured_tensor_bytes())))
                    .c_str());
  }
  if (!fixed.empty())
    std::printf("  framework's fixed bytes (CUDA context, allocator reserve, Python process): %s\n", fixed.c_str());
}

void print_comparison_text(const Opts& o, const Sides& s, const core::TraceComparison& c) {
  std::printf("predicted %s (%s, %s)\nmeasured  %s (%s, %s)\n\n", o.predicted.c_str(), s.p.source.c_str(),
              s.p.schedule.c_str(), o.measured.c_str(), s.m.source.c_str(), s.m.schedule.c_str());
  std::printf("%-22s %14s %14s %9s\n", "", "predicted", "measured", "error");
  std::printf("%-22s %14s %14s %9s\n", "step", ms(c.predicted_step_s).c_str(), ms(c.measured_step_s).c_str(),
              pct(err(c.predicted_step_s, c.measured_step_s)).c_str());
  for (size_t i = 0; i < 3; ++i)
    std::printf("  %-20s %14s %14s %9s\n", kPhaseNames[i], ms(c.predicted_phase_s[i]).c_str(),
                ms(c.measured_phase_s[i]).c_str(), pct(err(c.predicted_phase_s[i], c.measured_phase_s[i])).c_str());
  std::printf("\nbusy time by op kind (sum of durations)\n");
  for (const auto& k : c.busy_by_kind) {
    if (k.predicted_s == 0 && k.measured_s == 0) continue;
    std::printf("  %-20s %14s %14s %9s\n", k.kind.c_str(), ms(k.predicted_s).c_str(), ms(k.measured_s).c_str(),
                pct(err(k.predicted_s, k.measured_s)).c_str());
  }
  print_peaks_text(c);
  std::printf("\nops with the largest differences\n");
  for (const auto& d : c.largest_differences) {
    std::string what = core::to_string(d.kind) + " (" + core::to_string(d.phase) + ")";
    if (d.layer >= 0) what += " L" + std::to_string(d.layer);
    std::printf("  op %-6u %-26s %12s %12s %9s\n", d.op, what.c_str(), ms(d.predicted_s).c_str(),
                ms(d.measured_s).c_str(), pct(err(d.predicted_s, d.measured_s)).c_str());
  }
  for (const auto& w : c.warnings) std::printf("warning: %s\n", w.c_str());
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
  const core::TraceComparison c = core::compare_traces(*p, *m, o.top);
  if (o.json)
    print_comparison_json(o, {*p, *m}, c);
  else
    print_comparison_text(o, {*p, *m}, c);
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
