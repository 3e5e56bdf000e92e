// Topology: the simulated machine as plain data — one representative node's hosts (GPUs, the CPU, the NVMe
// array) and links (PCIe per GPU and direction, the shared host uplink, NVMe read/write, NVLink, the NIC), with
// the routes between hosts. The SimGrid adapter instantiates it; the summary uses it to account link traffic.
//   Topology t = make_topology(cost, {.nodes = 64, .gpus_per_node = 16, .local_ranks = 16});
//   const Route& r = t.route(t.cpu_host(), t.gpu_host(3));   // [host_down, pcie_h2d3]
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/cost_model.h"

namespace zs::sim {

// Nodes are symmetric (every node runs the same ops at the same time), so one node is simulated and its
// inter-node traffic leaves through its NIC and comes back through its own NIC's receive side, standing for
// the neighbour's identical traffic (docs/SIM.md "Symmetry").
enum class ResourceKind : uint8_t {
  gpu,        // time-shared executor (work in seconds of exclusive use)
  cpu,        // the node's CPU: CPU Adam and host casts (cores and DRAM as one executor)
  pcie_h2d,   // per GPU, host→GPU
  pcie_d2h,   // per GPU, GPU→host
  host_down,  // the node's shared PCIe host uplink, host→GPUs
  host_up,    // the same, GPUs→host
  nvme_read,  // all NVMe drives of the node (links: no Disk model, see DEPENDENCIES.md)
  nvme_write,
  nvlink_out,  // per GPU, NVLink/NVSwitch port (non-blocking switch)
  nvlink_in,
  nic_out,       // the node's network injection (full-bisection fabric)
  nic_in,        // and ejection
  pageable_h2d,  // per GPU: the driver's staging copy for host memory that is not pinned
  pageable_d2h
};
std::string to_string(ResourceKind k);

struct Resource {
  std::string name;  // "gpu3", "pcie_h2d3", "host_down", "nvme_read", "nic_out"
  ResourceKind kind = ResourceKind::gpu;
  int32_t gpu = -1;      // local GPU index for per-GPU resources
  double capacity = 0;   // links: bytes/s; executors: 1 (one second of work per second)
  double latency_s = 0;  // links only
  bool is_link() const { return kind != ResourceKind::gpu && kind != ResourceKind::cpu; }
};

struct HostSpec {
  std::string name;       // "gpu3", "cpu", "nvme", "remote", "timer", "pageable"
  int32_t resource = -1;  // the executor resource computing on it (gpu/cpu), -1 for endpoints
  int32_t cores = 1;      // "timer" has many: concurrent delays never share it
};

struct Route {
  int32_t src = -1, dst = -1;  // host ids
  std::vector<int32_t> links;  // resource ids in order
  double latency_s = 0;        // sum of link latencies
};

struct TopologyShape {
  int64_t nodes = 1;
  int64_t gpus_per_node = 1;
  int64_t local_ranks = 1;  // GPUs of the representative node that run ops (≤ gpus_per_node)
};

struct Topology {
  TopologyShape shape;
  std::vector<Resource> resources;
  std::vector<HostSpec> hosts;
  std::vector<Route> routes;
  bool nvlink = false;   // GPU↔GPU over NVLink (else through PCIe and the host)
  bool network = false;  // more than one node: a NIC exists

  int32_t gpu_host(int64_t i) const { return static_cast<int32_t>(i); }
  int32_t cpu_host() const { return static_cast<int32_t>(shape.local_ranks); }
  int32_t nvme_host() const { return cpu_host() + 1; }
  int32_t remote_host() const { return cpu_host() + 2; }  // "the next node": NIC loopback endpoint
  int32_t timer_host() const { return cpu_host() + 3; }
  int32_t pageable_host() const { return cpu_host() + 4; }  // host memory that is not pinned
  int32_t gpu_resource(int64_t i) const { return static_cast<int32_t>(i); }
  int32_t cpu_resource() const { return static_cast<int32_t>(shape.local_ranks); }
  // The route from host `src` to host `dst`; asserts that it exists.
  const Route& route(int32_t src, int32_t dst) const;
  bool has_route(int32_t src, int32_t dst) const;
  int32_t find_resource(const std::string& name) const;  // -1 when absent

 private:
  friend Topology make_topology(const core::CostModel&, const TopologyShape&);
  std::vector<int32_t> route_index_;  // [src * hosts + dst] → index in routes, -1 none
};

Topology make_topology(const core::CostModel& c, const TopologyShape& shape);

}  // namespace zs::sim
