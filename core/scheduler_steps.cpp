// One GA micro-step (declared in scheduler.h): the module trace in order — ZeRO-3 fetches from the
// coordinator replay (NVMe swap-ins, H2D of offloaded partitions, all-gathers, releases), issued by the host
// from each module's pre-hook —, the compute ops with their activation and gradient memory, and the gradient
// reduction: IPG buckets during backward (stages 2, 3), after backward at the GA boundary (stages 0, 1), then
// the move of each gradient partition to where its optimizer reads it.
#include <algorithm>

#include "core/scheduler.h"

namespace zs::core::sched {
namespace {

int64_t align_up(int64_t a, int64_t b) { return b <= 1 ? a : (a + b - 1) / b * b; }

class MicroStep {
 public:
  MicroStep(const Context& cx, Emitter& e, StepState& st) : cx_(cx), e_(e), st_(st) {
    nvme_read_op_.assign(cx.np(), -1);
    prev_compute_ = st.last_compute;
  }

  void run() {
    const bool hooks = reduces_in_backward(cx_.s) && (cx_.stage >= 2 || st_.boundary);
    int64_t temporaries = -1;
    for (size_t s = 0; s < cx_.trace.size(); ++s) {
      if (hooks && temporaries < 0 && cx_.trace[s].pass != Pass::forward) temporaries = reduce_temporaries(+1, -1);
      if (cx_.stage == 3) gather(s);
      const uint32_t c = compute(s);
      prev_compute_ = c;
      if (cx_.stage == 3) release(s, c);
      if (hooks) grads_ready(s, c);
    }
    if (hooks) flush();
    if (temporaries > 0) reduce_temporaries(-1, st_.last_flush);
    if (cx_.stage == 3) release_leftovers();
    if (cx_.stage <= 1 && st_.boundary && !hooks) reduce_after_backward();
  }

 private:
  const Context& cx_;
  Emitter& e_;
  StepState& st_;
  std::vector<size_t> bucket_;
  int64_t bucket_elems_ = 0;
  // ZeRO-3 host state. The host issues step s's fetch from module s's pre-hook, after it launched module s − 1
  // (modelled as its completion, docs/PLAN.md), and blocks on fetch events and NVMe reads: what it waited for
  // gates everything it issues later.
  int64_t prev_compute_ = -1;          // compute op of the previous trace step
  int64_t host_sync_gather_ = -1;      // latest all-gather the host synchronised on (fetch-event throttle)
  int64_t host_sync_read_ = -1;        // latest param NVMe read the host waited for (swap_in, synchronize_reads)
  int64_t last_read_ = -1;             // latest param NVMe read issued
  std::vector<int64_t> events_;        // all-gather op of each fetch event, in the order the host waited on them
  std::vector<int64_t> nvme_read_op_;  // per param: the read that put its partition in a swap buffer (-1: none)

  Phase phase_of(Pass p) const { return p == Pass::forward ? Phase::forward : Phase::backward; }
  int64_t lp_part_bytes(size_t p) const { return cx_.lp * cx_.params[p].part; }
  int64_t nvme_part_bytes(size_t p) const {
    return cx_.lp * align_up(cx_.params[p].part, aio_aligned_numel(cx_.s.aio, cx_.lp));
  }

  void set_range(Op& op, TensorKind k, const std::vector<size_t>& ps) const {
    if (ps.empty()) return;
    auto [lo, hi] = std::minmax_element(ps.begin(), ps.end());
    op.tensor = cx_.tensor(k, *lo);
    op.tensor_count = static_cast<int32_t>(*hi - *lo + 1);
  }
  int32_t layer_of(const std::vector<size_t>& ps) const {
    if (ps.empty()) return -1;
    int32_t l = cx_.params[ps.front()].layer;
    for (size_t p : ps)
      if (cx_.params[p].layer != l) return -1;
    return l;
  }

