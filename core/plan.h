// Plan: the ops of one training step (every GA micro-step, then the optimizer step) for each rank, with their
// dependencies and a memory ledger per tier. The simulator (sim/) and the engine (exec/) execute the same Plan.
//   Plan p = make_plan(model, hw, strategy, {.schedule = Schedule::deepspeed});
//   for (const Op& op : p.ops) ...            // topological order; op.deps point backwards
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/collectives.h"
#include "core/layout.h"
#include "core/memory.h"
#include "core/stream.h"

namespace zs::core {

enum class OpKind : uint8_t {
  forward, backward, recompute,        // compute on the GPU (gemm_flops + mem_bound_bytes)
  h2d, d2h, nvme_read, nvme_write,     // transfers (bytes)
  allgather, reduce_scatter, allreduce,  // collectives (bytes = full buffer; see collectives.h)
  adam_cpu, adam_gpu,                  // optimizer on a partition (params in `elements`)
  cast_cpu,                            // fp32 → lp copy-back / grad accumulation on the host (bytes)
  alloc, release                       // pure ledger ops (no time): working-set fetch targets, frees
};
enum class Phase : uint8_t { forward, backward, optimizer };
// What an op is for: the scheduler says it, the engine runs one handler per purpose. Not in the plan JSON (kind,
// stream, phase and tensor kind determine it; tests/core/test_plan_purpose.cpp checks the pairing).
enum class Purpose : uint8_t {
  unset,                     // a default-constructed op; no op of a plan keeps it
  compute,                   // forward, backward, recompute of one module
  checkpoint_out,            // d2h of a block's activation checkpoint to pinned host memory (cpu_checkpointing)
  checkpoint_in,             // h2d of it back before the block's recompute
  release_activations,       // release: a block's (the embedding's, the head's) activations
  read_params,               // ZeRO-3 fetch: nvme_read of lp partitions into parameter swap buffers
  upload_params,             // ZeRO-3 fetch: h2d of offloaded lp partitions into the gathered copy
  gather_params,             // ZeRO-3 fetch: allgather of a module's partitions (forward, backward)
  release_params,            // ZeRO-3 release_sub_module: the gathered copies (and swap buffers) freed
  release_grads,             // stages 2-3: completed lp gradients into the IPG bucket, their buffers freed
  reduce_grads,              // reduce_scatter of a gradient bucket
  alloc_allreduce_bucket,    // stage 0: the flattened all-reduce bucket
  allreduce_grads,           // allreduce of a gradient bucket (stage 0, BF16_Optimizer; stages 1-2 by default)
  release_allreduce_bucket,  // stage 0: the bucket freed
  alloc_reduce_temporaries,  // stages 1-3: the gradient reduction's flattened bucket and partition copies
  release_reduce_temporaries,  // ... freed when the micro-step's reductions are done
  offload_grads,             // lp gradient partitions between the GPU bucket and host memory (d2h, h2d)
  fp32_grads_to_host,        // the boundary's gradient partitions, cast to fp32, d2h to the group's buffer
  cast_fp32_grads,           // DeepSpeed < 0.19.5: the host cast after the blocking pageable d2h (cast_cpu)
  write_grads,               // an NVMe group's fp32 gradients to their file (nvme_write, backward)
  grad_norm,                 // the global gradient norm (scalar allreduce)
  swap_state_in,             // nvme_read of an NVMe group's master, m, v or fp32 gradients
  swap_state_out,            // nvme_write of an NVMe group's master, m or v
  alloc_fp32_grads,          // stage 3 GPU Adam: a group's transient fp32 gradients
  release_fp32_grads,        // ... freed after its Adam
  adam,                      // adam_cpu, adam_gpu on one group
  cast_params,               // fp32 master → lp on the host (cast_cpu, optimizer)
  upload_updated_params,     // h2d of updated lp partitions to the GPU
  updated_params_to_host,    // d2h of updated lp partitions to their host homes (GPU Adam, stage 3)
  write_updated_params,      // nvme_write of updated lp partitions to their files
  gather_updated_params,     // stages 1-2: allgather of the updated flat lp partitions
  gather_persistent_params,  // stage 3 _post_step: allgather of persistent parameters
};

// A tensor the plan moves or updates. `home` is where it lives between uses.
enum class TensorKind : uint8_t { lp_param, lp_grad, fp32_master, adam_m, adam_v, fp32_grad, activation };
struct PlanTensor {
  std::string name;      // "h.3.attn.c_attn.weight" (+ ".grad", ".master", ".exp_avg", ".exp_avg_sq", ".grad32"),
                         // "layer.3.activations", "embedding.activations", "head_and_loss.activations"
  TensorKind kind = TensorKind::lp_param;
  int32_t layer = -1;
  int64_t numel = 0;     // per rank (a partition for partitioned states)
  int64_t bytes = 0;
  Tier home = Tier::gpu;
  bool pinned = false;
  bool persistent = false;  // ZeRO-3 persistence threshold: full copy stays on the GPU
};

struct Op {
  uint32_t id = 0;
  int32_t rank = 0;          // with symmetry, the representative rank (0)
  Stream stream = Stream::compute;
  OpKind kind = OpKind::forward;
  Purpose purpose = Purpose::unset;  // what it is for (set by the scheduler; not in the JSON)
  Phase phase = Phase::forward;
  int32_t layer = -1;        // block index; -1 embeddings/head/whole-model
  int32_t micro_step = 0;    // GA micro-step; optimizer ops use the last
  int32_t tensor = -1;       // index into Plan::tensors, -1 if none
  int32_t tensor_count = 1;  // the op covers tensors [tensor, tensor + tensor_count) (a bucket, a sub-group)
  int64_t bytes = 0;         // moved bytes (transfers, collectives' full buffer, host casts: read + written)
  double gemm_flops = 0;     // compute: GEMM FLOPs (cost at GEMM efficiency)
  double attention_flops = 0;  // compute: the part of gemm_flops that is the attention core (QKᵀ, AV), priced at
                               // the attention implementation's efficiency
  int64_t mem_bound_bytes = 0;  // compute: HBM bytes of attention/norm/activation/loss/GPU-Adam work
  ModuleRole role = ModuleRole::none;  // compute: the module's role (a measured per-role time scale applies)
  int64_t elements = 0;      // optimizer ops: parameters updated
  bool pageable_host = false;  // h2d/d2h: the host side is a temporary PyTorch allocates (pageable), whatever the
                               // tensor's own buffer is: a blocking copy that converts the dtype on the CPU
  int32_t group_ranks = 1;   // collectives: ranks in the group
  std::vector<uint32_t> deps;   // ids of ops this one waits for (all < id)
  std::array<int64_t, 3> mem_delta{};  // bytes allocated (+) / freed (−) per tier when the op completes
                                       // (gpu per rank; cpu and nvme per node: every local rank does the same)
};

struct StepBytes {
  int64_t h2d = 0, d2h = 0, nvme_read = 0, nvme_write = 0, network = 0;  // per rank per step (network: wire bytes)
};

struct PlanOptions {
  Schedule schedule = Schedule::deepspeed;
  MemoryOptions memory;
};

struct Plan {
  std::string model, hardware, ds_config;  // names, for people and the JSON
  int64_t ranks = 1;              // data-parallel world size described
  int64_t ranks_per_node = 1;
  int64_t represented_ranks = 1;  // ranks whose ops are listed (1 with symmetry: one rank + collective descriptions)
  Schedule schedule = Schedule::deepspeed;
  // Per parameter P_i (untied tensor of the tensor table, forward order) one tensor of each kind lp_param,
  // lp_grad, fp32_master, adam_m, adam_v, fp32_grad, kind-major: tensors[k·n_params + i]; so a bucket or a
  // sub-group of consecutive parameters is one range. Then one activation tensor per layer, embedding, head.
  std::vector<PlanTensor> tensors;
  Layout layout;  // every parameter's partition, homes and optimizer group (layout.h), as the ops assume them
  MemoryReport memory;  // fit's report the plan was built from (its static items; not in the plan JSON)
  std::vector<Op> ops;
  // Occupancy per tier after each op (program order) above static_bytes: what the ops allocated and have not
  // freed yet (activations, gathered ZeRO-3 params, full grads, buckets, checkpoints on the host). GPU per rank,
  // CPU and NVMe per node. Back to zero at the end of the step.
  std::vector<std::array<int64_t, 3>> ledger;
  std::array<int64_t, 3> static_bytes{};       // allocated before the first op (model states, buffers, context)
  // The framework's fixed bytes within static_bytes (the CUDA context, the caching allocator's reserve, the Python
  // process: MemoryOptions): what a PyTorch run holds besides its tensors. 0 in the engine's Plan.
  std::array<int64_t, 3> overhead_bytes{};
  std::array<int64_t, 3> init_bytes{};         // occupancy while the model is built (fit's init peak), before op 0
  std::array<int64_t, 3> peak_bytes{};         // max of init and static + ledger
  std::array<int64_t, 3> peak_op{-1, -1, -1};  // op after which each tier peaks (-1: static or init)
  std::array<int64_t, 3> capacity_bytes{};
  StepBytes per_step;
  bool feasible = true;
  std::string infeasible_reason;  // "gpu overflows at op 1234 (backward layer 7): needs 33.1 GiB, has 32.0 GiB"
  int64_t overflow_op = -1;       // the op named there (-1: none, or static/init already overflows)
  std::vector<std::string> notes; // modelling choices that apply (e.g. "dpu: optimizer on GPU, same as deepspeed")
  int64_t tokens_per_step = 0;    // global
  double model_flops_per_step = 0;  // per rank, without recompute (for MFU)

