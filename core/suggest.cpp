// Ranked fixes for a config that does not fit (declared in memory.h). Each candidate is a patch a DeepSpeed user
// would write: ds_config keys (as the file names them) and run settings outside it. A candidate is evaluated by
// reading the file again with the patch (evaluate_patch, patch.h), so what it promises is what the patched file
// gives; a patch the reader refuses is not offered. Cost ranks follow the expected slowdown.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <optional>

#include "core/layout.h"
#include "core/memory.h"
#include "core/param_coordinator.h"
#include "core/patch.h"

namespace zs::core {
namespace {

using nlohmann::json;

struct Candidate {
  explicit Candidate(int rank, std::vector<ConfigChange> c = {}, std::vector<RunChange> r = {}, std::string w = "")
      : cost_rank(rank), changes(std::move(c)), run_changes(std::move(r)), why(std::move(w)) {}
  int cost_rank = 0;
  std::vector<ConfigChange> changes;
  std::vector<RunChange> run_changes;
  std::string why;  // after the keys in the label: " (one IPG bucket instead of two)"
  // The intended effect happened (e.g. the micro batch really halved); empty: any re-read counts.
  std::function<bool(const Strategy& before, const Strategy& after)> check;
};

// A configuration reached from the base by a patch, read again.
struct Point {
  std::vector<ConfigChange> changes;
  std::vector<RunChange> run_changes;
  std::string why;
  Strategy s;
  json raw;  // the ds_config JSON the reader saw: the file, the run's config_changes, then this patch
};

const json* at(const json& raw, const std::string& path) {
  const json* node = &raw;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    if (!node->is_object()) return nullptr;
    auto it = node->find(path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (it == node->end()) return nullptr;
    node = &*it;
    if (dot == std::string::npos) return node;
    start = dot + 1;
  }
}
bool given(const json& raw, const std::string& path) {
  const json* v = at(raw, path);
  return v && !v->is_null();
}
ConfigChange set(std::string path, json value) { return {std::move(path), std::move(value)}; }

// The name the file gives a stage-3 key: stage3_<field> (DeepSpeed's alias, as users write it) unless the file
// uses the field name itself; both at once is an error in DeepSpeed (strategy_zero.cpp check_stage3_keys).
std::string stage3_key(const json& raw, const std::string& field) {
  if (!given(raw, "zero_optimization.stage3_" + field) && given(raw, "zero_optimization." + field))
    return "zero_optimization." + field;
  return "zero_optimization.stage3_" + field;
}

void raise_stage(Candidate& k, const Strategy& s, int stage) {
  if (s.zero.stage < stage) k.changes.push_back(set("zero_optimization.stage", stage));
}

// offload_<block>.device → device, dropping the deprecated boolean it replaces (DeepSpeed asserts on both) and
// naming an NVMe folder when the block has none (DeepSpeed asserts nvme_path for device nvme).
void offload_to(Candidate& k, const json& raw, const std::string& block, const char* deprecated,
                const std::string& device) {
  const std::string z = "zero_optimization.";
  if (at(raw, z + deprecated)) k.changes.push_back(set(z + deprecated, nullptr));
  k.changes.push_back(set(z + block + ".device", device));
  const json* path = at(raw, z + block + ".nvme_path");
  if (device == "nvme" && !(path && path->is_string() && !path->get<std::string>().empty()))
    k.changes.push_back(set(z + block + ".nvme_path", "/local_nvme"));
}

// Cost 0: settings that shrink a buffer without slowing the step.
void add_buffer_candidates(std::vector<Candidate>& c, const ModelSpec& m, const Point& p) {
  const Strategy& base = p.s;
  const auto& z = base.zero;
  if (z.reduce_bucket_size > 50000000)
    c.push_back(Candidate(0, {set("zero_optimization.reduce_bucket_size", 50000000)}));
  if (z.stage >= 1 && z.stage <= 2 && z.overlap_comm)
    c.push_back(Candidate(0, {set("zero_optimization.overlap_comm", false)}, {}, " (one IPG bucket instead of two)"));
  if (z.stage == 3 && z.max_reuse_distance > 0)
    c.push_back(Candidate(0, {set(stage3_key(p.raw, "max_reuse_distance"), 0)}));
  if (z.stage == 3 && z.offload_optimizer.device == OffloadDevice::nvme && z.sub_group_size > 100000000)
    c.push_back(
        Candidate(0, {set("zero_optimization.sub_group_size", 100000000)}, {}, " (smaller optimizer swap buffers)"));
  if (z.stage == 3 && z.offload_param.device == OffloadDevice::nvme) {
    PartitionSizes ps = partition_sizes(m, base);
    // Parameters kept gathered hold their swap buffers: enough buffers for the most the replay had in use.
    const CoordinatorReplay rep =
        replay_coordinator(m, module_trace(m, base.activation_checkpointing.enabled), z, param_swap(m, base));
    if (rep.swap_buffer_shortfall > 0)
      c.push_back(Candidate(0, {set("zero_optimization.offload_param.buffer_count", rep.peak_swap_buffers)}));
    if (ps.largest_nvme_param_partition > z.offload_param.buffer_size)
      c.push_back(Candidate(0, {set("zero_optimization.offload_param.buffer_size", ps.largest_nvme_param_partition)}));
  }
  if (z.stage == 3 && z.offload_optimizer.device == OffloadDevice::nvme) {
    // The buffers the optimizer swapper holds at once (memory.h), for this layout's sub-groups.
    const auto sub_groups = static_cast<int64_t>(make_layout(m, base, Schedule::deepspeed).sub_groups.size());
    const int64_t need = optimizer_swap_buffers_needed(z.offload_optimizer, sub_groups);
    if (z.offload_optimizer.buffer_count < need)
      c.push_back(Candidate(0, {set("zero_optimization.offload_optimizer.buffer_count", need)}));
  }
}

// Cost 1: half the micro batch, twice the accumulation, as the run's flags (HF per_device_train_batch_size and
// gradient_accumulation_steps, which fill "auto" and override the file), so a config written for the HF Trainer
// keeps its "auto" values and its train_batch_size.
void add_micro_batch_candidate(std::vector<Candidate>& c, const Point& p) {
  const Strategy& s = p.s;
  if (s.micro_batch_per_gpu < 2 || s.micro_batch_per_gpu % 2 != 0) return;
  const int64_t mb = s.micro_batch_per_gpu / 2, ga = s.gradient_accumulation_steps * 2;
  Candidate k(1, {}, {{RunSetting::micro_batch, mb}, {RunSetting::grad_accum, ga}});
  k.check = [mb, ga](const Strategy&, const Strategy& t) {
    return t.micro_batch_per_gpu == mb && t.gradient_accumulation_steps == ga;
  };
  c.push_back(std::move(k));
}

// Costs 2-3: activation checkpointing (a run setting: HF gradient_checkpointing), a higher ZeRO stage.
void add_checkpoint_and_stage_candidates(std::vector<Candidate>& c, const Point& p) {
  const Strategy& s = p.s;
  if (!s.activation_checkpointing.enabled) c.push_back(Candidate(2, {}, {{RunSetting::checkpoint_activations, 1}}));
  if (s.zero.stage < 3 && s.world() > 1) {
    Candidate k(3);
    raise_stage(k, s, s.zero.stage == 0 ? 2 : s.zero.stage + 1);
    c.push_back(std::move(k));
  }
}

// Costs 4-8: offloading the optimizer, the parameters or the checkpoints to the CPU or NVMe. Each moves one thing
// (and the stage it needs); the pairs below combine them.
void add_offload_candidates(std::vector<Candidate>& c, const Hardware& hw, const Point& p) {
  const Strategy& s = p.s;
  const auto& z = s.zero;
  if (z.offload_optimizer.device == OffloadDevice::none) {
    Candidate k(4);
    raise_stage(k, s, 2);
    offload_to(k, p.raw, "offload_optimizer", "cpu_offload", "cpu");
    c.push_back(std::move(k));
  }
  if (z.offload_param.device == OffloadDevice::none) {
    Candidate k(5);
    raise_stage(k, s, 3);
    offload_to(k, p.raw, "offload_param", "cpu_offload_param", "cpu");
    c.push_back(std::move(k));
  }
  if (s.activation_checkpointing.enabled && !s.activation_checkpointing.cpu_checkpointing)
    c.push_back(Candidate(6, {set("activation_checkpointing.cpu_checkpointing", true)}));
  if (hw.nvme.drives > 0) {
    if (z.offload_optimizer.device != OffloadDevice::nvme) {
      Candidate k(7);
      raise_stage(k, s, 3);
      offload_to(k, p.raw, "offload_optimizer", "cpu_offload", "nvme");
      c.push_back(std::move(k));
    }
    if (z.offload_param.device != OffloadDevice::nvme) {
      Candidate k(8);
      raise_stage(k, s, 3);
      offload_to(k, p.raw, "offload_param", "cpu_offload_param", "nvme");
      c.push_back(std::move(k));
    }
  }
}

// Costs 9-10: more GPUs (every GPU of a node, twice the nodes). A train_batch_size the file gives grows with the
// world, so the micro batch and the accumulation stay as they are.
void add_scale_out_candidates(std::vector<Candidate>& c, const Hardware& hw, const Point& p) {
  const Strategy& s = p.s;
  const json* tb = at(p.raw, "train_batch_size");
  auto scale_out = [&](int rank, RunChange run, int64_t new_world) {
    Candidate k(rank, {}, {run});
    if (tb && tb->is_number()) k.changes.push_back(set("train_batch_size", s.train_batch_size / s.world() * new_world));
    k.check = [](const Strategy& a, const Strategy& b) {
      return a.micro_batch_per_gpu == b.micro_batch_per_gpu &&
             a.gradient_accumulation_steps == b.gradient_accumulation_steps;
    };
    c.push_back(std::move(k));
  };
  if (s.run.gpus_per_node < hw.gpus_per_node)
    scale_out(9, {RunSetting::gpus_per_node, hw.gpus_per_node}, s.run.nodes * hw.gpus_per_node);
  if (s.zero.stage >= 1) scale_out(10, {RunSetting::nodes, s.run.nodes * 2}, s.run.nodes * 2 * s.run.gpus_per_node);
}

// Every single change that applies to `p`, in order of cost_rank (the expected slowdown).
std::vector<Candidate> candidates(const ModelSpec& m, const Hardware& hw, const Point& p) {
  std::vector<Candidate> c;
  add_buffer_candidates(c, m, p);
  add_micro_batch_candidate(c, p);
  add_checkpoint_and_stage_candidates(c, p);
  add_offload_candidates(c, hw, p);
  add_scale_out_candidates(c, hw, p);
  return c;
}

// `from` with one more candidate, read again from the base; nullopt when the reader refuses the patch or the
// intended effect did not happen.
std::optional<Point> extend(const Strategy& base, const Point& from, const Candidate& c) {
  Point q;
  q.changes = from.changes;
  q.changes.insert(q.changes.end(), c.changes.begin(), c.changes.end());
  q.run_changes = merge_run_changes(from.run_changes, c.run_changes);
  q.why = from.why + c.why;
  auto s = evaluate_patch(base, q.changes, q.run_changes);
  if (!s) return std::nullopt;
  if (c.check && !c.check(from.s, *s)) return std::nullopt;
  auto raw = effective_config(*s);
  if (!raw) return std::nullopt;
  q.s = std::move(*s);
  q.raw = std::move(*raw);
  return q;
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

std::string effect(const MemoryReport& before, const MemoryReport& after, Tier t) {
  std::string u = t == Tier::gpu ? "GPU" : t == Tier::cpu ? "CPU" : "NVMe";
  return u + " " + format_bytes(before.tier(t).required_bytes) + " → " + format_bytes(after.tier(t).required_bytes);
}

std::string verdict_tail(const MemoryReport& after) {
  if (verdict(after) == Verdict::tight && after.binding) {
    const auto& b = after.tier(*after.binding);
    char pct[32];
    std::snprintf(pct, sizeof pct, "%.1f%%", 100.0 * static_cast<double>(b.headroom_bytes()) / b.capacity_bytes);
    return " (TIGHT: " + to_string(*after.binding) + " headroom " + format_bytes(b.headroom_bytes()) + ", " + pct + ")";
  }
  if (after.fits) return "";
  for (Tier t : kTiers) {
    const auto& tr = after.tier(t);
    if (!tr.fits() && tr.required_bytes > 0)
      return " (still short: " + to_string(t) + " needs " + format_bytes(tr.required_bytes) + ", has " +
             format_bytes(tr.capacity_bytes) + ")";
  }
  return after.problems.empty() ? "" : " (still: " + after.problems.front() + ")";
}

// A value as the file would say it: 5e8 read as a double is shown as 500000000, not 500000000.0.
std::string value_text(const json& v) {
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (d == static_cast<double>(static_cast<int64_t>(d)) && d > -1e15 && d < 1e15)
      return std::to_string(static_cast<int64_t>(d));
  }
  return v.dump();
}

// Every key the patch changes (with the value the file had), the run flags, then the effect on the binding tier.
Suggestion suggestion(const Point& q, const MemoryReport& r, int rank, const Point& base, const MemoryReport& base_r,
                      Tier bind) {
  std::string keys;
  for (const auto& c : q.changes) {
    keys += (keys.empty() ? "" : ", ") + describe(c);
    const json* was = at(base.raw, c.path);
    if (was && !c.value.is_null()) keys += " (was " + value_text(*was) + ")";
  }
  keys += q.why;
  std::string flags;
  for (const auto& c : q.run_changes)
    flags += (flags.empty() ? "" : " ") + describe(c) +
             (c.setting == RunSetting::checkpoint_activations ? " (HF gradient_checkpointing)" : "");
  if (!flags.empty()) keys += (keys.empty() ? "run with " : ", run with ") + flags;
  Suggestion x;
  x.text = keys + ": " + effect(base_r, r, bind) + verdict_tail(r);
  x.cost_rank = rank;
  x.fits = r.fits;
  x.verdict = verdict(r);
  x.changes = q.changes;
  x.run_changes = q.run_changes;
  x.strategy = q.s;
  x.report = r;
  return x;
}

}  // namespace

std::vector<Suggestion> suggest_fixes(const ModelSpec& m, const Hardware& hw, const Strategy& s,
                                      const MemoryOptions& o) {
  const MemoryReport base_r = memory_model(m, hw, s, o);
  if (base_r.fits) return {};
  auto raw = effective_config(s);
  if (!raw) return {};  // not read from a ds_config (no text to patch)
  const Point base{{}, {}, "", s, std::move(*raw)};
  const Tier bind = base_r.binding.value_or(Tier::gpu);
  const double base_pressure = pressure(base_r);
  std::vector<Suggestion> out;

  const auto cands = candidates(m, hw, base);
  std::vector<std::optional<Point>> singles;  // cands[i] applied to the base (nullopt: refused)
  for (const auto& c : cands) {
    singles.push_back(extend(s, base, c));
    if (!singles.back()) continue;
    MemoryReport r = memory_model(m, hw, singles.back()->s, o);
    if (pressure(r) >= base_pressure - 1e-9 && r.problems.size() >= base_r.problems.size()) continue;
    out.push_back(suggestion(*singles.back(), r, c.cost_rank, base, base_r, bind));
  }
  // Clean fits first, then TIGHT ones (within the model's uncertainty), then those that only help; cheapest first.
  std::stable_sort(out.begin(), out.end(), [](const Suggestion& a, const Suggestion& b) {
    if (a.verdict != b.verdict) return a.verdict < b.verdict;
    return a.cost_rank < b.cost_rank;
  });

  // Nothing single fits cleanly: the cheapest pair that does (by its dearest change, then the sum of ranks);
  // failing that, and when nothing fits even tightly, combine greedily, each time taking the change that lowers the
  // pressure most.
  if (out.empty() || out.front().verdict != Verdict::fits) {
    std::optional<Suggestion> best_pair;
    std::pair<int, int> best_cost{1 << 30, 1 << 30};
    for (size_t i = 0; i < cands.size(); ++i) {
      if (!singles[i]) continue;
      for (const auto& second : candidates(m, hw, *singles[i])) {
        if (second.changes == cands[i].changes && second.run_changes == cands[i].run_changes) continue;
        std::pair<int, int> cost{std::max(cands[i].cost_rank, second.cost_rank), cands[i].cost_rank + second.cost_rank};
        if (cost >= best_cost) continue;
        auto pair = extend(s, *singles[i], second);
        if (!pair) continue;
        MemoryReport r = memory_model(m, hw, pair->s, o);
        if (verdict(r) != Verdict::fits) continue;
        best_cost = cost;
        best_pair = suggestion(*pair, r, cost.first, base, base_r, bind);
      }
    }
    if (best_pair) {
      out.insert(out.begin(), *best_pair);
    } else if (out.empty() || !out.front().fits) {
      Point cur = base;
      MemoryReport cur_r = base_r;
      int rank = 0, steps = 0;
      for (; steps < 5 && !cur_r.fits; ++steps) {
        double best = pressure(cur_r);
        std::optional<Point> pick;
        int pick_rank = 0;
        for (const auto& c : candidates(m, hw, cur)) {
          auto t = extend(s, cur, c);
          if (!t) continue;
          double p = pressure(memory_model(m, hw, t->s, o)) + 0.01 * c.cost_rank;  // prefer cheaper among near-equal
          if (p < best - 1e-9) {
            best = p;
            pick = std::move(t);
            pick_rank = c.cost_rank;
          }
        }
        if (!pick) break;
        cur = std::move(*pick);
        cur_r = memory_model(m, hw, cur.s, o);
        rank = std::max(rank, pick_rank);
      }
      if (steps >= 2)
        out.insert(out.begin() + (cur_r.fits ? 0 : static_cast<long>(out.size())),
                   suggestion(cur, cur_r, rank, base, base_r, bind));
    }
  }
  return out;
}

}  // namespace zs::core
