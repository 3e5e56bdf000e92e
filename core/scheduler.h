// Scheduler: how make_plan (plan.h) builds one training step — the facts derived once from (model, hardware,
// strategy) that every stage needs, and the op emitter. Shared by core/scheduler*.cpp; callers use plan.h.
//   sched::Context cx(model, hw, strategy, options);   // parameters, partitions, sub-groups, coordinator replay
//   Plan p = sched::build(cx);                         // ops + ledger (what make_plan returns)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/param_coordinator.h"
#include "core/plan.h"

namespace zs::core::sched {

// Per-parameter tensors come in this order in Plan::tensors: kind-major, so the tensors of consecutive
// parameters (an IPG bucket, an optimizer sub-group) form one range [tensor, tensor + count).
constexpr std::array<TensorKind, 6> kParamKinds = {TensorKind::lp_param,    TensorKind::lp_grad,
                                                  TensorKind::fp32_master, TensorKind::adam_m,
                                                  TensorKind::adam_v,      TensorKind::fp32_grad};

// A parameter and an optimizer step unit, as the layout (layout.h) places them.
using Param = ParamLayout;
using OptGroup = GroupLayout;

// Where a pass of a trace step's module sits, for activation accounting.
struct StepInfo {
  bool block_first = false;   // first module of its block in forward order
  bool block_last = false;    // last module of its block in forward order
};

struct ComputeCost {
  double gemm_flops = 0;
  double attention_flops = 0;  // of gemm_flops
  double frozen_gemm_flops = 0;  // of gemm_flops: frozen weights' GEMMs (their backward has no weight gradient)
  int64_t mem_bound_bytes = 0;
  ModuleRole role = ModuleRole::none;
};

struct Context {
  Context(const ModelSpec& m, const Hardware& hw, const Strategy& s, const PlanOptions& o);

  const ModelSpec& m;
  const Hardware& hw;
  const Strategy& s;
  PlanOptions o;
  MemoryReport mem;                 // fit's report: static items and sizes (one copy of the numbers)
  Layout layout;                    // partitions, homes, sub-groups (params and groups below are its own)
  std::vector<ModuleInfo> modules;
  std::vector<TensorInfo> tensors;
  const std::vector<Param>& params = layout.params;
  std::vector<std::vector<size_t>> module_params;  // module → param ids (tied resolved)
  std::vector<TraceStep> trace;     // forward, then backward in reverse (with per-block recompute)
  CoordinatorReplay rep;            // stage 3 only
  const std::vector<OptGroup>& groups = layout.groups;
  std::vector<int32_t> module_first, module_last;  // per layer: first/last module index in forward order
  std::vector<ComputeCost> forward_cost;           // per module, one micro-batch
  // Per trace step: params whose full gradient autograd allocates there (first backward use) and params whose
  // gradient is complete there (last backward use: DeepSpeed's grad hook fires; the tied wte/lm_head at wte).
  std::vector<std::vector<size_t>> grads_alloc_at, grads_ready_at;
  ActivationBytes act;
  int64_t segment = 1;              // checkpointed blocks recomputed together (activation checkpointing)
  int stage = 0;
  int64_t world = 1, n_local = 1, lp = 2, gacc_b = 2, master_b = 4, state_b = 4;
  bool ckpt = false, cpu_ckpt = false;
  bool opt_offload = false;         // offload_optimizer cpu or nvme
  OffloadDevice opt_dev = OffloadDevice::none, par_dev = OffloadDevice::none;
  Schedule schedule = Schedule::deepspeed;

  size_t np() const { return params.size(); }
  // Index into Plan::tensors of a per-parameter tensor.
  int32_t tensor(TensorKind k, size_t param) const;
  // Activation tensors follow: one per block, then embedding and head/loss.
  int32_t activation_tensor(int64_t layer) const;  // layer -1 → embedding, layers → head and loss
};

// Emits ops in program order (ids ascending; deps point backwards) and keeps per-step bookkeeping.
class Emitter {
 public:
  explicit Emitter(Plan& p) : p_(p) {}
  uint32_t emit(Op op);
  Op& op(uint32_t id) { return p_.ops[id]; }
  uint32_t next_id() const { return static_cast<uint32_t>(p_.ops.size()); }
  Plan& plan() { return p_; }

 private:
  Plan& p_;
};

// State carried across micro-steps and into the optimizer phase.
struct StepState {
  int32_t micro = 0;
  bool boundary = false;                    // this micro-step ends the GA window
  int64_t last_compute = -1;                // latest compute op (data dependency chain)
  std::vector<int64_t> gather_op;           // stage 3: per param, the op that made it resident (-1: not)
  std::vector<int64_t> grad_delivered;      // per param: op that put its gradient where its optimizer reads it
  std::vector<int64_t> group_adam;          // per group: the Adam op (dpu: emitted before the micro-steps)
  std::vector<int64_t> group_done;          // per group: last op of its update (copy-back, swap-out)
  std::vector<char> group_emitted;          // overlap: group already stepped
  // Optimizer swap chain across groups (NVMe swapper pipelining; carried from the dpu prologue).
  std::vector<uint32_t> prev_reads, prev_writes, prev2_writes;  // of groups g-1 (and g-2)
  int64_t prev_adam_cpu = -1;
  int64_t last_backward = -1;               // last backward compute op of the step
  int64_t last_flush = -1;                  // last gradient reduction op
};

// Builds the plan: tensors, every micro-step, the optimizer phase, then ledger and feasibility.
Plan build(const Context& cx);

// Stage-specific emission (scheduler_steps.cpp, scheduler_optimizer.cpp).
void emit_micro_step(const Context& cx, Emitter& e, StepState& st);
void emit_optimizer(const Context& cx, Emitter& e, StepState& st);
void emit_dpu_prologue(const Context& cx, Emitter& e, StepState& st);   // Adam of the previous step's grads
void emit_overlap_ready_groups(const Context& cx, Emitter& e, StepState& st);  // groups whose grads all arrived
// Per-module forward cost for one micro-batch (scheduler_compute.cpp); backward = 2 × forward.
std::vector<ComputeCost> forward_costs(const ModelSpec& m, const Strategy& s, const MemoryOptions& mo,
                                       const std::vector<ModuleInfo>& modules, const std::vector<TensorInfo>& t);

// Small helpers shared by the emitters.
Op make_op(OpKind k, Purpose why, Stream s, Phase ph, int32_t micro, int32_t layer = -1);  // why: Op::purpose
int64_t wire_bytes(const Op& op);  // network bytes per rank of a collective op (collectives.h)

}  // namespace zs::core::sched
