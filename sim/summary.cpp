#include "sim/summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "sim/executor.h"
#include "sim/intervals.h"

namespace zs::sim {
namespace {

using core::OpKind;
bool is_gpu_compute(OpKind k) {
  return k == OpKind::forward || k == OpKind::backward || k == OpKind::recompute || k == OpKind::adam_gpu;
}

struct Category {
  const char* key;
  const char* label;
};
constexpr Category kCategories[] = {
    {"cpu_adam", "CPU Adam"},           {"cpu_cast", "CPU casts"},  {"pcie_h2d", "PCIe host→GPU"},
    {"pcie_d2h", "PCIe GPU→host"},      {"nvme_read", "NVMe read"}, {"nvme_write", "NVMe write"},
    {"collectives", "GPU collectives"},
};
int category_of(OpKind k) {
  switch (k) {
    case OpKind::adam_cpu:
      return 0;
    case OpKind::cast_cpu:
      return 1;
    case OpKind::h2d:
      return 2;
    case OpKind::d2h:
      return 3;
    case OpKind::nvme_read:
      return 4;
    case OpKind::nvme_write:
      return 5;
    case OpKind::allgather:
    case OpKind::reduce_scatter:
    case OpKind::allreduce:
      return 6;
    default:
      return -1;
  }
}

std::string pct(double f) {
  char b[32];
  std::snprintf(b, sizeof b, "%.0f%%", 100.0 * f);
  return b;
}
std::string gbps(double Bps) {
  char b[32];
  std::snprintf(b, sizeof b, Bps >= 10e9 ? "%.0f GB/s" : "%.1f GB/s", Bps / 1e9);
  return b;
}

// Plan op of each trace event: index_of[op id] → position in plan.ops.
struct OpIndex {
  const core::Plan& plan;
  std::vector<int64_t> index_of;
  explicit OpIndex(const core::Plan& p) : plan(p) {
    for (size_t k = 0; k < plan.ops.size(); ++k) {
      if (plan.ops[k].id >= index_of.size()) index_of.resize(plan.ops[k].id + 1, -1);
      index_of[plan.ops[k].id] = static_cast<int64_t>(k);
    }
  }
  const core::Op& operator()(const core::TraceEvent& e) const { return plan.ops[static_cast<size_t>(index_of[e.op])]; }
};

// Rank 0's events, its GPU compute and per-category busy intervals, and what it moved.
struct Rank0 {
  std::vector<const core::TraceEvent*> events;
  std::vector<Interval> compute_m;  // merged
  std::array<std::vector<Interval>, std::size(kCategories)> cat;
  double hw_flops = 0;
  std::array<double, std::size(kCategories)> bytes{};
  double adam_elements = 0;
};

Rank0 rank0_activity(const core::Trace& t, const OpIndex& op_of) {
  Rank0 r;
  std::vector<Interval> compute;
  for (const auto& e : t.events) {
    if (e.rank != 0) continue;
    r.events.push_back(&e);
    if (is_gpu_compute(e.kind)) {
      compute.push_back({e.start_s, e.end_s});
      r.hw_flops += e.flops;
    }
    const int c = category_of(e.kind);
    if (c >= 0) r.cat[static_cast<size_t>(c)].push_back({e.start_s, e.end_s});
    if (c >= 0) r.bytes[static_cast<size_t>(c)] += static_cast<double>(e.bytes);
    if (e.kind == OpKind::adam_cpu) r.adam_elements += static_cast<double>(op_of(e).elements);
  }
  r.compute_m = merged(compute);
  return r;
}

// GPU compute, phases, rates and each category's exposed time, from rank 0.
void fill_rank0_figures(Summary& s, const core::Plan& plan, const Rank0& r0, const core::CostModel& cost,
                        const SummaryOptions& o) {
  const double step = s.step_time_s;
  s.gpu_compute_s = length(r0.compute_m);
  s.gpu_efficiency = step > 0 ? s.gpu_compute_s / step : 0;
  const auto ph = core::phase_split(r0.events, step);
  s.forward_s = ph[0];
  s.backward_s = ph[1];
  s.optimizer_s = ph[2];
  if (step > 0) {
    s.tokens_per_s = static_cast<double>(plan.tokens_per_step) / step;
    s.samples_per_s = static_cast<double>(o.samples_per_step) / step;
    s.model_tflops_per_gpu = plan.model_flops_per_step / step / 1e12;
    s.hardware_tflops_per_gpu = r0.hw_flops / step / 1e12;
    s.mfu = plan.model_flops_per_step / step / cost.peak_flops;
  }
  for (size_t c = 0; c < std::size(kCategories); ++c) {
    const auto m = merged(r0.cat[c]);
    if (m.empty()) continue;
    Exposure x;
    x.key = kCategories[c].key;
    x.label = kCategories[c].label;
    x.active_s = length(m);
    x.exposed_s = x.active_s - overlap(m, r0.compute_m);
    s.exposed.push_back(x);
  }
}

// Resources of the node: link bytes over the topology's routes, executor work from the cost model; and the mean
// utilisation of each kind of resource.
void fill_resource_use(Summary& s, const core::Plan& plan, const SimResult& sim, const OpIndex& op_of) {
  const core::Trace& t = sim.trace;
  const Topology& topo = sim.topology;
  const core::CostModel& cost = sim.cost;
  const double step = t.step_time_s;
  std::vector<double> res_bytes(topo.resources.size(), 0), res_busy(topo.resources.size(), 0);
  for (const auto& e : t.events) {
    const core::Op& op = op_of(e);
    auto add_route = [&](int32_t src, int32_t dst, double b) {
      for (int32_t l : topo.route(src, dst).links) res_bytes[static_cast<size_t>(l)] += b;
    };
    switch (e.kind) {
      case OpKind::h2d:
      case OpKind::d2h:
      case OpKind::nvme_read:
      case OpKind::nvme_write:
        if (e.bytes > 0) {
          const auto [src, dst] = transfer_endpoints(plan, topo, op, e.rank);
          add_route(src, dst, static_cast<double>(e.bytes));
        }
        break;
      case OpKind::allgather:
      case OpKind::reduce_scatter:
      case OpKind::allreduce: {
        const CollectivePlan cp = plan_collective(e.kind, e.bytes, op.group_ranks, topo.shape);
        if (cp.wire_bytes <= 0) break;
        const int64_t g = cp.local_group, first = (e.rank / g) * g;
        const int64_t members = std::min(g, topo.shape.local_ranks - first);
        const int32_t dst = ring_next(topo, cp, first, members, e.rank - first);
        if (dst != topo.gpu_host(e.rank)) add_route(topo.gpu_host(e.rank), dst, cp.wire_bytes);
        break;
      }
      case OpKind::forward:
      case OpKind::backward:
      case OpKind::recompute:
      case OpKind::adam_gpu:
        res_busy[static_cast<size_t>(topo.gpu_resource(e.rank))] += e.end_s - e.start_s;
        break;
      case OpKind::adam_cpu:
      case OpKind::cast_cpu:
        res_busy[static_cast<size_t>(topo.cpu_resource())] += core::compute_time_s(cost, op);
        break;
      default:
        break;
    }
  }
  std::vector<std::pair<std::string, std::pair<double, int>>> by_kind;  // kind → (sum of utilisation, count)
  for (size_t i = 0; i < topo.resources.size(); ++i) {
    const Resource& r = topo.resources[i];
    ResourceUse u;
    u.name = r.name;
    u.kind = to_string(r.kind);
    u.capacity = r.capacity;
    u.bytes = res_bytes[i];
    u.busy_s = r.is_link() ? (r.capacity > 0 ? res_bytes[i] / r.capacity : 0) : res_busy[i];
    u.utilization = step > 0 ? u.busy_s / step : 0;
    s.resources.push_back(u);
    auto it = std::find_if(by_kind.begin(), by_kind.end(), [&](auto& p) { return p.first == u.kind; });
    if (it == by_kind.end())
      by_kind.push_back({u.kind, {u.utilization, 1}});
    else
      it->second.first += u.utilization, it->second.second += 1;
  }
  for (const auto& [k, v] : by_kind) s.utilization.push_back({k, v.first / v.second});
}

// Bottleneck: the largest share of the step among GPU compute and each exposed category. One sentence names
// the leader and every other share above 1%, so the words change with the shares, not at a threshold.
void fill_bottleneck(Summary& s) {
  const double step = s.step_time_s;
  std::vector<const Exposure*> order;
  for (const auto& x : s.exposed)
    if (x.exposed_s > 0) order.push_back(&x);
  std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->exposed_s > b->exposed_s; });
  if (step <= 0) {
    s.bottleneck_key = "none";
    s.bottleneck = "nothing to simulate";
    return;
  }
  const bool compute_leads = order.empty() || s.gpu_compute_s >= order[0]->exposed_s;
  std::vector<std::string> rest;
  if (compute_leads) {
    s.bottleneck_key = "gpu_compute";
    s.bottleneck = "GPU compute: " + pct(s.gpu_efficiency) + " of the step (MFU " + pct(s.mfu) + ")";
  } else {
    s.bottleneck_key = order[0]->key;
    s.bottleneck = order[0]->label + ": " + pct(order[0]->exposed_s / step) + " of the step, exposed (GPU computes " +
                   pct(s.gpu_efficiency) + ")";
  }
  for (size_t i = compute_leads ? 0 : 1; i < order.size() && rest.size() < 3; ++i)
    if (order[i]->exposed_s >= 0.01 * step) rest.push_back(order[i]->label + " " + pct(order[i]->exposed_s / step));
  const std::string lead = compute_leads ? "; exposed: " : "; also exposed: ";
  for (size_t i = 0; i < rest.size(); ++i) s.bottleneck += (i == 0 ? lead : ", ") + rest[i];
}