  // Params grouped by owning module, in order of first appearance.
  std::vector<std::vector<size_t>> by_module(const std::vector<size_t>& ps) const {
    std::vector<std::vector<size_t>> out;
    std::vector<int32_t> mods;
    for (size_t p : ps) {
      const int32_t m = cx_.params[p].module;
      auto it = std::find(mods.begin(), mods.end(), m);
      if (it == mods.end()) {
        mods.push_back(m);
        out.push_back({p});
      } else {
        out[static_cast<size_t>(it - mods.begin())].push_back(p);
      }
    }
    return out;
  }

  // What every op the host issues now waits for.
  std::vector<uint32_t> host_deps() const {
    std::vector<uint32_t> d;
    for (int64_t x : {prev_compute_, host_sync_gather_, host_sync_read_})
      if (x >= 0) d.push_back(static_cast<uint32_t>(x));
    return d;
  }

  // swap_in: one read of the group's partitions into pinned swap buffers.
  uint32_t nvme_read(const std::vector<size_t>& ps, Phase ph) {
    Op r = make_op(OpKind::nvme_read, Purpose::read_params, Stream::nvme_read, ph, st_.micro, layer_of(ps));
    r.deps = host_deps();
    for (size_t p : ps) r.bytes += nvme_part_bytes(p);
    set_range(r, TensorKind::lp_param, ps);
    const uint32_t id = e_.emit(std::move(r));
    for (size_t p : ps) nvme_read_op_[p] = id;
    last_read_ = id;
    return id;
  }

  // all_gather_coalesced of one module's params: offloaded partitions are copied H2D first; a partition whose
  // async read the host has not waited for yet makes it wait for every read issued so far (synchronize_reads).
  void fetch(const std::vector<size_t>& grp, Phase ph) {
    const int32_t layer = cx_.params[grp.front()].layer;
    std::vector<size_t> off;
    std::vector<uint32_t> reads;
    for (size_t p : grp) {
      if (cx_.params[p].lp_home == Tier::gpu) continue;
      off.push_back(p);
      if (nvme_read_op_[p] < 0) continue;
      reads.push_back(static_cast<uint32_t>(nvme_read_op_[p]));
      // Still in flight (INFLIGHT): synchronize_reads waits for every read issued so far.
      if (nvme_read_op_[p] > host_sync_read_) host_sync_read_ = last_read_;
    }
    int64_t h2d = -1;
    if (!off.empty()) {
      Op c = make_op(OpKind::h2d, Purpose::upload_params, Stream::h2d, ph, st_.micro, layer);
      for (size_t p : off) c.bytes += lp_part_bytes(p);
      set_range(c, TensorKind::lp_param, off);
      c.deps = host_deps();
      c.deps.insert(c.deps.end(), reads.begin(), reads.end());
      h2d = e_.emit(std::move(c));
    }
    Op ag = make_op(OpKind::allgather, Purpose::gather_params, comm_stream(), ph, st_.micro, layer);
    int64_t full = 0;
    for (size_t p : grp) full += cx_.params[p].numel;
    ag.bytes = cx_.lp * full;
    ag.group_ranks = static_cast<int32_t>(cx_.layout.world);  // MiCS: within the shard group
    ag.mem_delta[0] = cx_.lp * full;
    set_range(ag, TensorKind::lp_param, grp);
    ag.deps = host_deps();
    if (h2d >= 0) ag.deps.push_back(static_cast<uint32_t>(h2d));
    const uint32_t id = e_.emit(std::move(ag));
    for (size_t p : grp) st_.gather_op[p] = id;
  }

  // ZeRO-3 fetch_sub_module, as the coordinator replay decided it: (1) the running module's missing params —
  // NVMe partitions no prefetch read are swapped in synchronously —, (2) the wait on its in-flight params, one
  // fetch event each: waiting on event e synchronises event e − 3 (__max_ongoing_fetch_events = 2),
  // (3) the trace-based prefetch, (4) async NVMe swap-ins of upcoming partitions (__prefetch_nvme_param_partitions).
  void gather(size_t s) {
    const CoordinatorStep& cs = cx_.rep.steps[s];
    const Phase ph = phase_of(cx_.trace[s].pass);
    if (!cs.nvme_sync.empty()) host_sync_read_ = nvme_read(cs.nvme_sync, ph);
    const std::vector<size_t> own(cs.gathered.begin(), cs.gathered.begin() + static_cast<long>(cs.fetched));
    for (const auto& grp : by_module(own)) fetch(grp, ph);
    for (size_t p : cs.waited) events_.push_back(st_.gather_op[p]);
    if (events_.size() > 3) host_sync_gather_ = std::max(host_sync_gather_, events_[events_.size() - 4]);
    const std::vector<size_t> ahead(cs.gathered.begin() + static_cast<long>(cs.fetched), cs.gathered.end());
    for (const auto& grp : by_module(ahead)) fetch(grp, ph);
    for (const auto& grp : by_module(cs.nvme_prefetch)) nvme_read(grp, ph);
  }

