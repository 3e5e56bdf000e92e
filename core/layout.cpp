// make_layout (layout.h): DeepSpeed's partitioning, ZeRO-3 persistence and parameter swapping, and its optimizer
// sub-groups, each rule once. Sources: runtime/zero/stage_1_and_2.py (flat partitions), stage3.py
// (_create_fp16_sub_groups, _create_param_groups_fp16_flat_cpu_memory, subgroup_to_device for Twin-Flow),
// partition_parameters.py (per-parameter padding), parameter_offload.py (mark_persistent_parameters).
#include "core/layout.h"

#include <algorithm>

namespace zs::core {
namespace {


int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// One parameter per untied tensor, in forward order; its module and its offset in the flat model.
std::vector<ParamLayout> untied_params(const ModelSpec& m) {
  const auto tensors_p = shared_tensor_table(m);
  const auto modules_p = shared_module_table(m);
  const auto& tensors = *tensors_p;
  std::vector<int32_t> tensor_module(tensors.size(), 0);
  for (size_t i = 0; i < modules_p->size(); ++i)
    for (size_t t : (*modules_p)[i].tensors) tensor_module[t] = static_cast<int32_t>(i);
  std::vector<ParamLayout> params;
  int64_t flat = 0;
  for (size_t t = 0; t < tensors.size(); ++t) {
    if (tensors[t].tied) continue;
    ParamLayout p;
    p.name = tensors[t].name;
    p.module = tensor_module[t];
    p.layer = static_cast<int32_t>(tensors[t].layer);
    p.numel = tensors[t].numel;
    p.trainable = tensors[t].trainable;
    p.flat_offset = flat;
    if (p.trainable) flat += p.numel;  // the flat model holds the trainable parameters only
    params.push_back(std::move(p));
  }
  return params;
}

// A rank's share as every rank counts it: per parameter for stage 3 (DeepSpeed partitions each tensor), a slice
// of the flat partition for stages 1-2 (cumulative rounding keeps the sum at ceil(P / world)).
void set_parts(Layout& l) {
  for (auto& p : l.params) {
    if (l.stage == 3)
      p.part = ceil_div(p.numel, l.world);
    else if (l.stage >= 1)
      p.part = p.trainable ? ceil_div(p.flat_offset + p.numel, l.world) - ceil_div(p.flat_offset, l.world) : 0;
    else
      p.part = p.numel;
  }
  int64_t numel = 0;
  for (const auto& p : l.params) {
    if (p.trainable) numel += p.numel;
    l.partition_elements += p.optimizer_part();
    if (!p.trainable) l.frozen_elements += l.stage == 3 ? p.part : p.numel;
  }
  l.flat_partition = ceil_div(numel, l.world);
}

void set_persistent(Layout& l, const ZeroConfig& z) {
  if (l.stage != 3) return;
  std::vector<int64_t> numels;
  for (const auto& p : l.params) numels.push_back(p.numel);
  const std::vector<char> persistent = mark_persistent(numels, z);
  for (size_t i = 0; i < l.params.size(); ++i) l.params[i].persistent = persistent[i];
}

// The 16-bit partition's home under ZeRO-3 offload_param (stage3.py _create_param_groups_fp16_flat_cpu_memory and
// _create_fp16_partitions_with_defragmentation): one pinned flat CPU buffer of min(partition, max_in_cpu) elements
// (offload_param cpu: the whole partition) takes whole sub-groups in order while flat_offset + sub-group elements
// fit in it; the parameters of the other sub-groups stay where zero.Init put them (partition_parameters.py
// _partition_param): on NVMe when the partition is swappable (≥ max(1 MiB, aio block_size)), else in CPU memory.
// When some sub-group has no flat buffer, DeepSpeed reserves a pinned swap-out buffer for the largest sub-group,
// sized by its parameters' *full* numels, each io-aligned (partitioned_param_swapper.py
// reserve_partitioned_swap_space).
void set_lp_homes(Layout& l, const Strategy& s, const std::vector<size_t>& sub_group_first) {
  const auto device = l.param_device;
  if (device == OffloadDevice::none) return;
  const int64_t lp = bytes_per_element(s.model_dtype());
  const int64_t min_aio = std::max<int64_t>(kMinAioBytes, s.aio.block_size);
  const int64_t align = aio_aligned_numel(s.aio, lp);
  l.lp_cpu_flat_elements =
      device == OffloadDevice::nvme ? std::min(l.partition_elements, s.zero.offload_param.max_in_cpu) : l.partition_elements;
  int64_t flat_offset = 0, largest_sub_group = -1;
  bool some_group_without_flat = false;
  for (size_t g = 0; g < sub_group_first.size(); ++g) {
    const size_t first = sub_group_first[g];
    const size_t end = g + 1 < sub_group_first.size() ? sub_group_first[g + 1] : l.params.size();
    int64_t elements = 0, full_aligned = 0;
    for (size_t i = first; i < end; ++i) {
      if (!l.params[i].trainable) continue;
      elements += l.params[i].part;
      full_aligned += ceil_div(l.params[i].numel, align) * align;
    }
    const bool in_flat = device == OffloadDevice::cpu || flat_offset + elements <= l.lp_cpu_flat_elements;
    flat_offset += elements;
    some_group_without_flat = some_group_without_flat || !in_flat;
    for (size_t i = first; i < end; ++i) {
      ParamLayout& p = l.params[i];
      // A frozen parameter stays where zero.Init put it: in CPU memory (offload_param cpu), or swapped to NVMe.
      p.lp_in_cpu_flat = in_flat && p.trainable;
      const bool off_flat = !p.lp_in_cpu_flat && device == OffloadDevice::nvme;
      p.lp_home = off_flat && p.part * lp >= min_aio ? Tier::nvme : Tier::cpu;
    }
    if (elements > largest_sub_group) {
      largest_sub_group = elements;
      l.lp_reuse_buffer_elements = full_aligned;
    }
  }
  if (!some_group_without_flat) l.lp_reuse_buffer_elements = 0;
}

// DeepSpeed's stage-3 sub-groups: parameters in order, a sub-group closing once it holds ≥ sub_group_size
// partition elements (one sub-group when the whole partition is smaller). Returns the first parameter of each.
std::vector<size_t> sub_group_starts(const Layout& l, int64_t sub_group_size) {
  std::vector<size_t> starts{0};
  if (l.stage != 3) return starts;
  int64_t acc = 0;
  for (size_t i = 0; i < l.params.size(); ++i) {
    acc += l.params[i].optimizer_part();
    if (sub_group_size < l.partition_elements && acc >= sub_group_size && i + 1 < l.params.size()) {
      starts.push_back(i + 1);
      acc = 0;
    }
  }
  return starts;
}

// The optimizer's step units: the sub-groups; with the overlap schedule and an offloaded optimizer also cut
// where the layer changes, so a layer's update can start when its gradients arrive. Twin-Flow
// (offload_optimizer.ratio < 1): the first int((1 − ratio) · n) of the n sub-groups step on the GPU.
void set_groups(Layout& l, const Strategy& s, Schedule schedule) {
  const auto& z = s.zero;
  const OffloadDevice opt_dev = l.optimizer_device;
  const bool opt_offload = opt_dev != OffloadDevice::none;
  const size_t np = l.params.size();
  std::vector<size_t> cuts = sub_group_starts(l, z.sub_group_size);
  for (size_t c = 0; c < cuts.size(); ++c) {
    const size_t end = c + 1 < cuts.size() ? cuts[c + 1] : np;
    int64_t elements = 0;
    for (size_t i = cuts[c]; i < end; ++i) elements += l.params[i].optimizer_part();
    if (l.stage == 3) l.sub_groups.push_back(elements);
  }
  size_t gpu_end = 0;
  if (l.stage == 3 && opt_offload && z.offload_optimizer.ratio < 1.0) {
    const auto k = static_cast<size_t>((1.0 - z.offload_optimizer.ratio) * static_cast<double>(cuts.size()));
    gpu_end = k >= cuts.size() ? np : cuts[k];
  }
  if (schedule == Schedule::overlap && opt_offload)
    for (size_t i = 1; i < np; ++i)
      if (l.params[i].layer != l.params[i - 1].layer) cuts.push_back(i);
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  const Tier offload_tier = opt_dev == OffloadDevice::nvme ? Tier::nvme : Tier::cpu;
  for (size_t c = 0; c < cuts.size(); ++c) {
    GroupLayout g;
    g.first = cuts[c];
    g.last = c + 1 < cuts.size() ? cuts[c + 1] : np;
    if (g.first >= g.last) continue;
    g.layer = l.params[g.first].layer;
    for (size_t i = g.first; i < g.last; ++i) {
      g.elements += l.params[i].optimizer_part();
      if (l.params[i].layer != g.layer) g.layer = -1;
      if (l.params[i].trainable) l.params[i].group = static_cast<int32_t>(l.groups.size());
    }
    g.tier = (!opt_offload || l.stage == 0 || g.first < gpu_end) ? Tier::gpu : offload_tier;
    if (g.elements == 0) {  // only frozen parameters: nothing to step
      for (size_t i = g.first; i < g.last; ++i) l.params[i].group = -1;
      continue;
    }
    l.groups.push_back(g);
  }
}

}  // namespace

// In parameter order, a parameter at or under the per-parameter threshold is persistent while the persistent total
// stays within the model-wide one.
std::vector<char> mark_persistent(const std::vector<int64_t>& numels, const ZeroConfig& z) {
  std::vector<char> persistent(numels.size(), 0);
  int64_t total_persistent = 0;
  for (size_t i = 0; i < numels.size(); ++i) {
    if (numels[i] + total_persistent > z.model_persistence_threshold) continue;
    if (numels[i] <= z.param_persistence_threshold) {
      persistent[i] = 1;
      total_persistent += numels[i];
    }
  }
  return persistent;
}

Layout make_layout(const ModelSpec& m, const Strategy& s, Schedule schedule) {
  Layout l;
  l.stage = s.zero.stage;
  l.world = partition_world(s);
  l.optimizer_device = l.stage >= 1 ? s.zero.offload_optimizer.device : OffloadDevice::none;
  if (l.stage < 3 && l.optimizer_device == OffloadDevice::nvme) l.optimizer_device = OffloadDevice::cpu;
  l.param_device = l.stage == 3 ? s.zero.offload_param.device : OffloadDevice::none;
  l.params = untied_params(m);
  set_parts(l);
  set_persistent(l, s.zero);
  set_lp_homes(l, s, sub_group_starts(l, s.zero.sub_group_size));
  set_groups(l, s, schedule);
  return l;
}

// Stage 3 pads each parameter to world · ceil(numel / world) and rank r takes slice r; stages 1-2 cut the flat
// model into world slices of S = ceil(P / world) elements and rank r holds the part of each parameter inside
// [r·S, (r+1)·S); stage 0 holds everything. The slices sit in the rank's partition buffer in parameter order.
std::vector<RankSlice> Layout::slices(int64_t rank) const {
  std::vector<RankSlice> out(params.size());
  int64_t offset = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    const ParamLayout& p = params[i];
    RankSlice& r = out[i];
    if (stage == 3) {
      r.count = p.part;
      r.start = rank * p.part;
    } else if (stage >= 1) {
      if (!p.trainable) {  // whole on every rank, outside the partition buffer
        r.partition_offset = offset;
        continue;
      }
      const int64_t lo = std::max(p.flat_offset, rank * flat_partition);
      const int64_t hi = std::min(p.flat_offset + p.numel, (rank + 1) * flat_partition);
      r.count = std::max<int64_t>(0, hi - lo);
      r.start = r.count > 0 ? lo - p.flat_offset : 0;
    } else {
      r.count = p.numel;
    }
    r.partition_offset = offset;
    offset += r.count;
  }
  return out;
}

std::vector<FlatPiece> Layout::owners(int64_t begin, int64_t end) const {
  std::vector<FlatPiece> pieces;
  for (int64_t q = 0; q < world; ++q) {
    const int64_t lo = std::max(begin, q * flat_partition), hi = std::min(end, (q + 1) * flat_partition);
    if (hi > lo) pieces.push_back({q, lo, hi});
  }
  return pieces;
}

}  // namespace zs::core