void fill_capacity_warnings(Summary& s, const core::Plan& plan, const core::Trace& t) {
  static const char* const kTier[3] = {"GPU", "CPU", "NVMe"};
  for (size_t k = 0; k < 3; ++k)
    if (plan.capacity_bytes[k] > 0 && t.peak_bytes[k] > plan.capacity_bytes[k])
      s.warnings.push_back(std::string("simulated ") + kTier[k] + " peak " + core::format_bytes(t.peak_bytes[k]) +
                           " exceeds its " + core::format_bytes(plan.capacity_bytes[k]) +
                           ": ops that allocate run earlier in time than in program order (plan peak " +
                           core::format_bytes(plan.peak_bytes[k]) + "); the plan lacks a dependency bounding them");
}

// Requirements for the target efficiency: traffic per GPU ÷ (GPU compute time ÷ E). Rates the node shares among
// its L GPUs count 1/L per GPU.
void fill_requirements(Summary& s, const Rank0& r0, const core::CostModel& cost, double L, const SummaryOptions& o) {
  const double target_step = o.target_efficiency > 0 ? s.gpu_compute_s / o.target_efficiency : 0;
  auto res_by_name = [&](const std::string& n) -> const ResourceUse* {
    for (const auto& u : s.resources)
      if (u.name == n) return &u;
    return nullptr;
  };
  auto require = [&](const std::string& key, const std::string& label, double bytes, double has_Bps) {
    if (bytes <= 0 || target_step <= 0) return;
    Requirement q;
    q.key = key;
    q.label = label;
    q.bytes_per_gpu = bytes;
    q.need_GBps_per_gpu = bytes / target_step / 1e9;
    q.has_GBps_per_gpu = has_Bps / 1e9;
    q.short_ = q.need_GBps_per_gpu > q.has_GBps_per_gpu;
    s.required.push_back(q);
  };
  require("pcie_h2d", "PCIe host→GPU", r0.bytes[2], std::min(cost.pcie_h2d_Bps, cost.pcie_host_Bps / L));
  require("pcie_d2h", "PCIe GPU→host", r0.bytes[3], std::min(cost.pcie_d2h_Bps, cost.pcie_host_Bps / L));
  require("nvme_read", "NVMe read", r0.bytes[4], cost.nvme_read_Bps / L);
  require("nvme_write", "NVMe write", r0.bytes[5], cost.nvme_write_Bps / L);
  if (const ResourceUse* nic = res_by_name("nic_out"))
    require("network", "network (NIC)", nic->bytes / L, cost.nic_Bps / L);
  if (const ResourceUse* nv = res_by_name("nvlink_out0")) require("nvlink", "NVLink", nv->bytes, cost.nvlink_Bps);
  require("cpu_adam", "CPU Adam DRAM traffic", r0.adam_elements * cost.adam_bytes_per_param,
          cost.cpu_adam_params_per_s * cost.adam_bytes_per_param / L);
}

}  // namespace

