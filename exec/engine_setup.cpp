// Engine setup (engine.h): what the engine supports, the Plan, the layout of parameters and optimizer groups,
// the static memory item by item from the memory model (initialisation: engine_init.cpp).
#include <algorithm>
#include <cmath>
#include <set>

#include "exec/engine_impl.h"
#include "exec/thread_pool.h"

namespace zs::exec {

using core::Error;
using core::ErrorKind;
using core::OpKind;
using core::Result;

namespace {

Error unsupported(const std::string& what) { return Error{ErrorKind::unsupported, what}; }

}  // namespace

// --- setup: what the engine supports, the Plan, the layout -------------------------------------------------------

Status Engine::Impl::setup() {
  ZS_TRY(check_supported());
  if (!plan.feasible) return core::bad_input("the plan does not fit: " + plan.infeasible_reason);
  mem = plan.memory;
  act_plan = mem.activations;
  ZS_TRY(build_model());
  ZS_TRY(place_params());
  make_optimizer();
  ZS_TRY(map_compute_ops());
  ZS_TRY(map_buckets_and_runs());
  // Loss scaling (fp16): DeepSpeed's DynamicLossScaler, or a static scale.
  if (s.fp16.enabled) {
    scaler.dynamic = s.fp16.loss_scale == 0;
    scaler.scale = scaler.dynamic ? std::pow(2.0, static_cast<double>(s.fp16.initial_scale_power)) : s.fp16.loss_scale;
    scaler.min_scale = s.fp16.min_loss_scale;
    scaler.window = s.fp16.loss_scale_window;
    scaler.delayed_shift = scaler.cur_hysteresis = s.fp16.hysteresis;
    scaler.consecutive_hysteresis = s.fp16.consecutive_hysteresis;
  }
  cpu_acct.set_capacity(hw.cpu.memory_bytes());
  nvme_acct.set_capacity(std::max<int64_t>(hw.nvme.capacity_bytes(), 0));
  return {};
}

// What the engine runs: the world of the communicator, and the DeepSpeed features it implements. Sets the run's
// constants (stage, dtypes, offload devices as the Plan's layout has them).
Status Engine::Impl::check_supported() {
  const auto& z = s.zero;
  world = comm->world();
  rank = comm->rank();
  if (s.world() != world)
    return core::bad_input("the strategy describes " + std::to_string(s.world()) + " data-parallel ranks (nodes x " +
                           "gpus_per_node), the communicator has " + std::to_string(world));
  if (world > 1 && o.schedule == core::Schedule::overlap)
    return unsupported(
        "the overlap schedule with more than one rank: a redone speculative update would need a "
        "second all-gather of the lp parameters");
  if (z.offload_optimizer.ratio < 1.0) return unsupported("offload_optimizer.ratio < 1 (Twin-Flow) is not supported");
  if (s.fp16.fp16_master_weights_and_grads || s.bf16.bf16_master_weights_and_grads)
    return unsupported("16-bit master weights (fp16/bf16 *_master_weights_and_grads) are not supported");
  if (z.zero_hpz_partition_size > 1) return unsupported("ZeRO++ hpZ (zero_hpz_partition_size > 1) is not supported");
  if (s.grad_accum_dtype && *s.grad_accum_dtype != s.model_dtype())
    return unsupported("data_types.grad_accum_dtype other than the model dtype is not supported");
  if (s.communication_data_type && *s.communication_data_type != s.model_dtype())
    return unsupported("communication_data_type other than the model dtype is not supported");
  std::string opt = s.optimizer.type;
  std::transform(opt.begin(), opt.end(), opt.begin(), ::tolower);
  if (opt != "adam" && opt != "adamw" && opt != "cpuadam" && opt != "deepspeedcpuadam" && opt != "fusedadam")
    return unsupported("optimizer \"" + s.optimizer.type +
                       "\": the engine runs Adam/AdamW (DeepSpeed's CPU Adam math)");
  stage = z.stage;
  ga = s.gradient_accumulation_steps;
  L = m.layers;
  dt = dtype_of(s.model_dtype());
  lp = dtype_bytes(dt);
  mixed = dt != DType::fp32;
  ckpt = s.activation_checkpointing.enabled;
  cpu_ckpt = ckpt && s.activation_checkpointing.cpu_checkpointing;
  opt_dev = plan.layout.optimizer_device;
  par_dev = plan.layout.param_device;
  opt_offload = opt_dev != core::OffloadDevice::none;
  if (stage >= 2 && !z.contiguous_gradients)
    return unsupported("stage " + std::to_string(stage) + " with contiguous_gradients false (no IPG bucket) is not supported");
  if (stage == 3 && !z.reduce_scatter)
    return unsupported("stage 3 with reduce_scatter false (an all-reduce of each bucket) is not supported");
  if (core::uses_bf16_optimizer(s))
    return unsupported("BF16_Optimizer (bf16, stage 1, data_types.grad_accum_dtype fp32) is not supported");
  if (core::partition_world(s) != s.world())
    return unsupported("MiCS (mics_shard_size below the world size) is not supported");
  if (s.aio.use_gds) return unsupported("aio.use_gds (GPUDirect Storage swap buffers on the GPU) is not supported");
  const bool clip_or_scale = s.gradient_clipping > 0 || s.fp16.enabled;
  if (o.schedule == core::Schedule::dpu && opt_dev == core::OffloadDevice::nvme)
    return unsupported("dpu with offload_optimizer nvme (ZeRO-Offload's delayed update is a CPU-offload schedule)");
  if (o.schedule == core::Schedule::overlap && opt_offload && s.fp16.enabled)
    return unsupported("overlap with fp16: the overflow check needs every gradient before a layer's update; use bf16");
  if (o.schedule == core::Schedule::overlap && opt_dev == core::OffloadDevice::nvme && clip_or_scale)
    return unsupported(
        "overlap with offload_optimizer nvme and gradient_clipping: a speculative update cannot be "
        "redone from NVMe; set gradient_clipping 0");
  return {};
}

// The model, and its activation arenas checked against the memory model's count.
Status Engine::Impl::build_model() {
  auto gm = GptModel::create(m, dt, s.micro_batch_per_gpu, s.run.seq_len);
  if (!gm) return gm.error();
  model.emplace(std::move(*gm));
  if (model->layer_bytes() > act_plan.per_layer_full || model->head_bytes() > act_plan.head_and_loss ||
      model->checkpoint_bytes() != act_plan.per_layer_checkpoint)
    return internal("activation arenas (" + std::to_string(model->layer_bytes()) + ", " +
                    std::to_string(model->head_bytes()) + " B) exceed the memory model's count (" +
                    std::to_string(act_plan.per_layer_full) + ", " + std::to_string(act_plan.head_and_loss) + " B)");
  // GPT-2's arenas count two dropout masks this engine does not use (no dropout): one [N, C] 16-bit buffer, where
  // the backward residual gradient lives, so no memory beyond the Plan's is needed. Recompute arenas appear too
  // late for that (a block's input gradient arrives before its recompute), and other models have no masks.
  spare_dres = !ckpt && model->parks_in_arena() &&
               act_plan.per_layer_full - model->layer_bytes() >= model->residual_grad_bytes();
  return {};
}

// One optimizer tracks β^t for every group (they all step together); the groups' updates run its kernel on the
// shared CPU Adam threads (CPU groups) or on the device's compute stream (GPU groups).
void Engine::Impl::make_optimizer() {
  AdamHyper h;
  h.lr = static_cast<float>(s.optimizer.lr);
  h.beta1 = static_cast<float>(s.optimizer.beta1);
  h.beta2 = static_cast<float>(s.optimizer.beta2);
  h.eps = static_cast<float>(s.optimizer.eps);
  h.weight_decay = static_cast<float>(s.optimizer.weight_decay);
  h.adamw_mode = s.optimizer.adam_w_mode;
  h.bias_correction = s.optimizer.bias_correction;
  adam = std::make_unique<CpuAdam>(h, AdamOptions{.threads = 1});
  adam_pool = std::make_unique<ThreadPool>(o.cpu_adam_threads > 0 ? o.cpu_adam_threads : available_cpus());
}

// Compute ops in order are the module trace's steps, micro-step by micro-step; and in the backward, where each
// parameter's full gradient is first allocated and where it is complete.
Status Engine::Impl::map_compute_ops() {
  const size_t np = params.size();
  for (const auto& mi : model->modules()) module_params.push_back(mi.params);
  trace = core::module_trace(m, ckpt);
  op_step.assign(plan.ops.size(), -1);
  int32_t k = 0, micro = 0;
  for (const auto& op : plan.ops) {
    if (op.kind != OpKind::forward && op.kind != OpKind::backward && op.kind != OpKind::recompute) continue;
    if (op.micro_step != micro) {
      micro = op.micro_step;
      k = 0;
    }
    if (k >= static_cast<int32_t>(trace.size())) return internal("more compute ops than trace steps");
    const core::TraceStep& ts = trace[static_cast<size_t>(k)];
    const OpKind want = ts.pass == core::Pass::forward    ? OpKind::forward
                        : ts.pass == core::Pass::backward ? OpKind::backward
                                                          : OpKind::recompute;
    if (op.kind != want) return internal("op " + std::to_string(op.id) + " does not match the module trace");
    op_step[op.id] = k++;
  }
  grads_alloc_at.assign(trace.size(), {});
  grads_ready_at.assign(trace.size(), {});
  std::vector<int64_t> first(np, -1), last(np, -1);
  for (size_t st = 0; st < trace.size(); ++st) {
    if (trace[st].pass != core::Pass::backward) continue;
    for (int32_t p : module_params[trace[st].module]) {
      if (first[static_cast<size_t>(p)] < 0) first[static_cast<size_t>(p)] = static_cast<int64_t>(st);
      last[static_cast<size_t>(p)] = static_cast<int64_t>(st);
    }
  }
  for (size_t p = 0; p < np; ++p) {
    if (first[p] >= 0) grads_alloc_at[static_cast<size_t>(first[p])].push_back(static_cast<int32_t>(p));
    if (last[p] >= 0) grads_ready_at[static_cast<size_t>(last[p])].push_back(static_cast<int32_t>(p));
  }
  return {};
}

// Each gradient reduction's bucket (which parameters, at which offset) and each NVMe gradient file, op by op.
Status Engine::Impl::map_buckets_and_runs() {
  const size_t np = params.size();
  bucket_of.assign(static_cast<size_t>(ga), std::vector<std::pair<int32_t, int64_t>>(np, {-1, 0}));
  bucket_k.assign(plan.ops.size(), 0);
  run_of_first.assign(np, -1);
  int32_t turn = 0;
  for (const auto& op : plan.ops) {
    const bool collective =
        op.kind == OpKind::reduce_scatter || op.kind == OpKind::allreduce || op.kind == OpKind::allgather;
    if (collective && op.bytes > 4 && op.group_ranks != world)
      return internal("op " + std::to_string(op.id) + " is a collective over " + std::to_string(op.group_ranks) +
                      " ranks; the data-parallel group has " + std::to_string(world));
    const bool reduce = (op.kind == OpKind::reduce_scatter || op.kind == OpKind::allreduce) &&
                        op.phase == core::Phase::backward && op.tensor >= 0;
    if (reduce) {
      bucket_k[op.id] = turn++;
      int64_t off = 0;
      const size_t a = plan.param_of(op.tensor);
      for (size_t p = a; p < a + static_cast<size_t>(op.tensor_count); ++p) {
        auto& slot = bucket_of[static_cast<size_t>(op.micro_step)][p];
        if (slot.first >= 0) return internal("parameter '" + params[p].name + "' is reduced twice in a micro-step");
        slot = {static_cast<int32_t>(op.id), off};
        off += stage <= 1 ? params[p].part : bucket_numel(params[p]);
      }
      if (stage >= 2 && off > s.zero.reduce_bucket_size)
        return unsupported("a parameter larger than reduce_bucket_size (" + std::to_string(s.zero.reduce_bucket_size) +
                           " elements) is reduced outside the bucket; raise reduce_bucket_size");
    }
    if (op.kind == OpKind::nvme_write && op.phase == core::Phase::backward && op.tensor >= 0 &&
        plan.tensors[static_cast<size_t>(op.tensor)].kind == core::TensorKind::fp32_grad) {
      GradRun run;
      run.first = plan.param_of(op.tensor);
      run.last = run.first + static_cast<size_t>(op.tensor_count);
      run.group = static_cast<size_t>(params[run.first].group);
      if (static_cast<size_t>(params[run.last - 1].group) != run.group)
        return internal("a gradient run spans two optimizer groups");
      if (run_of_first[run.first] >= 0) continue;  // the same run in another step of the plan (none today)
      run.offset = params[run.first].group_offset;
      for (size_t p = run.first; p < run.last; ++p) run.elements += params[p].part;
      run.name = "g" + std::to_string(run.group) + ".grad32.p" + std::to_string(run.first);
      run_of_first[run.first] = static_cast<int32_t>(grad_runs.size());
      groups[run.group].runs.push_back(grad_runs.size());
      grad_runs.push_back(run);
    }
  }
  return {};
}

// The model's untied tensors are the Plan's parameters, in the same order; the layout the Plan carries says
// which elements of each this rank holds, where its 16-bit partition lives and which group updates it.
Status Engine::Impl::place_params() {
  const auto& mp = model->params();
  const core::Layout& layout = plan.layout;
  const size_t np = mp.size();
  if (layout.params.size() != np || plan.tensors.size() < 6 * np)
    return internal("the plan's layout has " + std::to_string(layout.params.size()) + " parameters, the model " +
                    std::to_string(np));
  const std::vector<core::RankSlice> mine = layout.slices(rank);
  params.resize(np);
  flat_part = layout.flat_partition;
  for (size_t i = 0; i < np; ++i) {
    const core::ParamLayout& pl = layout.params[i];
    if (pl.name != mp[i].name || pl.numel != mp[i].numel)
      return internal("plan parameter " + std::to_string(i) + " is '" + pl.name + "', the model's is '" + mp[i].name +
                      "'");
    ParamRt& r = params[i];
    r.name = pl.name;
    r.numel = pl.numel;
    r.part = mine[i].count;
    r.part_start = mine[i].start;
    r.flat = pl.flat_offset;
    r.part_flat = mine[i].partition_offset;
    r.persistent = pl.persistent;
    r.lp_home = pl.lp_home;
    r.swap_name = "p" + std::to_string(i) + ".lp";
  }
  std::array<int64_t, 3> tier_off{};
  for (const core::GroupLayout& gl : layout.groups) {
    GroupRt g;
    g.first = gl.first;
    g.last = gl.last;
    g.tier = gl.tier;
    for (size_t p = g.first; p < g.last; ++p) {
      params[p].group = static_cast<int32_t>(groups.size());
      params[p].group_offset = g.elements;
      g.elements += params[p].part;
    }
    g.offset = tier_off[static_cast<size_t>(g.tier)];
    tier_off[static_cast<size_t>(g.tier)] += g.elements;
    groups.push_back(std::move(g));
  }
  // Every Adam op of the Plan updates one of these groups.
  for (const auto& op : plan.ops)
    if (op.kind == OpKind::adam_cpu || op.kind == OpKind::adam_gpu) {
      const size_t first = plan.param_of(op.tensor);
      const int32_t g = params[first].group;
      if (g < 0 || groups[static_cast<size_t>(g)].first != first ||
          groups[static_cast<size_t>(g)].last != first + static_cast<size_t>(op.tensor_count))
        return internal("op " + std::to_string(op.id) + " updates parameters that are not one optimizer group");
    }
  return {};
}

// --- static memory ---------------------------------------------------------------------------------------------

Result<Buffer> Engine::Impl::alloc_gpu(int64_t bytes, const std::string& name) { return dev->allocate(bytes, name); }

Result<Buffer> Engine::Impl::alloc_cpu(int64_t bytes, bool pinned, const std::string& name) {
  return dev->allocate_host(bytes, pinned, name, cpu_acct);
}

void Engine::Impl::extra(const std::string& name, int64_t bytes) { extras[name] = std::max(extras[name], bytes); }

void Engine::Impl::note(const std::string& n) {
  if (std::find(notes.begin(), notes.end(), n) == notes.end()) notes.push_back(n);
}

// The memory model's steady-state items as the engine allocates them: each item once, with ZeRO-3's per-parameter
// padding on top of the partitioned ones, and a check that what the engine lays out in an item fits in it.
class StaticItems {
 public:
  explicit StaticItems(Engine::Impl& impl) : I(impl) {
    state_b = I.s.bf16.bf16_optimizer_states ? 2 : 4;
    // ZeRO-3 with several ranks: DeepSpeed pads every parameter's partition to ceil(numel / world), the memory
    // model counts ceil(P / world) for the partitioned items — up to world − 1 elements per parameter fewer. The
    // engine allocates that padding on top of those items and lists it.
    if (I.stage == 3 && I.world > 1)
      pad_elems = std::max<int64_t>(0, I.plan.layout.partition_elements - I.plan.layout.flat_partition);
    pad_bytes_per_elem = {{"lp_params", I.lp},         {"lp_grads", I.lp},   {"fp32_master", 4},
                          {"fp32_grads", 4},           {"adam_m_v", 2 * state_b}, {"grad_accum", I.lp}};
  }

