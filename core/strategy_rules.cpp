// Rules DeepSpeed derives from several ds_config keys at once (declared in strategy.h), each in one place: the
// communication dtype, the BF16_Optimizer choice, MiCS's partition group, whether the IPG bucket exists.
#include "core/strategy.h"

namespace zs::core {

Precision communication_dtype(const Strategy& s) { return s.communication_data_type.value_or(s.model_dtype()); }

bool uses_bf16_optimizer(const Strategy& s) {
  return s.bf16.enabled && s.grad_accum_dtype == Precision::fp32 && s.zero.stage == 1 &&
         s.zero.offload_optimizer.device == OffloadDevice::none;
}

int64_t partition_world(const Strategy& s) {
  const int64_t shard = s.zero.mics_shard_size;
  return s.zero.stage == 3 && shard > 0 && shard < s.world() ? shard : s.world();
}

bool contiguous_gradients_in_effect(const Strategy& s) {
  const bool offload = s.zero.offload_optimizer.device != OffloadDevice::none;
  return s.zero.contiguous_gradients || (s.zero.stage <= 2 && offload);
}

}  // namespace zs::core