Summary summarize(const core::Plan& plan, const SimResult& sim, const SummaryOptions& o) {
  Summary s;
  const core::Trace& t = sim.trace;
  s.step_time_s = t.step_time_s;
  s.peak_bytes = t.peak_bytes;
  s.target_efficiency = o.target_efficiency;
  const OpIndex op_of(plan);
  const Rank0 r0 = rank0_activity(t, op_of);
  fill_rank0_figures(s, plan, r0, sim.cost, o);
  fill_resource_use(s, plan, sim, op_of);
  fill_bottleneck(s);
  fill_capacity_warnings(s, plan, t);
  fill_requirements(s, r0, sim.cost, static_cast<double>(sim.topology.shape.local_ranks), o);
  return s;
}

std::string summary_text(const Summary& s) {
  std::string o;
  char b[256];
  std::snprintf(b, sizeof b, "step time        %.4g s  (forward %.3g s, backward %.3g s, optimizer %.3g s)\n",
                s.step_time_s, s.forward_s, s.backward_s, s.optimizer_s);
  o += b;
  std::snprintf(b, sizeof b, "throughput       %.4g tokens/s, %.4g samples/s\n", s.tokens_per_s, s.samples_per_s);
  o += b;
  std::snprintf(b, sizeof b,
                "TFLOPS per GPU   %.1f model FLOPs, %.1f hardware GEMM FLOPs (recompute included); MFU %s\n",
                s.model_tflops_per_gpu, s.hardware_tflops_per_gpu, pct(s.mfu).c_str());
  o += b;
  o += "bottleneck       " + s.bottleneck + "\n";
  o += "utilisation      ";
  bool first = true;
  for (const auto& [k, u] : s.utilization) {
    if (u <= 0) continue;
    o += (first ? "" : ", ") + k + " " + pct(u);
    first = false;
  }
  o += "\n";
  if (!s.exposed.empty()) {
    o += "exposed          ";
    first = true;
    for (const auto& x : s.exposed) {
      std::snprintf(b, sizeof b, "%s%s %.3g s of %.3g s", first ? "" : ", ", x.label.c_str(), x.exposed_s, x.active_s);
      o += b;
      first = false;
    }
    o += "\n";
  }
  if (!s.required.empty()) {
    std::snprintf(b, sizeof b, "for %s GPU efficiency (now %s), per GPU%s:\n", pct(s.target_efficiency).c_str(),
                  pct(s.gpu_efficiency).c_str(),
                  s.required[0].simulated ? ", each tier scaled alone and re-simulated" : " (full-overlap bound)");
    o += b;
    for (const auto& q : s.required) {
      if (q.simulated && !q.reachable) {
        o += "  " + q.label + " alone cannot reach it (64x its " + gbps(q.has_GBps_per_gpu * 1e9) + " gives " +
             pct(q.best_efficiency) + ")\n";
        continue;
      }
      o += "  " + q.label + (q.simulated ? " needs " : " needs at least ") + gbps(q.need_GBps_per_gpu * 1e9) +
           ", has " + gbps(q.has_GBps_per_gpu * 1e9) + (q.short_ ? "  <- short" : "") + "\n";
    }
  }
  return o;
}

}  // namespace zs::sim