  // The parameter a per-parameter tensor belongs to (tensors are kind-major: tensors[k·n_params + i]).
  size_t param_of(int32_t tensor) const { return static_cast<size_t>(tensor) % layout.params.size(); }
  // An activation tensor's slot: its layer, m.layers for the embedding, m.layers + 1 for the head and loss.
  int64_t activation_slot(int32_t tensor) const { return tensor - static_cast<int64_t>(6 * layout.params.size()); }
};

// Pure and deterministic: the same inputs give the same plan byte for byte.
Plan make_plan(const ModelSpec& m, const Hardware& hw, const Strategy& s, const PlanOptions& o = {});

// Ops per phase, bytes per link direction, peaks per tier: what `zerosim plan --summary` prints.
struct PlanSummary {
  std::array<int64_t, 3> ops_per_phase{};  // forward, backward, optimizer
  std::array<int64_t, 3> compute_ops_per_phase{};
  int64_t collectives = 0;
  double gemm_flops = 0;         // per rank per step, recompute included
  int64_t mem_bound_bytes = 0;
};
PlanSummary summarize(const Plan& p);

// The plan as JSON (docs/PLAN.md): ids, streams, kinds and phases as strings; tensors; ledger per op.
std::string plan_to_json(const Plan& p, bool with_ledger = true);

std::string to_string(OpKind k);
std::string to_string(Phase p);
std::string to_string(Purpose p);
std::string to_string(Schedule s);
std::string to_string(TensorKind k);
std::optional<Schedule> parse_schedule(const std::string& name);

}  // namespace zs::core
