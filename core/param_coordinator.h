// ZeRO-3 parameter coordinator: replays DeepSpeed's PartitionedParameterCoordinator (fetch, trace-based
// prefetch, the fetch-event throttle, NVMe swap-in of parameter partitions, release with reuse distance,
// persistence) over one forward+backward module trace, and reports what happens at every module invocation.
// One copy of this truth serves the memory model (`fit`) and the scheduler (`plan`).
//   auto trace = module_trace(model, /*recompute=*/true);
//   CoordinatorReplay r = replay_coordinator(model, trace, zero, param_swap(model, strategy));  // r.peak_live_numel
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

// ZeRO-Infinity parameter swapping (offload_param nvme): which lp partitions live on NVMe between uses, and
// the pinned swap buffers (offload_param.buffer_count, one partition each) that every swap-in needs.
struct ParamSwap {
  std::vector<char> on_nvme;  // by parameter id; empty without offload_param nvme
  int64_t buffer_count = 0;
};
// As DeepSpeed places the partitions: the first max_in_cpu partition elements and partitions under
// max(1 MiB, aio block_size) stay in CPU memory, the rest are swapped to NVMe.
ParamSwap param_swap(const ModelSpec& m, const Strategy& s);

// A parameter as the coordinator sees it: tied tensors are one parameter (wte ≡ lm_head).
struct CoordParam {
  int64_t numel = 0;
  bool persistent = false;  // numel <= stage3_param_persistence_threshold (within the model-wide cap)
  bool on_nvme = false;     // its partition is swapped to NVMe between uses (ParamSwap)
};

struct CoordinatorStep {
  std::vector<size_t> gathered;   // params all-gathered at this step: the module's own fetch, then the prefetch
  size_t fetched = 0;             // the first `fetched` of `gathered` are the module's own (issued before the wait)
  std::vector<size_t> waited;     // params whose in-flight all-gather the module waits on: one fetch event each
                                  // (the host keeps ≤ 2 outstanding: waiting on event e synchronises event e − 3)
  std::vector<size_t> nvme_sync;  // NVMe partitions the own fetch swaps in synchronously (not prefetched)
  std::vector<size_t> nvme_prefetch;  // swapped in asynchronously after the prefetch (__prefetch_nvme_param_partitions)
  std::vector<size_t> released;       // params released after the module ran (their swap buffers with them)
  int64_t live_numel_during = 0;      // non-persistent gathered numel while the module runs (after prefetch)
  int64_t live_numel_after = 0;       // after its release
};

struct CoordinatorReplay {
  std::vector<CoordParam> params;                  // by parameter id
  std::vector<std::vector<size_t>> module_params;  // module → param ids (tied resolved)
  std::vector<CoordinatorStep> steps;              // one per trace step
  int64_t persistent_numel = 0;                    // always resident, full size, on every rank
  int64_t peak_live_numel = 0;                     // max over steps of live_numel_during
  size_t peak_step = 0;
  int64_t peak_swap_buffers = 0;      // param swap buffers in use at most (NVMe)
  int64_t swap_buffer_shortfall = 0;  // most buffers a synchronous swap-in lacked: DeepSpeed asserts
  size_t shortfall_step = 0;          //   "Not enough swap in buffers" there (0 shortfall: never)
};

// Replays a complete trace (iteration ≥ 2, when DeepSpeed prefetches) with the config's
// prefetch_bucket_size, max_live_parameters, max_reuse_distance, persistence thresholds, and with NVMe
// partitions (`swap`) DeepSpeed's rules for them: the all-gather prefetch stops at the first parameter still on
// NVMe, and swap-ins run ahead only while numel considered ≤ 2 × numel in flight and buffers are free.
CoordinatorReplay replay_coordinator(const ModelSpec& m, const std::vector<TraceStep>& trace, const ZeroConfig& z,
                                     const ParamSwap& swap = {});

}  // namespace zs::core