  // Activation memory of one trace step: a block's saved tensors appear when its forward ends and go when its
  // backward ends; with checkpointing only a segment's input is kept and the segment's activations reappear at
  // its recompute; cpu_checkpointing moves the kept inputs to pinned host memory and back. Allocations land on
  // the compute op, frees on a release op after it (backward still reads them while it runs).
  struct ActDelta {
    int64_t gpu_alloc = 0, gpu_free = 0, cpu_free = 0;
  };
  ActDelta activation_delta(size_t s, std::vector<Op>& before, std::vector<Op>& after) const {
    const TraceStep& ts = cx_.trace[s];
    const size_t i = ts.module;
    const int64_t l = cx_.modules[i].layer;
    const size_t last_module = cx_.modules.size() - 1;
    const auto& a = cx_.act;
    ActDelta d;
    const bool first_of_block = l >= 0 && cx_.module_first[static_cast<size_t>(l)] == static_cast<int32_t>(i);
    const bool last_of_block = l >= 0 && cx_.module_last[static_cast<size_t>(l)] == static_cast<int32_t>(i);
    const bool seg_start = l >= 0 && l % cx_.segment == 0;
    auto ckpt_move = [&](OpKind k, std::vector<Op>& where, Phase ph) {
      const bool out = k == OpKind::d2h;
      Op c = make_op(k, out ? Purpose::checkpoint_out : Purpose::checkpoint_in, out ? Stream::d2h : Stream::h2d, ph,
                     st_.micro, static_cast<int32_t>(l));
      c.bytes = a.per_layer_checkpoint;
      c.tensor = cx_.activation_tensor(l);
      c.mem_delta[0] = k == OpKind::d2h ? -a.per_layer_checkpoint : a.per_layer_checkpoint;
      if (k == OpKind::d2h) c.mem_delta[1] = a.per_layer_checkpoint * cx_.n_local;
      where.push_back(std::move(c));
    };
    if (ts.pass == Pass::forward) {
      if (i == 0) d.gpu_alloc += a.embedding;
      if (i == last_module) d.gpu_alloc += a.head_and_loss;
      if (!cx_.ckpt && last_of_block) d.gpu_alloc += a.layer_full(l);
      if (cx_.ckpt && first_of_block && seg_start) {
        d.gpu_alloc += a.per_layer_checkpoint;
        if (cx_.cpu_ckpt) ckpt_move(OpKind::d2h, after, Phase::forward);
      }
    } else if (ts.pass == Pass::recompute) {
      const int64_t seg_first = l / cx_.segment * cx_.segment;
      const int64_t seg_last = std::min(seg_first + cx_.segment, cx_.m.layers) - 1;
      if (l == seg_last && first_of_block) {
        if (cx_.cpu_ckpt) ckpt_move(OpKind::h2d, before, Phase::backward);
        d.gpu_alloc += a.layers_full(seg_first, seg_last);
      }
    } else {
      if (first_of_block) {
        d.gpu_free += a.layer_full(l);
        if (cx_.ckpt && seg_start) {
          d.gpu_free += a.per_layer_checkpoint;
          if (cx_.cpu_ckpt) d.cpu_free += a.per_layer_checkpoint * cx_.n_local;
        }
      }
      if (i == last_module) d.gpu_free += a.head_and_loss;
      if (i == 0) d.gpu_free += a.embedding;
    }
    return d;
  }

