#include "core/param_coordinator.h"

#include <algorithm>
#include <deque>
#include <unordered_set>

namespace zs::core {
namespace {
constexpr int64_t kMinAioBytes = 1 << 20;  // DeepSpeed's swap_tensor/utils.py MIN_AIO_BYTES
}  // namespace

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
  const auto tensors_p = shared_tensor_table(m);
  const auto& tensors = *tensors_p;
  const int64_t world = s.world(), lp = bytes_per_element(s.model_dtype());
  const int64_t min_aio = std::max<int64_t>(kMinAioBytes, s.aio.block_size);
  int64_t total = 0;
  for (const auto& t : tensors)
    if (!t.tied) total += (t.numel + world - 1) / world;
  const int64_t in_cpu_budget = std::min(total, z.offload_param.max_in_cpu);
  int64_t cum = 0;
  for (const auto& t : tensors) {
    if (t.tied) continue;
    const int64_t part = (t.numel + world - 1) / world;
    cum += part;
    w.on_nvme.push_back(cum > in_cpu_budget && part * lp >= min_aio);
  }
  return w;
}

CoordinatorReplay replay_coordinator(const ModelSpec& m, const std::vector<TraceStep>& trace, const ZeroConfig& z,
                                     const ParamSwap& swap) {
  CoordinatorReplay r;
  const auto tensors_p = shared_tensor_table(m);
  const auto modules_p = shared_module_table(m);
  const auto& tensors = *tensors_p;
  const auto& modules = *modules_p;

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
  // Persistent parameters are gathered once and never swapped again (DeepSpeed releases their swap buffers).
  for (size_t id = 0; id < r.params.size() && id < swap.on_nvme.size(); ++id)
    r.params[id].on_nvme = swap.on_nvme[id] && !r.params[id].persistent;
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
  std::vector<char> inflight(n, 0);  // all-gather issued, not yet waited on by a module (InflightParamRegistry)
  std::vector<char> swapped(n, 0);   // NVMe partition held in a swap buffer (swapped in, not yet released)
  std::vector<int64_t> most_recent_fetched_for(n, -1);
  int64_t n_available = 0, numel_in_flight = 0, buffers_used = 0;
  const bool nvme = std::any_of(r.params.begin(), r.params.end(), [](const CoordParam& p) { return p.on_nvme; });
  auto on_nvme_now = [&](size_t id) { return r.params[id].on_nvme && !swapped[id]; };
  auto take_buffer = [&](size_t id) {
    swapped[id] = 1;
    ++buffers_used;
    r.peak_swap_buffers = std::max(r.peak_swap_buffers, buffers_used);
  };
  r.steps.resize(trace.size());

  for (size_t s = 0; s < trace.size(); ++s) {
    auto& out = r.steps[s];
    const auto& mparams = r.module_params[trace[s].module];
    // 1. Fetch this module's params that are not available (persistent ones always are). NVMe partitions that
    //    no prefetch swapped in are read synchronously; DeepSpeed asserts when the buffers are all taken.
    for (size_t id : mparams) {
      if (r.params[id].persistent || available[id]) continue;
      available[id] = 1;
      inflight[id] = 1;
      numel_in_flight += r.params[id].numel;
      n_available += r.params[id].numel;
      out.gathered.push_back(id);
      if (on_nvme_now(id)) out.nvme_sync.push_back(id);
    }
    out.fetched = out.gathered.size();
    const int64_t lacking = buffers_used + static_cast<int64_t>(out.nvme_sync.size()) - swap.buffer_count;
    if (!out.nvme_sync.empty() && lacking > r.swap_buffer_shortfall) {
      r.swap_buffer_shortfall = lacking;
      r.shortfall_step = s;
    }
    for (size_t id : out.nvme_sync) take_buffer(id);
    // 2. Wait for this module's in-flight params: one fetch event each.
    for (size_t id : mparams) {
      if (!inflight[id]) continue;
      inflight[id] = 0;
      numel_in_flight -= r.params[id].numel;
      out.waited.push_back(id);
    }
    // 3. Pop this step's entries from the queue (the trace is complete, so they are next).
    while (!queue.empty() && queue.front().step == s) queue.pop_front();
    // 4. Prefetch within min(max_live - n_available, prefetch_bucket_size), stopping at a partition still on
    //    NVMe ("nvme prefetch is handled elsewhere. Need to break here to preserve fetch order").
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
    for (size_t id : picked_order) {
      available[id] = 1;
      inflight[id] = 1;
      numel_in_flight += r.params[id].numel;
      n_available += r.params[id].numel;
      out.gathered.push_back(id);
    }
    // 5. NVMe: swap in upcoming partitions while the numel considered stays ≤ 2 × the numel in flight and
    //    buffers are free (only inside the prefetch branch, so not with prefetch_bucket_size 0).
    if (nvme && z.prefetch_bucket_size > 0) {
      int64_t considered = 0;
      for (const InTrace& e : queue) {
        if (considered > 2 * numel_in_flight ||
            static_cast<int64_t>(out.nvme_prefetch.size()) >= swap.buffer_count - buffers_used)
          break;
        if (on_nvme_now(e.param) &&
            std::find(out.nvme_prefetch.begin(), out.nvme_prefetch.end(), e.param) == out.nvme_prefetch.end())
          out.nvme_prefetch.push_back(e.param);
        considered += r.params[e.param].numel;
      }
      for (size_t id : out.nvme_prefetch) take_buffer(id);
    }
    out.live_numel_during = n_available;
    if (n_available > r.peak_live_numel) {
      r.peak_live_numel = n_available;
      r.peak_step = s;
    }
    // 6. Release: not persistent, not claimed by a prefetch for a later step, not reused within the
    //    reuse distance (modules from the next step on; the module that crosses the distance counts whole).
    //    A released NVMe partition gives its swap buffer back.
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
      if (swapped[id]) {
        swapped[id] = 0;
        --buffers_used;
      }
      out.released.push_back(id);
    }
    out.live_numel_after = n_available;
  }
  return r;
}

}  // namespace zs::core