  const core::MemoryItem* item(Tier t, const char* key) const {
    for (const auto& i : I.mem.tier(t).items)
      if (i.key == key && !i.transient) return &i;
    return nullptr;
  }

  // Every steady-state item must be one the engine knows how to use.
  Status check_known() const {
    static const std::set<std::string> known = {
        "lp_params",          "persistent_params",  "lp_grads",         "fp32_master",           "fp32_grads",
        "adam_m_v",           "comm_buckets",       "offload_staging",  "lp_copy_back",          "grad_accum",
        "param_swap_buffers", "param_swap_reserve", "opt_swap_buffers", "activation_checkpoints"};
    for (Tier t : {Tier::gpu, Tier::cpu})
      for (const auto& i : I.mem.tier(t).items)
        if (!i.transient && !known.count(i.key) && i.bytes > 0)
          return unsupported("memory item '" + i.key + "' (" + i.label + ") has no use in the engine");
    return {};
  }

  // Allocates item `key` of tier t (nullptr when the model has none).
  Result<unsigned char*> take(Tier t, const char* key, std::map<std::string, Buffer>& into) {
    const core::MemoryItem* it = item(t, key);
    if (!it) return static_cast<unsigned char*>(nullptr);
    int64_t bytes = it->bytes;
    if (pad_elems > 0 && pad_bytes_per_elem.count(key)) {
      bytes += pad_elems * pad_bytes_per_elem.at(key);
      pad_total += pad_elems * pad_bytes_per_elem.at(key);
      I.extra("ZeRO-3 partition padding (ceil(numel/world) per parameter; the memory model counts ceil(P/world))",
              pad_total);
    }
    // A GPU reads and writes some host items directly (the ZeRO-3 lp and gradient partitions, the fp32 master a
    // GPU-resident partition is cast from): page-locked on a real device even where the ds_config leaves them
    // pageable (pin_memory false), which DeepSpeed's PyTorch copies tolerate and a kernel does not.
    bool pinned = it->pinned;
    if (t == Tier::cpu && !pinned && I.dev->info().kind != "host" &&
        (std::string(key) == "lp_params" || std::string(key) == "lp_grads" || std::string(key) == "fp32_master")) {
      pinned = true;
      I.note(std::string("CPU item ") + key +
             " is page-locked although pin_memory is false: the GPU reads and writes it directly");
    }
    auto b = t == Tier::gpu ? I.alloc_gpu(bytes, key) : I.alloc_cpu(bytes, pinned, key);
    if (!b) return b.error();
    auto* p = b->as<unsigned char>();
    into[key] = std::move(*b);
    return p;
  }

