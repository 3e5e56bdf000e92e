#include "sim/breakdown.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "core/memory.h"
#include "sim/intervals.h"

namespace zs::sim {
namespace {

using core::OpKind;
using core::TensorKind;
// Time within [a, b) that no interval of `busy` (merged) covers.
double uncovered(double a, double b, const std::vector<Interval>& busy) {
  double covered = 0;
  for (const auto& iv : busy) {
    if (iv.first >= b) break;
    covered += std::max(0.0, std::min(b, iv.second) - std::max(a, iv.first));
  }
  return std::max(0.0, (b - a) - covered);
}

std::string copy_direction(OpKind k) {
  switch (k) {
    case OpKind::h2d: return "host→GPU";
    case OpKind::d2h: return "GPU→host";
    case OpKind::nvme_read: return "NVMe→host";
    default: return "host→NVMe";
  }
}

// What a copy carries, by the tensor kind of its first tensor; optimizer states (master, m, v) are one kind.
std::pair<std::string, std::string> copy_what(TensorKind t) {
  switch (t) {
    case TensorKind::lp_param: return {"params", "16-bit parameters"};
    case TensorKind::lp_grad: return {"grads", "16-bit gradients"};
    case TensorKind::fp32_grad: return {"fp32_grads", "fp32 gradients"};
    case TensorKind::activation: return {"activations", "activation checkpoints"};
    default: return {"optimizer_states", "optimizer states (fp32 master, Adam m, v)"};
  }
}

struct PartBuilder {
  StepPart part;
  std::vector<Interval> intervals;
  double exposed_s = 0;  // passes that share an op add their share directly
};

}  // namespace

Breakdown breakdown(const core::Plan& plan, const SimResult& sim) {
  Breakdown b;
  const core::CostModel& c = sim.cost;
  b.threads = {c.cpu_threads_per_rank, c.cpu_ranks_per_node, c.cpu_threads_active, c.cpu_core_Bps / 1e9,
               c.cpu_numa_home, c.cpu_numa_nodes, c.cpu_threads_why};
  std::vector<int64_t> index_of;
  for (size_t k = 0; k < plan.ops.size(); ++k) {
    if (plan.ops[k].id >= index_of.size()) index_of.resize(plan.ops[k].id + 1, -1);
    index_of[plan.ops[k].id] = static_cast<int64_t>(k);
  }
  std::vector<Interval> compute;
  for (const auto& e : sim.trace.events)
    if (e.rank == 0 && (e.kind == OpKind::forward || e.kind == OpKind::backward || e.kind == OpKind::recompute ||
                        e.kind == OpKind::adam_gpu))
      compute.push_back({e.start_s, e.end_s});
  compute = merged(compute);

  std::vector<std::string> pass_order, copy_order;
  std::map<std::string, PartBuilder> parts;
  auto at = [&](std::vector<std::string>& order, const std::string& key, const std::string& label,
                const std::string& resource) -> PartBuilder& {
    auto [it, fresh] = parts.try_emplace(key);
    if (fresh) {
      order.push_back(key);
      it->second.part.key = key;
      it->second.part.label = label;
      it->second.part.name = label;  // passes set a shorter one
      it->second.part.resource = resource;
    }
    return it->second;
  };
  for (const auto& e : sim.trace.events) {
    if (e.rank != 0) continue;
    const core::Op& op = plan.ops[static_cast<size_t>(index_of[e.op])];
    const double d = e.end_s - e.start_s, hidden_not = uncovered(e.start_s, e.end_s, compute);
    auto add_pass = [&](const std::string& key, const std::string& name, const std::string& label, double share,
                        double bytes, double n) {
      PartBuilder& p = at(pass_order, key, label, key == "gpu_adam" ? "gpu" : "cpu");
      p.part.name = name;
      p.part.ops += 1;
      p.part.bytes += bytes;
      p.part.elements += n;
      p.part.busy_s += d * share;
      p.exposed_s += hidden_not * share;
    };
    const auto n = static_cast<double>(op.elements);
    switch (e.kind) {
      case OpKind::adam_cpu: {
        const core::CpuStepPasses t = core::cpu_step_passes(c, op.elements);
        const double total = t.unscale_s + t.adam_s, u = total > 0 ? t.unscale_s / total : 0;
        add_pass("cpu_unscale", "unscale (CPU)", "unscale_and_clip_grads, CPU (fp32 gradients: 8 B/param)", u,
                 n * c.unscale_bytes_per_param, n);
        add_pass("cpu_adam", "CPU Adam", "CPU Adam (DeepSpeedCPUAdam: fp32 param, grad, m, v: 28 B/param)", 1 - u,
                 n * c.adam_bytes_per_param, n);
        break;
      }
      case OpKind::cast_cpu:
        add_pass("cpu_cast", "fp32 -> 16-bit copy (CPU)", "fp32 -> 16-bit parameter copy, CPU", 1, static_cast<double>(op.bytes), 0);
        break;
      case OpKind::adam_gpu:
        add_pass("gpu_adam", "GPU Adam", "GPU Adam (fused, with the unscale)", 1, static_cast<double>(op.mem_bound_bytes), n);
        break;
      case OpKind::h2d:
      case OpKind::d2h:
      case OpKind::nvme_read:
      case OpKind::nvme_write: {
        const bool has_tensor = op.tensor >= 0 && static_cast<size_t>(op.tensor) < plan.tensors.size();
        const core::PlanTensor* x = has_tensor ? &plan.tensors[static_cast<size_t>(op.tensor)] : nullptr;
        const auto [what_key, what] = x ? copy_what(x->kind) : std::pair<std::string, std::string>{"data", "data"};
        const bool pcie = e.kind == OpKind::h2d || e.kind == OpKind::d2h;
        const bool pageable = pcie && ((x && x->home == core::Tier::cpu && !x->pinned) || op.pageable_host);
        const std::string key = core::to_string(e.kind) + "." + what_key + (pageable ? ".pageable" : "");
        PartBuilder& p = at(copy_order, key, what + " " + copy_direction(e.kind) + (pageable ? " (pageable)" : ""),
                            pcie ? "pcie" : "nvme");
        p.part.pageable = pageable;
        p.part.ops += 1;
        p.part.bytes += static_cast<double>(e.bytes);
        p.part.busy_s += d;
        p.intervals.push_back({e.start_s, e.end_s});
        break;
      }
      default:
        break;
    }
  }
  auto finish = [&](const std::vector<std::string>& order, std::vector<StepPart>& out) {
    for (const auto& key : order) {
      PartBuilder& p = parts[key];
      if (!p.intervals.empty()) {
        p.exposed_s = 0;
        for (const auto& iv : merged(p.intervals)) p.exposed_s += uncovered(iv.first, iv.second, compute);
      }
      p.part.exposed_s = p.exposed_s;
      p.part.rate_Bps = p.part.busy_s > 0 ? p.part.bytes / p.part.busy_s : 0;
      out.push_back(p.part);
    }
  };
  finish(pass_order, b.passes);
  finish(copy_order, b.copies);
  return b;
}

std::string breakdown_text(const Breakdown& b) {
  std::string o;
  char line[320];
  if (b.threads.active > 0) {
    std::snprintf(line, sizeof line,
                  "CPU threads      %lld per rank x %lld ranks, %lld running at %.1f GB/s per core; optimizer states on "
                  "%lld of %lld NUMA nodes (%s)\n",
                  static_cast<long long>(b.threads.per_rank), static_cast<long long>(b.threads.ranks_per_node),
                  static_cast<long long>(b.threads.active), b.threads.core_GBps,
                  static_cast<long long>(b.threads.numa_home), static_cast<long long>(b.threads.numa_nodes),
                  b.threads.why.c_str());
    o += line;
  }
  auto rows = [&](const char* title, const std::vector<StepPart>& v, bool copies) {
    if (v.empty()) return;
    o += std::string(title) + "\n";
    for (const auto& p : v) {
      const double per_op = p.ops > 0 ? p.bytes / static_cast<double>(p.ops) : 0;
      if (copies)
        std::snprintf(line, sizeof line, "  %-58s %8.3g s, %6.3g s exposed  %5lld x %-9s at %.2f GB/s\n",
                      p.label.c_str(), p.busy_s, p.exposed_s, static_cast<long long>(p.ops),
                      core::format_bytes(static_cast<int64_t>(per_op)).c_str(), p.rate_Bps / 1e9);
      else if (p.elements > 0)
        std::snprintf(line, sizeof line, "  %-58s %8.3g s, %6.3g s exposed  %.3g Gparam/s, %.2f GB/s\n",
                      p.label.c_str(), p.busy_s, p.exposed_s, p.busy_s > 0 ? p.elements / p.busy_s / 1e9 : 0,
                      p.rate_Bps / 1e9);
      else
        std::snprintf(line, sizeof line, "  %-58s %8.3g s, %6.3g s exposed  %.2f GB/s\n", p.label.c_str(),
                      p.busy_s, p.exposed_s, p.rate_Bps / 1e9);
      o += line;
    }
  };
  rows("optimizer passes (rank 0, simulated; the node's ranks share the CPU):", b.passes, false);
  rows("copies (rank 0, simulated):", b.copies, true);
  return o;
}

}  // namespace zs::sim
