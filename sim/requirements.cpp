#include "sim/requirements.h"

#include <cmath>

namespace zs::sim {

core::CostModel scale_tier(const core::CostModel& c, const std::string& key, double k) {
  core::CostModel s = c;
  if (key == "pcie_h2d") {  // the GPU's link and the node uplink it shares (both directions' uplink scale)
    s.pcie_h2d_Bps *= k, s.pcie_h2d_pageable_Bps *= k, s.pcie_host_Bps *= k;
  } else if (key == "pcie_d2h") {
    s.pcie_d2h_Bps *= k, s.pcie_d2h_pageable_Bps *= k, s.pcie_host_Bps *= k;
  } else if (key == "nvme_read") {
    s.nvme_read_Bps *= k, s.nvme_hot_read_Bps *= k;
  } else if (key == "nvme_write") {
    s.nvme_write_Bps *= k, s.nvme_hot_write_Bps *= k;
  } else if (key == "network") {
    s.nic_Bps *= k;
  } else if (key == "nvlink") {
    s.nvlink_Bps *= k;
  } else if (key == "cpu_adam") {
    s.cpu_adam_params_per_s *= k;
  }
  return s;
}

core::Result<std::vector<Requirement>> simulate_requirements(const core::Plan& plan, const core::CostModel& cost,
                                                             const SimOptions& o, const Summary& base, double target) {
  std::vector<Requirement> out;
  if (base.gpu_compute_s <= 0 || target <= 0) return out;
  const double target_step = base.gpu_compute_s / target;
  for (Requirement q : base.required) {
    auto step_at = [&](double k) -> core::Result<double> {
      auto r = simulate(plan, scale_tier(cost, q.key, k), o);
      if (!r) return r.error();
      return r->trace.step_time_s;
    };
    // Bisection on log2(k) over [-6, 6]: the step time falls as the tier gets faster.
    double lo = -6, hi = 6;
    auto at_hi = step_at(std::exp2(hi));
    if (!at_hi) return at_hi.error();
    q.simulated = true;
    if (*at_hi > target_step * (1 + 1e-9)) {
      q.reachable = false;
      q.best_efficiency = base.gpu_compute_s / *at_hi;
      q.short_ = true;
      out.push_back(q);
      continue;
    }
    auto at_lo = step_at(std::exp2(lo));
    if (!at_lo) return at_lo.error();
    if (*at_lo <= target_step) {
      hi = lo;  // even 1/64 of today's is enough
    } else {
      for (int i = 0; i < 8; ++i) {
        const double mid = 0.5 * (lo + hi);
        auto s = step_at(std::exp2(mid));
        if (!s) return s.error();
        (*s <= target_step ? hi : lo) = mid;
      }
    }
    q.need_GBps_per_gpu = q.has_GBps_per_gpu * std::exp2(hi);
    q.short_ = q.need_GBps_per_gpu > q.has_GBps_per_gpu * (1 + 1e-9);
    out.push_back(q);
  }
  return out;
}

}  // namespace zs::sim
