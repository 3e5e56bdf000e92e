// Hand-made plans and an exact cost model for the simulator's golden tests: every rate is a round number and
// every efficiency 1, so the expected times are hand computations.
#pragma once

#include <initializer_list>
#include <vector>

#include "core/cost_model.h"
#include "core/plan.h"

namespace zs::test {

inline core::CostModel exact_cost() {
  core::CostModel c;
  c.peak_flops = 100e12;
  c.gemm_efficiency_max = 1.0;
  c.gemm_efficiency_fixed = true;
  c.block_forward_efficiency = c.block_backward_efficiency = c.head_efficiency = 1.0;
  c.hbm_Bps = 1e12;
  c.kernel_launch_s = 0;
  c.cpu_adam_params_per_s = 1e9;
  c.unscale_bytes_per_param = 0;  // CPU Adam alone; test_simulator's CPU Adam section adds the unscale pass back
  c.dram_Bps = c.cast_Bps = 50e9;
  c.pcie_h2d_Bps = c.pcie_d2h_Bps = 10e9;
  c.pcie_host_Bps = 40e9;
  c.pcie_h2d_pageable_Bps = c.pcie_d2h_pageable_Bps = 5e9;
  c.pcie_latency_s = 10e-6;
  c.nvme_read_Bps = 3e9;
  c.nvme_write_Bps = 2e9;
  c.nvme_read_latency_s = 50e-6;
  c.nvme_write_latency_s = 80e-6;
  c.nvlink_Bps = 100e9;
  c.nvlink_latency_s = 1e-6;
  c.nic_Bps = 50e9;
  c.nic_latency_s = 5e-6;
  return c;
}

// Builds a plan of one rank's ops (replicated over the simulated GPUs by the simulator).
class PlanBuilder {
 public:
  explicit PlanBuilder(int64_t ranks = 1) {
    p_.ranks = ranks;
    p_.ranks_per_node = ranks;
  }
  uint32_t add(core::Stream s, core::OpKind k, std::initializer_list<uint32_t> deps = {}) {
    core::Op o;
    o.id = static_cast<uint32_t>(p_.ops.size());
    o.stream = s;
    o.kind = k;
    o.deps = deps;
    p_.ops.push_back(o);
    return o.id;
  }
  uint32_t compute(double flops, std::initializer_list<uint32_t> deps = {}) {
    uint32_t id = add(core::Stream::compute, core::OpKind::forward, deps);
    p_.ops[id].gemm_flops = flops;
    p_.ops[id].layer = 0;
    return id;
  }
  uint32_t transfer(core::OpKind k, int64_t bytes, std::initializer_list<uint32_t> deps = {}) {
    const core::Stream s = k == core::OpKind::h2d         ? core::Stream::h2d
                           : k == core::OpKind::d2h       ? core::Stream::d2h
                           : k == core::OpKind::nvme_read ? core::Stream::nvme_read
                                                          : core::Stream::nvme_write;
    uint32_t id = add(s, k, deps);
    p_.ops[id].bytes = bytes;
    return id;
  }
  uint32_t collective(core::OpKind k, int64_t bytes, int32_t group, std::initializer_list<uint32_t> deps = {}) {
    uint32_t id = add(core::Stream::comm, k, deps);
    p_.ops[id].bytes = bytes;
    p_.ops[id].group_ranks = group;
    return id;
  }
  core::Op& op(uint32_t id) { return p_.ops[id]; }
  core::Plan& plan() { return p_; }

 private:
  core::Plan p_;
};

}  // namespace zs::test
