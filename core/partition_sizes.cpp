// partition_sizes (memory.h): the sizes the memory model and the plan share — parameters stored and trained, a
// rank's partitions, the largest tensor, module and sub-group, and ZeRO-3's parameter homes under offload_param.
#include <algorithm>

#include "core/layout.h"
#include "core/memory.h"

namespace zs::core {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t align_up(int64_t a, int64_t b) { return b <= 1 ? a : ceil_div(a, b) * b; }

}  // namespace

PartitionSizes partition_sizes(const ModelSpec& m, const Strategy& s) {
  PartitionSizes z;
  const int64_t world = partition_world(s);
  const int stage = s.zero.stage;
  z.params = parameter_count(m);
  z.lp_bytes = bytes_per_element(s.model_dtype());
  z.largest_module = largest_layer_params(m);
  const auto tensors_p = shared_tensor_table(m);
  for (const auto& t : *tensors_p) {
    if (t.tied) continue;
    z.stored += t.numel;
    if (t.trainable) {
      z.trainable += t.numel;
      z.largest_param = std::max(z.largest_param, t.numel);
    }
    if (t.quant_bits > 0) {
      const int64_t out_rows = t.shape.empty() ? 1 : t.shape[0];
      z.quant_constant_bytes += quant_constant_bytes(m.adapter.quant, t.params, out_rows);
    }
  }
  z.partition = stage >= 1 ? ceil_div(z.trainable, world) : z.trainable;
  const Layout l = make_layout(m, s, Schedule::deepspeed);
  z.frozen_partition = l.frozen_elements;

  if (stage < 3) {
    z.largest_sub_group = z.partition;
    return z;
  }
  // ZeRO-3 partitions each parameter separately; sub-groups close once they reach sub_group_size.
  for (int64_t g : l.sub_groups) z.largest_sub_group = std::max(z.largest_sub_group, g);

  if (s.zero.offload_param.device == OffloadDevice::nvme) {
    // The layout's homes: the pinned flat CPU buffer (whole sub-groups within max_in_cpu), the sub-groups outside
    // it swapped to NVMe (io-aligned), their unswappable parameters in CPU memory. zero.Init takes a swap buffer
    // for every swappable partition before max_in_cpu is looked at, so the buffer_size check covers them all.
    const int64_t align_numel = aio_aligned_numel(s.aio, z.lp_bytes);
    const int64_t min_aio = std::max<int64_t>(kMinAioBytes, s.aio.block_size);
    z.param_partition_in_cpu = l.lp_cpu_flat_elements;
    for (const auto& p : l.params) {
      if (p.lp_home == Tier::nvme)
        z.param_partition_on_nvme += align_up(p.part, align_numel);
      else if (!p.lp_in_cpu_flat)
        z.param_partition_in_cpu += p.part;  // too small to swap: stays in CPU memory
      if (p.part * z.lp_bytes >= min_aio) z.largest_nvme_param_partition = std::max(z.largest_nvme_param_partition, p.part);
    }
  }
  return z;
}

}  // namespace zs::core
