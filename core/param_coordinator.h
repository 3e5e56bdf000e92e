// ZeRO-3 parameter coordinator: replays DeepSpeed's PartitionedParameterCoordinator (fetch, trace-based
// prefetch, release with reuse distance, persistence) over one forward+backward module trace, and reports
// which parameters are gathered on the GPU at every module invocation. One copy of this truth serves the
// memory model (`fit`) and the scheduler (`plan`).
//   auto trace = module_trace(model, /*recompute=*/true);
//   CoordinatorReplay r = replay_coordinator(model, trace, zero);   // r.peak_live_numel
#pragma once

#include <cstdint>
#include <vector>

#include "core/model.h"
#include "core/strategy.h"

namespace zs::core {

enum class Pass { forward, recompute, backward };

// One sub-module invocation of the trace (DeepSpeed's __submodule_order entry).
struct TraceStep {
  size_t module = 0;  // index into module_table(model)
  Pass pass = Pass::forward;
};

// Forward in module order, then backward in reverse; with recompute (activation checkpointing per block) each
// block's backward is preceded by a forward re-run of that block's modules, as torch.utils.checkpoint does.
std::vector<TraceStep> module_trace(const ModelSpec& m, bool recompute);

// A parameter as the coordinator sees it: tied tensors are one parameter (wte ≡ lm_head).
struct CoordParam {
  int64_t numel = 0;
  bool persistent = false;  // numel <= stage3_param_persistence_threshold (within the model-wide cap)
};

struct CoordinatorStep {
  std::vector<size_t> gathered;   // params all-gathered at this step (fetch of the module + prefetch)
  std::vector<size_t> released;   // params released after the module ran
  int64_t live_numel_during = 0;  // non-persistent gathered numel while the module runs (after prefetch)
  int64_t live_numel_after = 0;   // after its release
};

struct CoordinatorReplay {
  std::vector<CoordParam> params;              // by parameter id
  std::vector<std::vector<size_t>> module_params;  // module → param ids (tied resolved)
  std::vector<CoordinatorStep> steps;          // one per trace step
  int64_t persistent_numel = 0;                // always resident, full size, on every rank
  int64_t peak_live_numel = 0;                 // max over steps of live_numel_during
  size_t peak_step = 0;
};

// Replays a complete trace (iteration ≥ 2, when DeepSpeed prefetches) with the config's
// prefetch_bucket_size, max_live_parameters, max_reuse_distance, persistence thresholds.
CoordinatorReplay replay_coordinator(const ModelSpec& m, const std::vector<TraceStep>& trace, const ZeroConfig& z);

}  // namespace zs::core