  uint32_t compute(size_t s) {
    const TraceStep& ts = cx_.trace[s];
    const size_t i = ts.module;
    const Phase ph = phase_of(ts.pass);
    const OpKind k = ts.pass == Pass::forward ? OpKind::forward
                     : ts.pass == Pass::recompute ? OpKind::recompute
                                                  : OpKind::backward;
    const int32_t layer = static_cast<int32_t>(cx_.modules[i].layer);
    std::vector<Op> before, after;
    const ActDelta act = activation_delta(s, before, after);
    for (auto& b : before) {
      if (st_.last_compute >= 0) b.deps.push_back(static_cast<uint32_t>(st_.last_compute));
      st_.last_compute = e_.emit(std::move(b));  // the checkpoint must be back before the recompute
    }
    Op c = make_op(k, Purpose::compute, Stream::compute, ph, st_.micro, layer);
    const double mult = k == OpKind::backward ? 2.0 : 1.0;
    // A frozen weight's backward computes only the input gradient: one GEMM, not two.
    c.gemm_flops = cx_.forward_cost[i].gemm_flops * mult -
                   (k == OpKind::backward ? cx_.forward_cost[i].frozen_gemm_flops : 0.0);
    c.attention_flops = cx_.forward_cost[i].attention_flops * mult;
    c.mem_bound_bytes = static_cast<int64_t>(static_cast<double>(cx_.forward_cost[i].mem_bound_bytes) * mult);
    c.role = cx_.forward_cost[i].role;
    set_range(c, TensorKind::lp_param, cx_.module_params[i]);
    c.mem_delta[0] = act.gpu_alloc;
    if (st_.last_compute >= 0) c.deps.push_back(static_cast<uint32_t>(st_.last_compute));
    if (cx_.stage == 3)
      for (size_t p : cx_.module_params[i])
        if (!cx_.params[p].persistent && st_.gather_op[p] >= 0) c.deps.push_back(static_cast<uint32_t>(st_.gather_op[p]));
    if (k == OpKind::backward && cx_.stage >= 2)
      for (size_t p : cx_.grads_alloc_at[s]) c.mem_delta[0] += cx_.lp * cx_.params[p].numel;
    const uint32_t id = e_.emit(std::move(c));
    st_.last_compute = id;
    if (k == OpKind::backward) st_.last_backward = id;
    for (auto& a : after) {
      a.deps.push_back(id);
      e_.emit(std::move(a));
    }
    if (act.gpu_free > 0 || act.cpu_free > 0) {
      Op r = make_op(OpKind::release, Purpose::release_activations, Stream::compute, ph, st_.micro, layer);
      r.mem_delta[0] = -act.gpu_free;
      r.mem_delta[1] = -act.cpu_free;
      r.tensor = cx_.activation_tensor(i == 0 ? -1 : i + 1 == cx_.modules.size() ? cx_.m.layers + 1 : layer);
      r.deps.push_back(id);
      e_.emit(std::move(r));
    }
    return id;
  }

  // release_sub_module: the replay's released params go back to their partitions; NVMe swap buffers free.
  void release(size_t s, uint32_t c) {
    const Phase ph = phase_of(cx_.trace[s].pass);
    for (const auto& grp : by_module(cx_.rep.steps[s].released)) release_group(grp, ph, c);
  }
  void release_group(const std::vector<size_t>& grp, Phase ph, uint32_t dep) {
    Op r = make_op(OpKind::release, Purpose::release_params, Stream::compute, ph, st_.micro, layer_of(grp));
    for (size_t p : grp) {
      r.mem_delta[0] -= cx_.lp * cx_.params[p].numel;
      st_.gather_op[p] = -1;
      nvme_read_op_[p] = -1;  // the swap buffer is released with the parameter
    }
    set_range(r, TensorKind::lp_param, grp);
    r.deps.push_back(dep);
    e_.emit(std::move(r));
  }
  void release_leftovers() {
    std::vector<size_t> left;
    for (size_t p = 0; p < cx_.np(); ++p)
      if (st_.gather_op[p] >= 0) left.push_back(p);
    for (const auto& grp : by_module(left)) release_group(grp, Phase::backward, static_cast<uint32_t>(st_.last_compute));
  }