  Status use_check(Tier t, const char* key, int64_t used) const {
    const core::MemoryItem* it = item(t, key);
    const int64_t have =
        (it ? it->bytes : 0) + (it && pad_bytes_per_elem.count(key) ? pad_elems * pad_bytes_per_elem.at(key) : 0);
    if (used > have)
      return internal(std::string("memory item ") + key + " on " + core::to_string(t) + " holds " +
                      std::to_string(have) + " B, the engine lays out " + std::to_string(used) + " B");
    return {};
  }

  // The optimizer states of the groups at home on tier t: master, fp32 gradients, m then v (all groups' m first).
  Status states(Tier t, std::map<std::string, Buffer>& into) {
    auto master = take(t, "fp32_master", into);
    if (!master) return master.error();
    auto g32 = take(t, "fp32_grads", into);
    if (!g32) return g32.error();
    auto mv = take(t, "adam_m_v", into);
    if (!mv) return mv.error();
    int64_t n = 0;
    for (auto& g : I.groups)
      if (g.tier == t) n += g.elements;
    for (auto& g : I.groups) {
      if (g.tier != t) continue;
      if (*master) g.master = reinterpret_cast<float*>(*master) + g.offset;
      if (*g32) g.g32 = reinterpret_cast<float*>(*g32) + g.offset;
      if (*mv) {
        g.m = *mv + g.offset * state_b;
        g.v = *mv + (n + g.offset) * state_b;
      }
    }
    if (n > 0) {
      ZS_TRY(use_check(t, "adam_m_v", 2 * n * state_b));
      if (*master) ZS_TRY(use_check(t, "fp32_master", 4 * n));
      if (*g32) ZS_TRY(use_check(t, "fp32_grads", 4 * n));
    }
    return {};
  }

