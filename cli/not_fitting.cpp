#include "cli/not_fitting.h"

#include <cstdio>
#include <iostream>

#include "core/patch.h"

namespace zs::cli {
namespace {

using nlohmann::ordered_json;

void print_json(const NotFitting& n) {
  ordered_json j;
  j["fits"] = false;
  j["verdict"] = core::to_string(core::Verdict::does_not_fit);
  j["reason"] = n.plan.infeasible_reason;
  ordered_json tiers = ordered_json::object();
  for (core::Tier t : core::kTiers) {
    const auto& tr = n.report.tier(t);
    tiers[core::to_string(t)] = {{"required_bytes", tr.required_bytes},
                                 {"capacity_bytes", tr.capacity_bytes},
                                 {"scope", tr.scope},
                                 {"fits", tr.fits()}};
  }
  j["tiers"] = tiers;
  const auto& peak = n.plan.peak_bytes;
  j["plan_peak_bytes"] = {{"gpu", peak[0]}, {"cpu", peak[1]}, {"nvme", peak[2]}};
  j["suggestions"] = suggestions_json(n.fixes);
  j["limits"] = limits_json(n.report);
  std::cout << j.dump(2) << "\n";
}

void print_text(const NotFitting& n) {
  std::printf("%s on %s with %s: %s%s\n  %s\n\n", n.in.model.name.c_str(), n.in.hardware.name.c_str(),
              n.in.strategy.source.c_str(), core::verdict_word(core::Verdict::does_not_fit).c_str(),
              n.consequence.c_str(), n.plan.infeasible_reason.c_str());
  std::printf("  %-5s %12s %12s  %s\n", "tier", "required", "capacity", "scope");
  for (core::Tier t : core::kTiers) {
    const auto& tr = n.report.tier(t);
    if (tr.required_bytes == 0 && t == core::Tier::nvme) continue;
    std::printf("  %-5s %12s %12s%s %s\n", core::to_string(t).c_str(), core::format_bytes(tr.required_bytes).c_str(),
                core::format_bytes(tr.capacity_bytes).c_str(), tr.fits() ? " " : "!", tr.scope.c_str());
  }
  print_fixes(n.fixes, 5, "fixes, cheapest first (zerosim fit has the full report and --apply-fix N):");
  print_limits(n.report);
}

const char* mark(const core::Suggestion& s) {
  return s.verdict == core::Verdict::fits ? "✓" : s.verdict == core::Verdict::tight ? "~" : "-";
}

}  // namespace

void print_fixes(const std::vector<core::Suggestion>& fixes, size_t max, const std::string& heading) {
  if (fixes.empty()) return;
  std::printf("%s\n", heading.c_str());
  for (size_t i = 0; i < fixes.size() && i < max; ++i)
    std::printf("  %2zu %s %s\n", i + 1, mark(fixes[i]), fixes[i].text.c_str());
  if (fixes.size() > max) std::printf("  (%zu more in --json)\n", fixes.size() - max);
}

void print_limits(const core::MemoryReport& r) {
  const auto limits = core::memory_limits(r);
  if (limits.empty()) return;
  std::printf("limits as configured (what the hardware lacks; not fixes):\n");
  for (const auto& l : limits) std::printf("  %s\n", l.text.c_str());
}

ordered_json suggestions_json(const std::vector<core::Suggestion>& fixes) {
  ordered_json out = ordered_json::array();
  for (const auto& x : fixes) {
    ordered_json required = ordered_json::object();
    for (core::Tier t : core::kTiers) required[core::to_string(t)] = x.report.tier(t).required_bytes;
    out.push_back({{"text", x.text},
                   {"fits", x.fits},
                   {"verdict", core::to_string(x.verdict)},
                   {"cost_rank", x.cost_rank},
                   {"changes", core::to_json(x.changes)},
                   {"run_changes", core::to_json(x.run_changes)},
                   {"run_flags", core::describe(x.run_changes)},
                   {"binding_tier", x.report.binding ? ordered_json(core::to_string(*x.report.binding)) : nullptr},
                   {"required_bytes", required}});
  }
  return out;
}

ordered_json limits_json(const core::MemoryReport& r) {
  ordered_json out = ordered_json::array();
  for (const auto& l : core::memory_limits(r))
    out.push_back({{"tier", core::to_string(l.tier)},
                   {"required_bytes", l.required_bytes},
                   {"capacity_bytes", l.capacity_bytes},
                   {"text", l.text}});
  return out;
}

int print_not_fitting(const NotFitting& n, bool json) {
  if (json)
    print_json(n);
  else
    print_text(n);
  return 1;
}

}  // namespace zs::cli