  // The reduction's temporaries (memory.h reduce_temporaries_bytes) taken (+1, before the first backward op or
  // reduction) or given back (-1, after `after`). Returns the op.
  int64_t reduce_temporaries(int sign, int64_t after) {
    const int64_t bytes = reduce_temporaries_bytes(cx_.m, cx_.s);
    if (bytes <= 0) return 0;
    Op op = make_op(sign > 0 ? OpKind::alloc : OpKind::release,
                    sign > 0 ? Purpose::alloc_reduce_temporaries : Purpose::release_reduce_temporaries, Stream::compute,
                    Phase::backward, st_.micro, -1);
    op.mem_delta[0] = sign * bytes;
    if (after >= 0) op.deps.push_back(static_cast<uint32_t>(after));
    if (st_.last_compute >= 0) op.deps.push_back(static_cast<uint32_t>(st_.last_compute));
    return e_.emit(std::move(op));
  }

  // The stream of the reductions and ZeRO-3's parameter all-gathers: a side stream with overlap_comm, else the
  // current one, so the collectives are exposed (stage_1_and_2.py average_tensor; stage3.py
  // reduce_and_partition_stream; parameter_offload.py's all-gather stream).
  Stream comm_stream() const { return cx_.s.zero.overlap_comm ? Stream::comm : Stream::compute; }

  // Gradient hooks: each completed gradient is copied into the IPG bucket, reducing the bucket first when it
  // would overflow (reduce_bucket_size elements); then the full gradient is freed (stage 1 keeps its full
  // gradients).
  void grads_ready(size_t s, uint32_t c) {
    const auto& ready = cx_.grads_ready_at[s];
    if (ready.empty()) return;
    for (size_t p : ready) {
      const int64_t n = cx_.params[p].numel;
      if (!bucket_.empty() && bucket_elems_ + n > cx_.s.zero.reduce_bucket_size) flush();
      bucket_.push_back(p);
      bucket_elems_ += n;
    }
    if (cx_.stage == 1) return;
    Op r = make_op(OpKind::release, Purpose::release_grads, Stream::compute, Phase::backward, st_.micro,
                   layer_of(ready));
    for (size_t p : ready) r.mem_delta[0] -= cx_.lp * cx_.params[p].numel;
    set_range(r, TensorKind::lp_grad, ready);
    r.deps.push_back(c);
    e_.emit(std::move(r));
  }

  // The collective of one gradient bucket. Stages 1-2 (stage_1_and_2.py average_tensor): an all-reduce of the
  // bucket (allreduce_and_scatter → allreduce_bucket) with use_multi_rank_bucket_allreduce (the default) or
  // reduce_scatter false, else one dist.reduce per owning rank (costed as a reduce-scatter: the same bytes per
  // rank). Stage 3 (__reduce_and_partition_ipg_grads): reduce_scatter_coalesced, or with reduce_scatter false and
  // contiguous gradients an all-reduce of the bucket (__avg_scatter_contiguous_grads).
  OpKind reduce_kind() const {
    const auto& z = cx_.s.zero;
    if (cx_.stage == 3)
      return !z.reduce_scatter && contiguous_gradients_in_effect(cx_.s) ? OpKind::allreduce : OpKind::reduce_scatter;
    return !z.reduce_scatter || z.use_multi_rank_bucket_allreduce ? OpKind::allreduce : OpKind::reduce_scatter;
  }

  Purpose reduce_purpose() const {
    return reduce_kind() == OpKind::allreduce ? Purpose::allreduce_grads : Purpose::reduce_grads;
  }

  int64_t comm_bytes_per_elem() const { return bytes_per_element(communication_dtype(cx_.s)); }

  uint32_t transfer(OpKind k, Purpose why, const std::vector<size_t>& ps, TensorKind tk, int64_t bytes,
                    std::vector<uint32_t> deps) {
    Stream sm = k == OpKind::h2d ? Stream::h2d : k == OpKind::d2h ? Stream::d2h
                : k == OpKind::nvme_write ? Stream::nvme_write : Stream::nvme_read;
    Op op = make_op(k, why, sm, Phase::backward, st_.micro, layer_of(ps));
    op.bytes = bytes;
    set_range(op, tk, ps);
    op.deps = std::move(deps);
    return e_.emit(std::move(op));
  }

