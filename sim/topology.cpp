#include "sim/topology.h"

#include <cassert>

namespace zs::sim {

std::string to_string(ResourceKind k) {
  switch (k) {
    case ResourceKind::gpu:
      return "gpu";
    case ResourceKind::cpu:
      return "cpu";
    case ResourceKind::pcie_h2d:
      return "pcie_h2d";
    case ResourceKind::pcie_d2h:
      return "pcie_d2h";
    case ResourceKind::host_down:
      return "host_down";
    case ResourceKind::host_up:
      return "host_up";
    case ResourceKind::nvme_read:
      return "nvme_read";
    case ResourceKind::nvme_write:
      return "nvme_write";
    case ResourceKind::nvlink_out:
      return "nvlink_out";
    case ResourceKind::nvlink_in:
      return "nvlink_in";
    case ResourceKind::nic_out:
      return "nic_out";
    case ResourceKind::nic_in:
      return "nic_in";
    case ResourceKind::pageable_h2d:
      return "pageable_h2d";
    case ResourceKind::pageable_d2h:
      return "pageable_d2h";
  }
  return "?";
}

const Route& Topology::route(int32_t src, int32_t dst) const {
  const int32_t i = route_index_[static_cast<size_t>(src) * hosts.size() + static_cast<size_t>(dst)];
  assert(i >= 0);
  return routes[static_cast<size_t>(i)];
}

bool Topology::has_route(int32_t src, int32_t dst) const {
  if (src < 0 || dst < 0 || src >= static_cast<int32_t>(hosts.size()) || dst >= static_cast<int32_t>(hosts.size()))
    return false;
  return route_index_[static_cast<size_t>(src) * hosts.size() + static_cast<size_t>(dst)] >= 0;
}

int32_t Topology::find_resource(const std::string& name) const {
  for (size_t i = 0; i < resources.size(); ++i)
    if (resources[i].name == name) return static_cast<int32_t>(i);
  return -1;
}

Topology make_topology(const core::CostModel& c, const TopologyShape& shape) {
  Topology t;
  t.shape = shape;
  const int64_t n = shape.local_ranks;
  auto add = [&](std::string name, ResourceKind k, int32_t gpu, double cap, double lat) {
    t.resources.push_back({std::move(name), k, gpu, cap, lat});
    return static_cast<int32_t>(t.resources.size() - 1);
  };
  for (int64_t i = 0; i < n; ++i) add("gpu" + std::to_string(i), ResourceKind::gpu, static_cast<int32_t>(i), 1.0, 0);
  add("cpu", ResourceKind::cpu, -1, 1.0, 0);
  std::vector<int32_t> h2d(n), d2h(n), pg_h2d(n), pg_d2h(n), nv_out(n), nv_in(n);
  for (int64_t i = 0; i < n; ++i) {
    const auto g = static_cast<int32_t>(i);
    h2d[i] = add("pcie_h2d" + std::to_string(i), ResourceKind::pcie_h2d, g, c.pcie_h2d_Bps, c.pcie_latency_s);
    d2h[i] = add("pcie_d2h" + std::to_string(i), ResourceKind::pcie_d2h, g, c.pcie_d2h_Bps, c.pcie_latency_s);
  }
  for (int64_t i = 0; i < n; ++i) {
    const auto g = static_cast<int32_t>(i);
    pg_h2d[i] = add("pageable_h2d" + std::to_string(i), ResourceKind::pageable_h2d, g, c.pcie_h2d_pageable_Bps, 0);
    pg_d2h[i] = add("pageable_d2h" + std::to_string(i), ResourceKind::pageable_d2h, g, c.pcie_d2h_pageable_Bps, 0);
  }
  const int32_t host_down = add("host_down", ResourceKind::host_down, -1, c.pcie_host_Bps, 0);
  const int32_t host_up = add("host_up", ResourceKind::host_up, -1, c.pcie_host_Bps, 0);
  const bool nvme = c.nvme_read_Bps > 0 && c.nvme_write_Bps > 0;
  int32_t nvme_r = -1, nvme_w = -1;
  if (nvme) {
    // The fastest a swap can be; the executor delays a swap of older data by the rest (core::nvme_swap_time_s).
    nvme_r =
        add("nvme_read", ResourceKind::nvme_read, -1, core::nvme_link_Bps(c, true), core::nvme_link_latency_s(c, true));
    nvme_w = add("nvme_write", ResourceKind::nvme_write, -1, core::nvme_link_Bps(c, false),
                 core::nvme_link_latency_s(c, false));
  }
  t.nvlink = c.nvlink_Bps > 0;
  if (t.nvlink) {
    for (int64_t i = 0; i < n; ++i) {
      const auto g = static_cast<int32_t>(i);
      nv_out[i] = add("nvlink_out" + std::to_string(i), ResourceKind::nvlink_out, g, c.nvlink_Bps, 0);
      nv_in[i] = add("nvlink_in" + std::to_string(i), ResourceKind::nvlink_in, g, c.nvlink_Bps, c.nvlink_latency_s);
    }
  }
  t.network = shape.nodes > 1 && c.nic_Bps > 0;
  int32_t nic_out = -1, nic_in = -1;
  if (t.network) {
    nic_out = add("nic_out", ResourceKind::nic_out, -1, c.nic_Bps, 0);
    nic_in = add("nic_in", ResourceKind::nic_in, -1, c.nic_Bps, c.nic_latency_s);
  }

  for (int64_t i = 0; i < n; ++i) t.hosts.push_back({"gpu" + std::to_string(i), static_cast<int32_t>(i), 1});
  t.hosts.push_back({"cpu", t.cpu_resource(), 1});
  t.hosts.push_back({"nvme", -1, 1});
  t.hosts.push_back({"remote", -1, 1});
  t.hosts.push_back({"timer", -1, 1 << 20});
  t.hosts.push_back({"pageable", -1, 1});

  const size_t H = t.hosts.size();
  t.route_index_.assign(H * H, -1);
  auto route = [&](int32_t s, int32_t d, std::vector<int32_t> links) {
    double lat = 0;
    for (int32_t l : links) lat += t.resources[static_cast<size_t>(l)].latency_s;
    t.route_index_[static_cast<size_t>(s) * H + static_cast<size_t>(d)] = static_cast<int32_t>(t.routes.size());
    t.routes.push_back({s, d, std::move(links), lat});
  };
  for (int64_t i = 0; i < n; ++i) {
    route(t.cpu_host(), t.gpu_host(i), {host_down, h2d[i]});
    route(t.gpu_host(i), t.cpu_host(), {d2h[i], host_up});
    route(t.pageable_host(), t.gpu_host(i), {host_down, h2d[i], pg_h2d[i]});
    route(t.gpu_host(i), t.pageable_host(), {d2h[i], host_up, pg_d2h[i]});
  }
  if (nvme) {
    route(t.nvme_host(), t.cpu_host(), {nvme_r});
    route(t.cpu_host(), t.nvme_host(), {nvme_w});
  }
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      if (i == j) continue;
      if (t.nvlink)
        route(t.gpu_host(i), t.gpu_host(j), {nv_out[i], nv_in[j]});
      else  // peer traffic through the root complex
        route(t.gpu_host(i), t.gpu_host(j), {d2h[i], host_up, host_down, h2d[j]});
    }
  if (t.network)
    for (int64_t i = 0; i < n; ++i) route(t.gpu_host(i), t.remote_host(), {nic_out, nic_in});
  return t;
}

}  // namespace zs::sim
