// DeepSpeed's buffer sizes that the memory model and the scheduler both use (declared in memory.h): the
// reduction temporaries, buffered_allreduce_fallback's bucket, the optimizer swapper's buffer count.
#include <algorithm>

#include "core/memory.h"

namespace zs::core {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

int64_t largest_allreduce_bucket(const ModelSpec& m, int64_t cap) {
  int64_t bucket = 0, largest = 0;
  for (const auto& t : *shared_tensor_table(m)) {
    if (t.tied || !t.trainable) continue;
    if (bucket > 0 && bucket + t.numel > cap) bucket = 0;
    bucket += t.numel;
    largest = std::max(largest, bucket);
  }
  return largest;
}

bool reduces_in_backward(const Strategy& s) {
  return s.zero.stage >= 2 || (s.zero.stage == 1 && s.zero.overlap_comm && !uses_bf16_optimizer(s));
}

int64_t reduce_temporaries_bytes(const ModelSpec& m, const Strategy& s) {
  const auto& z = s.zero;
  if (z.stage == 0 || uses_bf16_optimizer(s)) return 0;
  const int64_t lp = bytes_per_element(s.model_dtype()), comm_b = bytes_per_element(communication_dtype(s));
  const int64_t bucket = std::min(z.reduce_bucket_size, trainable_parameter_count(m));
  if (z.stage <= 2) return lp * bucket + (comm_b != lp ? comm_b * bucket : 0);
  const bool in_place = contiguous_gradients_in_effect(s) && !z.reduce_scatter;
  int64_t bytes = in_place ? 0 : comm_b * bucket;
  const int64_t bucket_part = ceil_div(bucket, partition_world(s));
  const OffloadDevice opt = z.offload_optimizer.device;
  if (opt != OffloadDevice::none) bytes += bytes_per_element(s.grad_accum_dtype.value_or(s.model_dtype())) * bucket_part;
  if (opt == OffloadDevice::nvme) {
    const bool half_master = s.fp16.fp16_master_weights_and_grads || s.bf16.bf16_master_weights_and_grads;
    bytes += (half_master ? 2 : 4) * bucket_part;
  }
  return bytes;
}

int64_t allreduce_bucket_bytes(const Strategy& s, int64_t elements) {
  const int64_t grad_b = uses_bf16_optimizer(s) ? 4 : bytes_per_element(s.model_dtype());
  const int64_t comm_b = bytes_per_element(communication_dtype(s));
  return (grad_b + (comm_b != grad_b ? comm_b : 0)) * elements;
}

int64_t optimizer_swap_buffers_needed(const OffloadOptimizerConfig& o, int64_t sub_groups) {
  const int64_t in_flight = 1 + (o.pipeline_read ? 1 : 0) + (o.pipeline_write ? 1 : 0);
  return 4 * std::clamp<int64_t>(sub_groups, 1, in_flight);
}

}  // namespace zs::core