  // DeepSpeed before v0.19.5 (stage3.py partition_grads: fp32_grad_tensor.copy_(grad_buffer) without
  // non_blocking): PyTorch's copy_kernel_cuda converts a blocking cross-device copy on the CPU, so the 16-bit
  // partition goes down into a pageable temporary and the host casts it into the fp32 buffer, while the host thread
  // that launches the backward waits: both on the compute stream.
  uint32_t blocking_fp32_grad_copy(const std::vector<size_t>& ps, int64_t n, std::vector<uint32_t> deps) {
    if (st_.last_compute >= 0) deps.push_back(static_cast<uint32_t>(st_.last_compute));
    Op d2h =
        make_op(OpKind::d2h, Purpose::fp32_grads_to_host, Stream::compute, Phase::backward, st_.micro, layer_of(ps));
    d2h.bytes = cx_.lp * n;
    d2h.pageable_host = true;
    set_range(d2h, TensorKind::fp32_grad, ps);
    d2h.deps = std::move(deps);
    const uint32_t copied = e_.emit(std::move(d2h));
    Op cast =
        make_op(OpKind::cast_cpu, Purpose::cast_fp32_grads, Stream::compute, Phase::backward, st_.micro, layer_of(ps));
    cast.bytes = (cx_.lp + 4) * n;
    set_range(cast, TensorKind::fp32_grad, ps);
    cast.deps = {copied};
    const uint32_t id = e_.emit(std::move(cast));
    st_.last_compute = id;
    return id;
  }

  // MiCS at the GA boundary (zero/mics.py allreduce_mics_shard_grads): the shard's gradient partitions are
  // all-reduced across the world / shard replicas after the reduce-scatter within the shard. Returns the last op.
  uint32_t mics_replica_allreduce(const std::vector<size_t>& ps, uint32_t reduced) {
    const int64_t replicas = cx_.world / std::max<int64_t>(1, cx_.layout.world);
    if (cx_.stage != 3 || replicas <= 1 || !st_.boundary) return reduced;
    Op ar = make_op(OpKind::allreduce, Purpose::allreduce_grads, comm_stream(), Phase::backward, st_.micro,
                    layer_of(ps));
    ar.bytes = cx_.gacc_b * share(ps);
    ar.group_ranks = static_cast<int32_t>(replicas);
    set_range(ar, TensorKind::lp_grad, ps);
    ar.deps.push_back(reduced);
    return e_.emit(std::move(ar));
  }

  int64_t share(const std::vector<size_t>& ps) const {
    int64_t n = 0;
    for (size_t p : ps) n += cx_.params[p].part;
    return n;
  }

  // After a reduction: move this rank's gradient partition where its optimizer reads it.
  // Returns the last op. `red` is the reduce-scatter / all-reduce that produced it.
  int64_t deliver(const std::vector<size_t>& ps, uint32_t red) {
    int64_t last = red;
    // Split by optimizer group (a bucket may straddle sub-groups on different tiers).
    size_t a = 0;
    while (a < ps.size()) {
      size_t b = a;
      const int32_t g = cx_.params[ps[a]].group;
      while (b < ps.size() && cx_.params[ps[b]].group == g) ++b;
      std::vector<size_t> run(ps.begin() + static_cast<long>(a), ps.begin() + static_cast<long>(b));
      last = deliver_run(run, g, red);
      a = b;
    }
    return last;
  }

