// Ranked fixes for a config that does not fit (declared in memory.h). Each candidate is one change a DeepSpeed
// user would make, re-evaluated with the full memory model; cost ranks follow the expected slowdown.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>

#include "core/memory.h"
#include "core/param_coordinator.h"

namespace zs::core {
namespace {

struct Candidate {
  std::string what;
  int cost_rank;
  std::function<bool(Strategy&)> apply;  // false: not applicable
};

std::string sci(int64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0e", static_cast<double>(v));
  std::string s = buf;
  s.erase(std::remove(s.begin(), s.end(), '+'), s.end());
  auto pos = s.find("e0");
  if (pos != std::string::npos) s.erase(pos + 1, 1);
  return s;
}

// Overflow score: the worst required/capacity ratio over tiers, plus a penalty for DeepSpeed problems.
double pressure(const MemoryReport& r) {
  double worst = 0;
  for (Tier t : kTiers) {
    const auto& tr = r.tier(t);
    if (tr.required_bytes == 0) continue;
    worst = std::max(worst, tr.capacity_bytes > 0 ? static_cast<double>(tr.required_bytes) / tr.capacity_bytes : 1e9);
  }
  return worst + static_cast<double>(r.problems.size());
}

// An NVMe offload's folder when the config names none.
void default_nvme_path(std::string& path) {
  if (path.empty()) path = "/local_nvme";
}

// Cost 0: settings that shrink a buffer without slowing the step.
void add_buffer_candidates(std::vector<Candidate>& c, const ModelSpec& m, const Strategy& base) {
  const auto& z = base.zero;
  if (z.reduce_bucket_size > 50000000)
    c.push_back({"reduce_bucket_size " + sci(z.reduce_bucket_size) + " → 5e7", 0, [](Strategy& s) {
                   s.zero.reduce_bucket_size = 50000000;
                   return true;
                 }});
  if (z.stage >= 1 && z.stage <= 2 && z.overlap_comm)
    c.push_back({"overlap_comm → false (one IPG bucket instead of two)", 0, [](Strategy& s) {
                   s.zero.overlap_comm = false;
                   return true;
                 }});
  if (z.stage == 3 && z.max_reuse_distance > 0)
    c.push_back({"stage3_max_reuse_distance " + sci(z.max_reuse_distance) + " → 0", 0, [](Strategy& s) {
                   s.zero.max_reuse_distance = 0;
                   return true;
                 }});
  if (z.stage == 3 && z.offload_optimizer.device == OffloadDevice::nvme && z.sub_group_size > 100000000)
    c.push_back(
        {"sub_group_size " + sci(z.sub_group_size) + " → 1e8 (smaller optimizer swap buffers)", 0, [](Strategy& s) {
           s.zero.sub_group_size = 100000000;
           return true;
         }});
  if (z.stage == 3 && z.offload_param.device == OffloadDevice::nvme) {
    PartitionSizes ps = partition_sizes(m, base);
    // Parameters kept gathered hold their swap buffers: enough buffers for the most the replay had in use.
    const CoordinatorReplay rep =
        replay_coordinator(m, module_trace(m, base.activation_checkpointing.enabled), z, param_swap(m, base));
    if (rep.swap_buffer_shortfall > 0) {
      const int64_t need = rep.peak_swap_buffers;
      c.push_back(
          {"offload_param.buffer_count " + std::to_string(z.offload_param.buffer_count) + " → " + std::to_string(need),
           0, [need](Strategy& s) {
             s.zero.offload_param.buffer_count = need;
             return true;
           }});
    }
    if (ps.largest_nvme_param_partition > z.offload_param.buffer_size) {
      int64_t need = ps.largest_nvme_param_partition;
      c.push_back({"offload_param.buffer_size " + sci(z.offload_param.buffer_size) + " → " + std::to_string(need), 0,
                   [need](Strategy& s) {
                     s.zero.offload_param.buffer_size = need;
                     return true;
                   }});
    }
  }
  if (z.stage == 3 && z.offload_optimizer.device == OffloadDevice::nvme) {
    const auto& oo = z.offload_optimizer;
    int64_t need = (oo.pipeline_read && oo.pipeline_write) ? 12 : (oo.pipeline_read || oo.pipeline_write) ? 8 : 4;
    if (oo.buffer_count < need)
      c.push_back({"offload_optimizer.buffer_count " + std::to_string(oo.buffer_count) + " → " + std::to_string(need),
                   0, [need](Strategy& s) {
                     s.zero.offload_optimizer.buffer_count = need;
                     return true;
                   }});
  }
}

// Costs 1-3: a smaller micro batch, activation checkpointing, a higher ZeRO stage.
void add_batch_and_stage_candidates(std::vector<Candidate>& c, const Strategy& base) {
  const auto& z = base.zero;
  if (base.micro_batch_per_gpu >= 2) {
    int64_t mb = base.micro_batch_per_gpu, ga = base.gradient_accumulation_steps;
    c.push_back({"micro batch " + std::to_string(mb) + " → " + std::to_string(mb / 2) +
                     " (gradient_accumulation_steps " + std::to_string(ga) + " → " + std::to_string(ga * 2) + ")",
                 1, [](Strategy& s) {
                   if (s.micro_batch_per_gpu % 2) return false;
                   s.micro_batch_per_gpu /= 2;
                   s.gradient_accumulation_steps *= 2;
                   return true;
                 }});
  }
  if (!base.activation_checkpointing.enabled)
    c.push_back({"activation checkpointing on (--checkpoint-activations / gradient_checkpointing)", 2, [](Strategy& s) {
                   s.activation_checkpointing.enabled = true;
                   s.run.checkpoint_activations = true;
                   return true;
                 }});
  if (z.stage < 3 && base.world() > 1)
    c.push_back({"stage " + std::to_string(z.stage) + " → " + std::to_string(z.stage == 0 ? 2 : z.stage + 1), 3,
                 [](Strategy& s) {
                   s.zero.stage = s.zero.stage == 0 ? 2 : s.zero.stage + 1;
                   s.zero.overlap_comm = s.zero.stage == 3;
                   return true;
                 }});
}

// Costs 4-8: offloading the optimizer, the parameters or the checkpoints to the CPU or NVMe.
void add_offload_candidates(std::vector<Candidate>& c, const Hardware& hw, const Strategy& base) {
  const auto& z = base.zero;
  if (z.offload_optimizer.device == OffloadDevice::none)
    c.push_back({std::string(z.stage == 0 ? "stage 2 + " : "") + "offload_optimizer → cpu", 4, [](Strategy& s) {
                   if (s.zero.stage == 0) s.zero.stage = 2;
                   s.zero.offload_optimizer.device = OffloadDevice::cpu;
                   return true;
                 }});
  if (z.offload_param.device == OffloadDevice::none)
    c.push_back({std::string(z.stage < 3 ? "stage 3 + " : "") + "offload_param → cpu" +
                     (z.offload_optimizer.device == OffloadDevice::none ? " + offload_optimizer → cpu" : ""),
                 5, [](Strategy& s) {
                   if (s.zero.stage < 3) s.zero.overlap_comm = true;
                   s.zero.stage = 3;
                   s.zero.offload_param.device = OffloadDevice::cpu;
                   if (s.zero.offload_optimizer.device == OffloadDevice::none)
                     s.zero.offload_optimizer.device = OffloadDevice::cpu;
                   return true;
                 }});
  if (base.activation_checkpointing.enabled && !base.activation_checkpointing.cpu_checkpointing)
    c.push_back({"activation_checkpointing.cpu_checkpointing → true", 6, [](Strategy& s) {
                   s.activation_checkpointing.cpu_checkpointing = true;
                   return true;
                 }});
  if (hw.nvme.drives > 0) {
    if (z.offload_optimizer.device != OffloadDevice::nvme)
      c.push_back({std::string(z.stage < 3 ? "stage 3 + " : "") + "offload_optimizer → nvme", 7, [](Strategy& s) {
                     if (s.zero.stage < 3) s.zero.overlap_comm = true;
                     s.zero.stage = 3;
                     s.zero.offload_optimizer.device = OffloadDevice::nvme;
                     default_nvme_path(s.zero.offload_optimizer.nvme_path);
                     return true;
                   }});
    if (z.offload_param.device != OffloadDevice::nvme)
      c.push_back({std::string(z.stage < 3 ? "stage 3 + " : "") + "offload_param → nvme", 8, [](Strategy& s) {
                     if (s.zero.stage < 3) s.zero.overlap_comm = true;
                     s.zero.stage = 3;
                     s.zero.offload_param.device = OffloadDevice::nvme;
                     default_nvme_path(s.zero.offload_param.nvme_path);
                     if (s.zero.offload_optimizer.device == OffloadDevice::none)
                       s.zero.offload_optimizer.device = OffloadDevice::cpu;
                     return true;
                   }});
  }
}

// Costs 9-10: more GPUs (every GPU of a node, twice the nodes).
void add_scale_out_candidates(std::vector<Candidate>& c, const Hardware& hw, const Strategy& base) {
  const auto& z = base.zero;
  if (base.run.gpus_per_node < hw.gpus_per_node)
    c.push_back(
        {"use all " + std::to_string(hw.gpus_per_node) + " GPUs per node (--gpus-per-node)", 9, [&hw](Strategy& s) {
           int64_t old_world = s.world();
           s.run.gpus_per_node = hw.gpus_per_node;
           s.train_batch_size = s.train_batch_size / old_world * s.world();
           return true;
         }});
  if (z.stage >= 1)
    c.push_back({"nodes " + std::to_string(base.run.nodes) + " → " + std::to_string(base.run.nodes * 2) + " (--nodes)",
                 10, [](Strategy& s) {
                   s.run.nodes *= 2;
                   s.train_batch_size *= 2;
                   return true;
                 }});
}

// Every single change that applies to `base`, in order of cost_rank (the expected slowdown).
std::vector<Candidate> candidates(const ModelSpec& m, const Hardware& hw, const Strategy& base) {
  std::vector<Candidate> c;
  add_buffer_candidates(c, m, base);
  add_batch_and_stage_candidates(c, base);
  add_offload_candidates(c, hw, base);
  add_scale_out_candidates(c, hw, base);
  return c;
}

std::string effect(const MemoryReport& before, const MemoryReport& after, Tier t) {
  std::string u = t == Tier::gpu ? "GPU" : t == Tier::cpu ? "CPU" : "NVMe";
  return u + " " + format_bytes(before.tier(t).required_bytes) + " → " + format_bytes(after.tier(t).required_bytes);
}

std::string verdict_tail(const MemoryReport& after) {
  if (after.fits) return "";
  for (Tier t : kTiers) {
    const auto& tr = after.tier(t);
    if (!tr.fits() && tr.required_bytes > 0)
      return " (still short: " + to_string(t) + " needs " + format_bytes(tr.required_bytes) + ", has " +
             format_bytes(tr.capacity_bytes) + ")";
  }
  return after.problems.empty() ? "" : " (still: " + after.problems.front() + ")";
}

}  // namespace

std::vector<Suggestion> suggest_fixes(const ModelSpec& m, const Hardware& hw, const Strategy& s, const MemoryOptions& o) {
  const MemoryReport base = memory_model(m, hw, s, o);
  if (base.fits) return {};
  const Tier bind = base.binding.value_or(Tier::gpu);
  const double base_pressure = pressure(base);
  std::vector<Suggestion> out;

  for (const auto& c : candidates(m, hw, s)) {
    Strategy t = s;
    if (!c.apply(t)) continue;
    MemoryReport r = memory_model(m, hw, t, o);
    if (pressure(r) >= base_pressure - 1e-9 && r.problems.size() >= base.problems.size()) continue;
    out.push_back({c.what + ": " + effect(base, r, bind) + verdict_tail(r), c.cost_rank, r.fits, t});
  }
  std::stable_sort(out.begin(), out.end(), [](const Suggestion& a, const Suggestion& b) {
    if (a.fits != b.fits) return a.fits;
    return a.cost_rank < b.cost_rank;
  });

  // Nothing single fits: the cheapest pair that fits (by its dearest change, then the sum of ranks); failing
  // that, combine greedily, each time taking the change that lowers the pressure most.
  if (out.empty() || !out.front().fits) {
    const auto cands = candidates(m, hw, s);
    std::optional<Suggestion> best_pair;
    std::pair<int, int> best_cost{1 << 30, 1 << 30};
    for (size_t i = 0; i < cands.size(); ++i) {
      Strategy a = s;
      if (!cands[i].apply(a)) continue;
      for (const auto& second : candidates(m, hw, a)) {
        if (second.what == cands[i].what) continue;
        std::pair<int, int> cost{std::max(cands[i].cost_rank, second.cost_rank), cands[i].cost_rank + second.cost_rank};
        if (cost >= best_cost) continue;
        Strategy b = a;
        if (!second.apply(b)) continue;
        MemoryReport r = memory_model(m, hw, b, o);
        if (!r.fits) continue;
        best_cost = cost;
        best_pair = Suggestion{cands[i].what + " + " + second.what + ": " + effect(base, r, bind), cost.first, true, b};
      }
    }
    if (best_pair) {
      out.insert(out.begin(), *best_pair);
    } else {
      Strategy cur = s;
      MemoryReport cur_r = base;
      std::string text;
      int rank = 0;
      for (int step = 0; step < 5 && !cur_r.fits; ++step) {
        double best = pressure(cur_r);
        std::optional<Strategy> pick;
        std::string pick_what;
        int pick_rank = 0;
        for (const auto& c : candidates(m, hw, cur)) {
          Strategy t = cur;
          if (!c.apply(t)) continue;
          double p = pressure(memory_model(m, hw, t, o)) + 0.01 * c.cost_rank;  // prefer cheaper among near-equal
          if (p < best - 1e-9) {
            best = p;
            pick = t;
            pick_what = c.what;
            pick_rank = c.cost_rank;
          }
        }
        if (!pick) break;
        cur = *pick;
        cur_r = memory_model(m, hw, cur, o);
        text += (text.empty() ? "" : " + ") + pick_what;
        rank = std::max(rank, pick_rank);
      }
      if (text.find(" + ") != std::string::npos)
        out.insert(out.begin() + (cur_r.fits ? 0 : static_cast<long>(out.size())),
                   Suggestion{text + ": " + effect(base, cur_r, bind) + verdict_tail(cur_r), rank, cur_r.fits, cur});
    }
  }
  // Hardware facts close the list: what each overflowing tier needs as configured ("needs 1.3 TiB NVMe").
  for (Tier t : kTiers) {
    const auto& tr = base.tier(t);
    if (tr.required_bytes == 0 || tr.fits()) continue;
    std::string u = t == Tier::gpu ? "GPU memory per GPU" : t == Tier::cpu ? "CPU DRAM per node" : "NVMe per node";
    out.push_back({"needs " + format_bytes(tr.required_bytes) + " " + u + ", has " + format_bytes(tr.capacity_bytes), 11,
                   false, s});
  }
  return out;
}

}  // namespace zs::core
