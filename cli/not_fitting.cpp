#include "cli/not_fitting.h"

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

namespace zs::cli {
namespace {

using nlohmann::ordered_json;

void print_json(const NotFitting& n) {
  ordered_json j;
  j["fits"] = false;
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
  ordered_json s = ordered_json::array();
  for (const auto& x : n.fixes) s.push_back({{"text", x.text}, {"fits", x.fits}});
  j["suggestions"] = s;
  std::cout << j.dump(2) << "\n";
}

void print_text(const NotFitting& n) {
  std::printf("%s on %s with %s: DOES NOT FIT%s\n  %s\n\n", n.in.model.name.c_str(), n.in.hardware.name.c_str(),
              n.in.strategy.source.c_str(), n.consequence.c_str(), n.plan.infeasible_reason.c_str());
  std::printf("  %-5s %12s %12s  %s\n", "tier", "required", "capacity", "scope");
  for (core::Tier t : core::kTiers) {
    const auto& tr = n.report.tier(t);
    if (tr.required_bytes == 0 && t == core::Tier::nvme) continue;
    std::printf("  %-5s %12s %12s%s %s\n", core::to_string(t).c_str(), core::format_bytes(tr.required_bytes).c_str(),
                core::format_bytes(tr.capacity_bytes).c_str(), tr.fits() ? " " : "!", tr.scope.c_str());
  }
  if (!n.fixes.empty()) std::printf("fixes, cheapest first (zerosim fit has the full report):\n");
  for (size_t i = 0; i < n.fixes.size() && i < 5; ++i)
    std::printf("  %s %s\n", n.fixes[i].fits ? "✓" : "-", n.fixes[i].text.c_str());
}

}  // namespace

int print_not_fitting(const NotFitting& n, bool json) {
  if (json)
    print_json(n);
  else
    print_text(n);
  return 1;
}

}  // namespace zs::cli