  int64_t deliver_run(const std::vector<size_t>& ps, int32_t g, uint32_t red) {
    const OptGroup& grp = cx_.groups[static_cast<size_t>(g)];
    const int64_t n = share(ps);
    uint32_t last = red;
    auto mark = [&](int64_t id) {
      for (size_t p : ps) st_.grad_delivered[p] = id;
    };
    std::vector<uint32_t> buffer_free;  // dpu: the previous step's Adam must have read the buffer
    if (cx_.schedule == Schedule::dpu && st_.group_adam[static_cast<size_t>(g)] >= 0)
      buffer_free.push_back(static_cast<uint32_t>(st_.group_adam[static_cast<size_t>(g)]));
    if (cx_.stage == 3) {
      if (cx_.opt_offload) {
        // partition_grads: grad partitions live in pinned host memory (grad_partitions_flat_buffer); micro-step 0
        // copies out and back ("ensure grad buffer is a CUDA buffer"), later micro-steps add through the GPU.
        const int64_t gb = cx_.gacc_b * n;
        if (st_.micro == 0) {
          last = transfer(OpKind::d2h, Purpose::offload_grads, ps, TensorKind::lp_grad, gb, {last});
          last = transfer(OpKind::h2d, Purpose::offload_grads, ps, TensorKind::lp_grad, gb, {last});
        } else {
          last = transfer(OpKind::h2d, Purpose::offload_grads, ps, TensorKind::lp_grad, gb, {last});
          last = transfer(OpKind::d2h, Purpose::offload_grads, ps, TensorKind::lp_grad, gb, {last});
        }
        if (st_.boundary) {
          // _offload_grad_partition_at_boundary: the fp32 cast is made on the GPU and copied to the sub-group's
          // fp32 grad buffer (CPU), or to the gradient swapper (NVMe); Twin-Flow GPU groups keep it on the GPU.
          if (grp.tier != Tier::gpu) {
            std::vector<uint32_t> d = {last};
            if (grp.tier == Tier::cpu) d.insert(d.end(), buffer_free.begin(), buffer_free.end());
            if (cx_.s.run.deepspeed_version < kPinnedOffloadSince && grp.tier == Tier::cpu)
              last = blocking_fp32_grad_copy(ps, n, d);
            else
              last = transfer(OpKind::d2h, Purpose::fp32_grads_to_host, ps, TensorKind::fp32_grad, 4 * n, d);
          }
          if (grp.tier == Tier::nvme) {
            std::vector<uint32_t> d = {last};
            d.insert(d.end(), buffer_free.begin(), buffer_free.end());
            const int64_t a4 = aio_aligned_numel(cx_.s.aio, 4);
            last =
                transfer(OpKind::nvme_write, Purpose::write_grads, ps, TensorKind::fp32_grad, 4 * align_up(n, a4), d);
          }
          mark(last);
        }
      } else if (st_.boundary) {
        mark(last);  // the partition accumulates in the GPU grad buffer
      }
      return last;
    }
    // Stages 0-2.
    if (cx_.opt_offload) {
      const int64_t ga = cx_.s.gradient_accumulation_steps;
      if (cx_.stage == 2 && ga > 1) {
        // async_accumulate_grad_in_cpu_via_gpu: later micro-steps read the host sum back and add to it on the GPU;
        // every micro-step copies the sum out again (copy_gradients_to_cpu).
        if (st_.micro > 0)
          last = transfer(OpKind::h2d, Purpose::offload_grads, ps, TensorKind::lp_grad, cx_.lp * n, {last});
        last = transfer(OpKind::d2h, Purpose::offload_grads, ps, TensorKind::lp_grad, cx_.lp * n, {last});
      }
      if (st_.boundary) {
        // async_inplace_copy_grad_to_fp32_buffer_from_gpu: cast to the master dtype on the GPU, then D2H.
        std::vector<uint32_t> d = {last};
        d.insert(d.end(), buffer_free.begin(), buffer_free.end());
        last = transfer(OpKind::d2h, Purpose::fp32_grads_to_host, ps, TensorKind::fp32_grad, cx_.master_b * n, d);
        mark(last);
      }
    } else if (st_.boundary) {
      mark(last);
    }
    return last;
  }

  // __reduce_and_partition_ipg_grads (stage 3) / reduce_ipg_grads (stage 2): one reduce-scatter of the bucket.
  void flush() {
    if (bucket_.empty()) return;
    Op rs = make_op(reduce_kind(), reduce_purpose(), comm_stream(), Phase::backward, st_.micro, layer_of(bucket_));
    rs.bytes = comm_bytes_per_elem() * bucket_elems_;
    rs.group_ranks = static_cast<int32_t>(cx_.stage == 3 ? cx_.layout.world : cx_.world);
    set_range(rs, TensorKind::lp_grad, bucket_);
    if (st_.last_compute >= 0) rs.deps.push_back(static_cast<uint32_t>(st_.last_compute));
    if (st_.last_flush >= 0) rs.deps.push_back(static_cast<uint32_t>(st_.last_flush));
    const uint32_t id = e_.emit(std::move(rs));
    st_.last_flush = deliver(bucket_, mics_replica_allreduce(bucket_, id));
    bucket_.clear();
    bucket_elems_ = 0;
    if (st_.boundary && cx_.schedule == Schedule::overlap) emit_overlap_ready_groups(cx_, e_, st_);
  }

