#include "core/param_coordinator.h"

#include <algorithm>
#include <deque>
#include <unordered_set>

namespace zs::core {

std::vector<TraceStep> module_trace(const ModelSpec& m, bool recompute) {
  auto modules = module_table(m);
  std::vector<TraceStep> t;
  t.reserve(modules.size() * (recompute ? 3 : 2));
  for (size_t i = 0; i < modules.size(); ++i) t.push_back({i, Pass::forward});
  // Backward walks modules in reverse; with checkpointing, entering a block's backward re-runs its forward.
  int64_t current_block = -2;
  for (size_t k = modules.size(); k-- > 0;) {
    int64_t layer = modules[k].layer;
    if (recompute && layer >= 0 && layer != current_block) {
      current_block = layer;
      for (size_t i = 0; i < modules.size(); ++i)
        if (modules[i].layer == layer) t.push_back({i, Pass::recompute});
    }
    t.push_back({k, Pass::backward});
  }
  return t;
}

CoordinatorReplay replay_coordinator(const ModelSpec& m, const std::vector<TraceStep>& trace, const ZeroConfig& z) {
  CoordinatorReplay r;
  auto tensors = tensor_table(m);
  auto modules = module_table(m);

  // Parameter ids: one per untied tensor; a tied tensor resolves to the token embedding (tensor 0).
  std::vector<size_t> tensor_to_param(tensors.size());
  for (size_t t = 0; t < tensors.size(); ++t) {
    if (tensors[t].tied) {
      tensor_to_param[t] = tensor_to_param[0];
      continue;
    }
    tensor_to_param[t] = r.params.size();
    r.params.push_back({tensors[t].numel, false});
  }
  // mark_persistent_parameters: in parameter order, under the per-param and model-wide thresholds.
  int64_t total_persistent = 0;
  for (auto& p : r.params) {
    if (p.numel + total_persistent > z.model_persistence_threshold) continue;
    if (p.numel <= z.param_persistence_threshold) {
      p.persistent = true;
      total_persistent += p.numel;
    }
  }
  r.persistent_numel = total_persistent;
  for (const auto& mod : modules) {
    std::vector<size_t> ids;
    for (size_t t : mod.tensors) {
      size_t id = tensor_to_param[t];
      if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    }
    r.module_params.push_back(std::move(ids));
  }

  // The param trace: (param, step) for every param of every step's module, in order.
  struct InTrace {
    size_t param;
    size_t step;
  };
  std::deque<InTrace> queue;
  for (size_t s = 0; s < trace.size(); ++s)
    for (size_t id : r.module_params[trace[s].module]) queue.push_back({id, s});

  const size_t n = r.params.size();
  std::vector<char> available(n, 0);
  std::vector<int64_t> most_recent_fetched_for(n, -1);
  int64_t n_available = 0;
  r.steps.resize(trace.size());

  for (size_t s = 0; s < trace.size(); ++s) {
    auto& out = r.steps[s];
    const auto& mparams = r.module_params[trace[s].module];
    // 1. Fetch this module's params that are not available (persistent ones always are).
    for (size_t id : mparams) {
      if (r.params[id].persistent || available[id]) continue;
      available[id] = 1;
      n_available += r.params[id].numel;
      out.gathered.push_back(id);
    }
    // 2. Pop this step's entries from the queue (the trace is complete, so they are next).
    while (!queue.empty() && queue.front().step == s) queue.pop_front();
    // 3. Prefetch within min(max_live - n_available, prefetch_bucket_size).
    const int64_t budget = std::min(z.max_live_parameters - n_available, z.prefetch_bucket_size);
    int64_t prefetching = 0;
    std::unordered_set<size_t> picked;
    std::vector<size_t> picked_order;  // trace order, as DeepSpeed issues the prefetch
    while (!queue.empty() && prefetching < budget) {
      InTrace e = queue.front();
      queue.pop_front();
      bool do_prefetch = !available[e.param] && !r.params[e.param].persistent && !picked.count(e.param);
      most_recent_fetched_for[e.param] = std::max<int64_t>(most_recent_fetched_for[e.param], static_cast<int64_t>(e.step));
      if (do_prefetch) {
        picked.insert(e.param);
        picked_order.push_back(e.param);
        prefetching += r.params[e.param].numel;
      }
    }
    for (size_t id : picked_order) {
      available[id] = 1;
      n_available += r.params[id].numel;
      out.gathered.push_back(id);
    }
    out.live_numel_during = n_available;
    if (n_available > r.peak_live_numel) {
      r.peak_live_numel = n_available;
      r.peak_step = s;
    }
    // 4. Release: not persistent, not claimed by a prefetch for a later step, not reused within the
    //    reuse distance (modules from the next step on; the module that crosses the distance counts whole).
    // DeepSpeed releases with step_id already incremented (s + 1).
    const auto step_id = static_cast<int64_t>(s + 1);
    std::vector<size_t> release;
    for (size_t id : mparams)
      if (!r.params[id].persistent && most_recent_fetched_for[id] <= step_id) release.push_back(id);
    int64_t traversed = 0;
    for (size_t k = s + 1; k < trace.size() && traversed < z.max_reuse_distance && !release.empty(); ++k) {
      for (size_t id : r.module_params[trace[k].module]) {
        release.erase(std::remove(release.begin(), release.end(), id), release.end());
        traversed += r.params[id].numel;
      }
    }
    for (size_t id : release) {
      if (!available[id]) continue;
      available[id] = 0;
      n_available -= r.params[id].numel;
      out.released.push_back(id);
    }
    out.live_numel_after = n_available;
  }
  return r;
}

}  // namespace zs::core