  // The ledger's buffer_count × size items, as buffer_count allocations (SlotPool).
  Status take_slots(const char* key, int64_t count, SlotPool& pool) {
    const core::MemoryItem* it = item(Tier::cpu, key);
    if (!it) return {};
    count = std::max<int64_t>(1, count);
    if (it->bytes % count != 0) return internal(std::string(key) + " is not buffer_count equal buffers");
    pool.slot_bytes = it->bytes / count;
    pool.slots.clear();
    for (int64_t i = 0; i < count; ++i) {
      auto b = I.alloc_cpu(pool.slot_bytes, it->pinned, key);
      if (!b) return b.error();
      pool.slots.push_back(b->as<unsigned char>());
      I.cpu_items[std::string(key) + "#" + std::to_string(i)] = std::move(*b);
    }
    pool.busy.assign(static_cast<size_t>(count), 0);
    pool.last_use.assign(static_cast<size_t>(count), Event());
    return {};
  }

 private:
  Engine::Impl& I;
  int64_t state_b = 4;
  int64_t pad_elems = 0, pad_total = 0;
  std::map<std::string, int64_t> pad_bytes_per_elem;
};

// The host scalars the device writes: norm² shares and token losses (page-locked, outside the Plan).
Status Engine::Impl::allocate_host_scalars() {
  const size_t np = params.size();
  auto nb = dev->allocate_host(static_cast<int64_t>(8 * np), true, "gradient norm partials", scalars_acct);
  if (!nb) return nb.error();
  norm_parts = std::move(*nb);
  for (size_t p = 0; p < np; ++p) {
    params[p].sumsq = norm_parts.as<double>() + p;
    *params[p].sumsq = 0;
  }
  auto lb = dev->allocate_host(4 * ga * model->tokens(), true, "token losses", scalars_acct);
  if (!lb) return lb.error();
  loss_parts = std::move(*lb);
  auto tb = dev->allocate_host(8 * ga * model->tokens(), true, "token ids", scalars_acct);
  if (!tb) return tb.error();
  tokens_host = std::move(*tb);
  if (dev->info().kind != "host") {  // kernels read token ids from device memory
    auto td = dev->allocate(tokens_host.bytes(), "token ids");
    if (!td) return td.error();
    tokens_dev = std::move(*td);
    extra("token ids on the device ([GA][2 x tokens] int32)", tokens_dev.bytes());
  }
  extra("host scalars the device writes (gradient norm partials 8 B per parameter tensor, token losses 4 B per "
        "token per micro-step)",
        norm_parts.bytes() + loss_parts.bytes());
  return {};
}

// GPU: the lp parameters (stages 0-2 whole, stage 3 the GPU-resident partitions), the persistent ones, the lp
// gradients, the GPU groups' optimizer states, the reduce buckets and the offload staging.
Status Engine::Impl::allocate_gpu_static(StaticItems& items) {
  auto lpg = items.take(Tier::gpu, "lp_params", gpu_items);
  if (!lpg) return lpg.error();
  int64_t used = 0;
  for (auto& p : params) {
    if (stage < 3) {
      p.lp_full = *lpg + p.flat * lp;
      used = std::max(used, (p.flat + p.numel) * lp);
    } else if (p.lp_home == Tier::gpu) {
      p.lp_part = *lpg + used;
      used += p.part * lp;
    }
  }
  ZS_TRY(items.use_check(Tier::gpu, "lp_params", used));
  auto pers = items.take(Tier::gpu, "persistent_params", gpu_items);
  if (!pers) return pers.error();
  used = 0;
  for (auto& p : params)
    if (stage == 3 && p.persistent) {
      p.lp_full = *pers + used;
      used += p.numel * lp;
    }
  ZS_TRY(items.use_check(Tier::gpu, "persistent_params", used));
  if (!(stage == 3 && opt_offload)) {  // the lp gradients live on the GPU
    auto g = items.take(Tier::gpu, "lp_grads", gpu_items);
    if (!g) return g.error();
    used = 0;
    for (auto& p : params)
      if (stage <= 1) {
        p.grad_acc = *g + p.flat * lp;
        used = std::max(used, (p.flat + p.numel) * lp);
      } else if (stage == 3 || !opt_offload) {
        p.grad_acc = *g + p.part_flat * lp;
        used = std::max(used, (p.part_flat + p.part) * lp);
      }
    ZS_TRY(items.use_check(Tier::gpu, "lp_grads", used));
  }
  ZS_TRY(items.states(Tier::gpu, gpu_items));
  // Without a separate fp32 copy (an fp32 model at stage 0) Adam updates the parameters and reads their grads.
  for (auto& g : groups)
    if (g.tier == Tier::gpu) {
      if (!g.master && !mixed)
        g.master = static_cast<float*>(params[g.first].lp_full ? params[g.first].lp_full : params[g.first].lp_part);
      if (!g.g32 && !mixed) g.g32 = static_cast<float*>(params[g.first].grad_acc);
      if (!g.master || (!g.g32 && stage < 3) || !g.m) return internal("GPU optimizer group without its states");
    }
  if (const core::MemoryItem* b = items.item(Tier::gpu, "comm_buckets")) {
    const int64_t per = lp * s.zero.reduce_bucket_size;
    const int64_t count = per > 0 ? b->bytes / per : 0;
    for (int64_t i = 0; i < count; ++i) {
      auto buf = alloc_gpu(per, "comm_buckets#" + std::to_string(i));
      if (!buf) return buf.error();
      buckets.push_back(std::make_shared<Buffer>(std::move(*buf)));
    }
    if (count * per != b->bytes) return internal("comm_buckets is not a whole number of buckets");
    bucket_elems = s.zero.reduce_bucket_size;
  }
  auto stg = items.take(Tier::gpu, "offload_staging", gpu_items);
  if (!stg) return stg.error();
  staging_gpu = *stg;
  return {};
}

// CPU: lp partitions first (they exist while the model is built), then the parameters are initialised, then the
// rest: lp gradients (ZeRO-3 offload), the CPU groups' states, copy-back and accumulation buffers, swap buffers.
Status Engine::Impl::allocate_cpu_static(StaticItems& items) {
  auto lpc = items.take(Tier::cpu, "lp_params", cpu_items);
  if (!lpc) return lpc.error();
  int64_t used = 0;
  for (auto& p : params)
    if (stage == 3 && p.lp_home == Tier::cpu) {
      p.lp_part = *lpc + used;
      used += p.part * lp;
    }
  ZS_TRY(items.use_check(Tier::cpu, "lp_params", used));
  ZS_TRY(init_params());
  if (stage == 3 && opt_offload) {  // the lp gradients live on the host
    auto g = items.take(Tier::cpu, "lp_grads", cpu_items);
    if (!g) return g.error();
    for (auto& p : params) p.grad_acc = *g + p.part_flat * lp;
  }
  ZS_TRY(items.states(Tier::cpu, cpu_items));
  for (const char* key : {"lp_copy_back", "grad_accum", "offload_staging"}) {
    auto b = items.take(Tier::cpu, key, cpu_items);
    if (!b) return b.error();
    if (std::string(key) == "lp_copy_back") copy_back = *b;
    if (std::string(key) == "grad_accum") grad_accum_cpu = *b;
  }
  if (stage <= 2 && opt_offload) {
    if (!copy_back) return internal("stage 1/2 CPU offload without lp_copy_back");
    if (ga > 1 && stage == 2 && !grad_accum_cpu) return internal("stage 2 GA without grad_accum");
  }
  ZS_TRY(items.take_slots("param_swap_buffers", s.zero.offload_param.buffer_count, pswap_slots));
  if (!pswap_slots.slots.empty()) {
    for (auto& p : params)
      if (p.lp_home == Tier::nvme && p.part * lp > pswap_slots.slot_bytes)
        return internal("parameter '" + p.name + "' exceeds a parameter swap buffer");
  }
  auto psr = items.take(Tier::cpu, "param_swap_reserve", cpu_items);
  if (!psr) return psr.error();
  pswap_reserve = *psr;
  ZS_TRY(items.take_slots("opt_swap_buffers", s.zero.offload_optimizer.buffer_count, opt_slots));
  if (!opt_slots.slots.empty()) {
    for (auto& g : groups)
      if (g.tier == Tier::nvme && 4 * g.elements > opt_slots.slot_bytes)
        return internal("optimizer group exceeds an optimizer swap buffer");
  }
  return {};
}

Status Engine::Impl::allocate_static() {
  ZS_TRY(allocate_host_scalars());
  StaticItems items(*this);
  ZS_TRY(items.check_known());
  ZS_TRY(allocate_gpu_static(items));
  return allocate_cpu_static(items);
}

}  // namespace zs::exec