  // Stages 0 and 1 reduce at the GA boundary, after backward, in parameter order: stage 1 through IPG buckets of
  // reduce_bucket_size (static), stage 0 and BF16_Optimizer through engine.py buffered_allreduce_fallback, whose
  // MEMORY_OPT_ALLREDUCE_SIZE buckets are each a fresh flattened allocation, freed after.
  void reduce_after_backward() {
    const bool ipg = cx_.stage == 1 && !uses_bf16_optimizer(cx_.s);
    const int64_t cap = std::max<int64_t>(1, ipg ? cx_.s.zero.reduce_bucket_size : kMemoryOptAllreduceSize);
    std::vector<size_t> b;
    int64_t elems = 0;
    auto emit_bucket = [&]() {
      if (b.empty()) return;
      if (ipg) {
        Op rs = make_op(reduce_kind(), reduce_purpose(), comm_stream(), Phase::backward, st_.micro, layer_of(b));
        rs.bytes = comm_bytes_per_elem() * elems;
        rs.group_ranks = static_cast<int32_t>(cx_.world);
        set_range(rs, TensorKind::lp_grad, b);
        rs.deps.push_back(static_cast<uint32_t>(st_.last_compute));
        if (st_.last_flush >= 0) rs.deps.push_back(static_cast<uint32_t>(st_.last_flush));
        const uint32_t id = e_.emit(std::move(rs));
        st_.last_flush = deliver(b, id);
        if (cx_.schedule == Schedule::overlap) emit_overlap_ready_groups(cx_, e_, st_);
      } else {
        Op al = make_op(OpKind::alloc, Purpose::alloc_allreduce_bucket, Stream::comm, Phase::backward, st_.micro,
                        layer_of(b));
        al.mem_delta[0] = allreduce_bucket_bytes(cx_.s, elems);
        al.deps.push_back(static_cast<uint32_t>(st_.last_compute));
        if (st_.last_flush >= 0) al.deps.push_back(static_cast<uint32_t>(st_.last_flush));
        const uint32_t a = e_.emit(std::move(al));
        Op ar = make_op(OpKind::allreduce, Purpose::allreduce_grads, Stream::comm, Phase::backward, st_.micro,
                        layer_of(b));
        ar.bytes = comm_bytes_per_elem() * elems;
        ar.group_ranks = static_cast<int32_t>(cx_.world);
        set_range(ar, TensorKind::lp_grad, b);
        ar.deps.push_back(a);
        const uint32_t r = e_.emit(std::move(ar));
        Op fr = make_op(OpKind::release, Purpose::release_allreduce_bucket, Stream::comm, Phase::backward, st_.micro,
                        layer_of(b));
        fr.mem_delta[0] = -allreduce_bucket_bytes(cx_.s, elems);
        fr.deps.push_back(r);
        e_.emit(std::move(fr));
        st_.last_flush = deliver(b, r);
      }
      b.clear();
      elems = 0;
    };
    const int64_t temporaries = ipg ? reduce_temporaries(+1, -1) : -1;
    for (size_t p = 0; p < cx_.np(); ++p) {
      if (!cx_.params[p].trainable) continue;
      if (!b.empty() && elems + cx_.params[p].numel > cap) emit_bucket();
      b.push_back(p);
      elems += cx_.params[p].numel;
    }
    emit_bucket();
    if (temporaries > 0) reduce_temporaries(-1, st_.last_flush);
  }
};

}  // namespace

void emit_micro_step(const Context& cx, Emitter& e, StepState& st) {
  MicroStep ms(cx, e, st);
  ms.run();
}

}  // namespace zs::core::sched
