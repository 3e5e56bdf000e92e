#include "core/param_coordinator.h"

#include <algorithm>
#include <deque>
#include <unordered_set>

#include "core/layout.h"

namespace zs::core {

std::vector<TraceStep> module_trace(const ModelSpec& m, bool recompute) {
  const auto modules_p = shared_module_table(m);
  const auto& modules = *modules_p;
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

ParamSwap param_swap(const ModelSpec& m, const Strategy& s) {
  ParamSwap w;
  const ZeroConfig& z = s.zero;
  if (z.stage != 3 || z.offload_param.device != OffloadDevice::nvme) return w;
  w.buffer_count = z.offload_param.buffer_count;
  for (const auto& p : make_layout(m, s, Schedule::deepspeed).params) w.on_nvme.push_back(p.lp_home == Tier::nvme);
  return w;
}

namespace {

// Parameter ids (one per untied tensor; a tied tensor resolves to the token embedding, tensor 0), which are
// persistent and which live on NVMe, and each module's parameters.
void assign_params(CoordinatorReplay& r, const ModelSpec& m, const ZeroConfig& z, const ParamSwap& swap) {
  const auto tensors_p = shared_tensor_table(m);
  const auto modules_p = shared_module_table(m);
  const auto& tensors = *tensors_p;
  const auto& modules = *modules_p;
  std::vector<size_t> tensor_to_param(tensors.size());
  for (size_t t = 0; t < tensors.size(); ++t) {
    if (tensors[t].tied) {
      tensor_to_param[t] = tensor_to_param[0];
      continue;
    }
    tensor_to_param[t] = r.params.size();
    r.params.push_back({tensors[t].numel, false});
  }
  // mark_persistent_parameters: the layout's rule.
  std::vector<int64_t> numels;
  for (const auto& p : r.params) numels.push_back(p.numel);
  const std::vector<char> persistent = mark_persistent(numels, z);
  r.persistent_numel = 0;
  for (size_t id = 0; id < r.params.size(); ++id) {
    r.params[id].persistent = persistent[id];
    if (persistent[id]) r.persistent_numel += r.params[id].numel;
  }
  // Persistent parameters are gathered once and never swapped again (DeepSpeed releases their swap buffers).
  for (size_t id = 0; id < r.params.size() && id < swap.on_nvme.size(); ++id)
    r.params[id].on_nvme = swap.on_nvme[id] && !r.params[id].persistent;
  // A module lists a parameter once (a tied head is the embedding's): `seen_in` marks the module that took it, so a
  // MoE block's hundreds of tensors cost no quadratic search.
  std::vector<size_t> seen_in(r.params.size(), modules.size());
  for (size_t i = 0; i < modules.size(); ++i) {
    std::vector<size_t> ids;
    for (size_t t : modules[i].tensors) {
      const size_t id = tensor_to_param[t];
      if (seen_in[id] == i) continue;
      seen_in[id] = i;
      ids.push_back(id);
    }
    r.module_params.push_back(std::move(ids));
  }
}

// The coordinator's state as the replay walks the trace, one step() per trace step.
struct Replayer {
  struct InTrace {
    size_t param;
    size_t step;
  };
  CoordinatorReplay& r;
  const std::vector<TraceStep>& trace;
  const ZeroConfig& z;
  const ParamSwap& swap;
  std::deque<InTrace> queue;  // the param trace: (param, step) for every param of every step's module, in order
  std::vector<char> available;
  std::vector<char> inflight;  // all-gather issued, not yet waited on by a module (InflightParamRegistry)
  std::vector<char> swapped;   // NVMe partition held in a swap buffer (swapped in, not yet released)
  std::vector<int64_t> most_recent_fetched_for;
  std::vector<int64_t> release_mark;  // release(): the step whose candidate a parameter is, else -1
  int64_t n_available = 0, numel_in_flight = 0, buffers_used = 0;
  bool nvme = false;

  Replayer(CoordinatorReplay& replay, const std::vector<TraceStep>& t, const ZeroConfig& zc, const ParamSwap& sw)
      : r(replay), trace(t), z(zc), swap(sw) {
    for (size_t s = 0; s < trace.size(); ++s)
      for (size_t id : r.module_params[trace[s].module]) queue.push_back({id, s});
    const size_t n = r.params.size();
    available.assign(n, 0);
    inflight.assign(n, 0);
    swapped.assign(n, 0);
    most_recent_fetched_for.assign(n, -1);
    release_mark.assign(n, -1);
    nvme = std::any_of(r.params.begin(), r.params.end(), [](const CoordParam& p) { return p.on_nvme; });
    r.steps.resize(trace.size());
  }

  bool on_nvme_now(size_t id) const { return r.params[id].on_nvme && !swapped[id]; }
  void take_buffer(size_t id) {
    swapped[id] = 1;
    ++buffers_used;
    r.peak_swap_buffers = std::max(r.peak_swap_buffers, buffers_used);
  }
  void gather(size_t id, CoordinatorStep& out) {
    available[id] = 1;
    inflight[id] = 1;
    numel_in_flight += r.params[id].numel;
    n_available += r.params[id].numel;
    out.gathered.push_back(id);
  }

  void step(size_t s) {
    auto& out = r.steps[s];
    const auto& mparams = r.module_params[trace[s].module];
    fetch(s, out, mparams);
    // 2. Wait for this module's in-flight params: one fetch event each.
    for (size_t id : mparams) {
      if (!inflight[id]) continue;
      inflight[id] = 0;
      numel_in_flight -= r.params[id].numel;
      out.waited.push_back(id);
    }
    // 3. Pop this step's entries from the queue (the trace is complete, so they are next).
    while (!queue.empty() && queue.front().step == s) queue.pop_front();
    prefetch(out);
    if (nvme && z.prefetch_bucket_size > 0) prefetch_nvme(out);
    out.live_numel_during = n_available;
    if (n_available > r.peak_live_numel) {
      r.peak_live_numel = n_available;
      r.peak_step = s;
    }
    release(s, out, mparams);
    out.live_numel_after = n_available;
  }

  // 1. Fetch this module's params that are not available (persistent ones always are). NVMe partitions that
  //    no prefetch swapped in are read synchronously; DeepSpeed asserts when the buffers are all taken.
  void fetch(size_t s, CoordinatorStep& out, const std::vector<size_t>& mparams) {
    for (size_t id : mparams) {
      if (r.params[id].persistent || available[id]) continue;
      gather(id, out);
      if (on_nvme_now(id)) out.nvme_sync.push_back(id);
    }
    out.fetched = out.gathered.size();
    const int64_t lacking = buffers_used + static_cast<int64_t>(out.nvme_sync.size()) - swap.buffer_count;
    if (!out.nvme_sync.empty() && lacking > r.swap_buffer_shortfall) {
      r.swap_buffer_shortfall = lacking;
      r.shortfall_step = s;
    }
    for (size_t id : out.nvme_sync) take_buffer(id);
  }

  // 4. Prefetch within min(max_live - n_available, prefetch_bucket_size), stopping at a partition still on
  //    NVMe ("nvme prefetch is handled elsewhere. Need to break here to preserve fetch order").
  void prefetch(CoordinatorStep& out) {
    const int64_t budget = std::min(z.max_live_parameters - n_available, z.prefetch_bucket_size);
    int64_t prefetching = 0;
    std::unordered_set<size_t> picked;
    std::vector<size_t> picked_order;  // trace order, as DeepSpeed issues the prefetch
    while (!queue.empty() && prefetching < budget) {
      InTrace e = queue.front();
      if (on_nvme_now(e.param)) break;
      queue.pop_front();
      bool do_prefetch = !available[e.param] && !r.params[e.param].persistent && !picked.count(e.param);
      most_recent_fetched_for[e.param] =
          std::max<int64_t>(most_recent_fetched_for[e.param], static_cast<int64_t>(e.step));
      if (do_prefetch) {
        picked.insert(e.param);
        picked_order.push_back(e.param);
        prefetching += r.params[e.param].numel;
      }
    }
    for (size_t id : picked_order) gather(id, out);
  }

  // 5. NVMe: swap in upcoming partitions while the numel considered stays ≤ 2 × the numel in flight and
  //    buffers are free (only inside the prefetch branch, so not with prefetch_bucket_size 0).
  void prefetch_nvme(CoordinatorStep& out) {
    int64_t considered = 0;
    std::unordered_set<size_t> picked_for_nvme;
    for (const InTrace& e : queue) {
      if (considered > 2 * numel_in_flight ||
          static_cast<int64_t>(out.nvme_prefetch.size()) >= swap.buffer_count - buffers_used)
        break;
      if (on_nvme_now(e.param) && picked_for_nvme.insert(e.param).second)
        out.nvme_prefetch.push_back(e.param);
      considered += r.params[e.param].numel;
    }
    for (size_t id : out.nvme_prefetch) take_buffer(id);
  }

  // 6. Release: not persistent, not claimed by a prefetch for a later step, not reused within the
  //    reuse distance (modules from the next step on; the module that crosses the distance counts whole).
  //    A released NVMe partition gives its swap buffer back.
  void release(size_t s, CoordinatorStep& out, const std::vector<size_t>& mparams) {
    // DeepSpeed releases with step_id already incremented (s + 1).
    const auto step_id = static_cast<int64_t>(s + 1);
    // Candidates are stamped with this step in `release_mark`: a reuse within the distance clears the stamp (a MoE
    // block has hundreds of parameters, so no search per reuse).
    const auto stamp = static_cast<int64_t>(s);
    int64_t candidates = 0;
    for (size_t id : mparams)
      if (!r.params[id].persistent && most_recent_fetched_for[id] <= step_id) {
        release_mark[id] = stamp;
        ++candidates;
      }
    int64_t traversed = 0;
    for (size_t k = s + 1; k < trace.size() && traversed < z.max_reuse_distance && candidates > 0; ++k) {
      for (size_t id : r.module_params[trace[k].module]) {
        if (release_mark[id] == stamp) {
          release_mark[id] = -1;
          --candidates;
        }
        traversed += r.params[id].numel;
      }
    }
    for (size_t id : mparams) {
      if (release_mark[id] != stamp) continue;
      release_mark[id] = -1;
      if (!available[id]) continue;
      available[id] = 0;
      n_available -= r.params[id].numel;
      if (swapped[id]) {
        swapped[id] = 0;
        --buffers_used;
      }
      out.released.push_back(id);
    }
  }
};

}  // namespace

CoordinatorReplay replay_coordinator(const ModelSpec& m, const std::vector<TraceStep>& trace, const ZeroConfig& z,
                                     const ParamSwap& swap) {
  CoordinatorReplay r;
  assign_params(r, m, z, swap);
  Replayer replay(r, trace, z, swap);
  for (size_t s = 0; s < trace.size(); ++s) replay.step(s);
  return r;
}

}  // namespace zs::core
