// The optimizer phase (declared in scheduler.h): per group, NVMe swap-in of fp32 params, m, v and gradients
// (pipelined as PipelinedOptimizerSwapper does), CPU or GPU Adam, the fp32 → lp copy-back to wherever the lp
// partition lives, swap-out; then the parameter all-gather of stages 1-2 and ZeRO-3's persistent parameters.
// Schedules: deepspeed (after backward, after the global norm), overlap (a group as soon as its gradients
// arrive), dpu (Adam of the previous step's gradients runs beside this step's forward and backward; only the
// copy-back waits for the end of backward).
#include <algorithm>

#include "core/scheduler.h"

namespace zs::core::sched {
namespace {

int64_t align_up(int64_t a, int64_t b) { return b <= 1 ? a : (a + b - 1) / b * b; }

class GroupEmitter {
 public:
  GroupEmitter(const Context& cx, Emitter& e, StepState& st) : cx_(cx), e_(e), st_(st) {
    micro_ = static_cast<int32_t>(cx.s.gradient_accumulation_steps - 1);
  }

  // Swap-in (NVMe) and Adam. `with_grads`: wait for this step's gradient partitions (not with dpu).
  uint32_t adam(size_t g, std::vector<uint32_t> deps, bool with_grads) {
    const OptGroup& og = cx_.groups[g];
    const std::vector<uint32_t> entry = deps;  // the step's own start (deepspeed: after the global norm)
    if (with_grads)
      for (size_t p = og.first; p < og.last; ++p)
        if (st_.grad_delivered[p] >= 0) deps.push_back(static_cast<uint32_t>(st_.grad_delivered[p]));
    if (og.tier == Tier::gpu) return adam_gpu(g, deps);
    const auto& oo = cx_.s.zero.offload_optimizer;
    std::vector<uint32_t> reads;
    if (og.tier == Tier::nvme) {
      // PartitionedOptimizerSwapper: a group's reads start after the previous group is done (its synchronous
      // writes included). With pipeline_read they were issued while the previous group was being processed,
      // right after its own reads completed — by then only the writes of the group before had to be done.
      std::vector<uint32_t> rd;
      const auto& earlier_writes = oo.pipeline_read ? st_.prev2_writes : st_.prev_writes;
      if (oo.pipeline_read) rd = st_.prev_reads;
      if (!oo.pipeline_write) rd.insert(rd.end(), earlier_writes.begin(), earlier_writes.end());
      if (!oo.pipeline_read && st_.prev_adam_cpu >= 0) rd.push_back(static_cast<uint32_t>(st_.prev_adam_cpu));
      // step() swaps states in only once it runs: after the overflow check and the global norm (DEEPSPEED.md
      // "Optimizer step()"), not during backward — what `entry` carries for the deepspeed schedule.
      rd.insert(rd.end(), entry.begin(), entry.end());
      const int64_t n = align_up(og.elements, aio_aligned_numel(cx_.s.aio, 4));
      reads.push_back(io(OpKind::nvme_read, Purpose::swap_state_in, g, TensorKind::fp32_master, cx_.master_b * n, rd));
      reads.push_back(io(OpKind::nvme_read, Purpose::swap_state_in, g, TensorKind::adam_m, cx_.state_b * n, rd));
      reads.push_back(io(OpKind::nvme_read, Purpose::swap_state_in, g, TensorKind::adam_v, cx_.state_b * n, rd));
      std::vector<uint32_t> grd = rd;
      grd.insert(grd.end(), deps.begin(), deps.end());  // this step's gradient file must be written
      reads.push_back(
          io(OpKind::nvme_read, Purpose::swap_state_in, g, TensorKind::fp32_grad, 4 * n, with_grads ? grd : rd));
      st_.prev_reads = reads;
    }
    Op a = make_op(OpKind::adam_cpu, Purpose::adam, Stream::cpu_adam, Phase::optimizer, micro_, og.layer);
    a.elements = og.elements;
    range(a, g, TensorKind::fp32_master);
    a.deps = deps;
    a.deps.insert(a.deps.end(), reads.begin(), reads.end());
    if (og.tier == Tier::nvme && !oo.pipeline_write)
      a.deps.insert(a.deps.end(), st_.prev_writes.begin(), st_.prev_writes.end());
    const uint32_t id = e_.emit(std::move(a));
    st_.prev_adam_cpu = id;
    st_.group_adam[g] = id;
    return id;
  }

  // Swap-out of fp32 params, m, v (NVMe groups): after the previous group's writes (complete the async write).
  int64_t swap_out(size_t g, uint32_t after) {
    const OptGroup& og = cx_.groups[g];
    if (og.tier != Tier::nvme) return after;
    std::vector<uint32_t> d = st_.prev_writes;
    d.push_back(after);
    const int64_t n = align_up(og.elements, aio_aligned_numel(cx_.s.aio, 4));
    std::vector<uint32_t> w;
    w.push_back(io(OpKind::nvme_write, Purpose::swap_state_out, g, TensorKind::fp32_master, cx_.master_b * n, d));
    w.push_back(io(OpKind::nvme_write, Purpose::swap_state_out, g, TensorKind::adam_m, cx_.state_b * n, d));
    w.push_back(io(OpKind::nvme_write, Purpose::swap_state_out, g, TensorKind::adam_v, cx_.state_b * n, d));
    st_.prev2_writes = st_.prev_writes;
    st_.prev_writes = w;
    return w.back();
  }

  // fp32 → lp: stages 1-2 cast into the pinned copy-back buffer and copy H2D; stage 3 casts into the lp
  // partition wherever it lives (GPU: H2D; CPU: in place; NVMe: cast into the reserved swap buffer and write).
  int64_t copy_back(size_t g, std::vector<uint32_t> deps) {
    const OptGroup& og = cx_.groups[g];
    if (og.tier == Tier::gpu) return copy_back_from_gpu(g, deps);
    Op c = make_op(OpKind::cast_cpu, Purpose::cast_params, Stream::cpu_adam, Phase::optimizer, micro_, og.layer);
    c.bytes = (cx_.master_b + cx_.lp) * og.elements;
    range(c, g, TensorKind::lp_param);
    c.deps = deps;
    const uint32_t cast = e_.emit(std::move(c));
    int64_t to_gpu = 0, to_nvme = 0;
    for (size_t p = og.first; p < og.last; ++p) {
      const Tier h = cx_.stage == 3 ? cx_.params[p].lp_home : Tier::gpu;
      if (h == Tier::gpu) to_gpu += cx_.params[p].part;
      if (h == Tier::nvme) to_nvme += align_up(cx_.params[p].part, nvme_align());
    }
    int64_t last = cast;
    if (to_gpu > 0)
      last = io(OpKind::h2d, Purpose::upload_updated_params, g, TensorKind::lp_param, cx_.lp * to_gpu, {cast});
    if (to_nvme > 0)
      last = io(OpKind::nvme_write, Purpose::write_updated_params, g, TensorKind::lp_param, cx_.lp * to_nvme, {cast});
    return last;
  }

  // One full update of a group (deepspeed and overlap schedules).
  void update(size_t g, std::vector<uint32_t> deps) {
    const uint32_t a = adam(g, std::move(deps), true);
    if (cx_.groups[g].tier == Tier::gpu) {
      st_.group_done[g] = copy_back(g, {a});
      return;
    }
    const int64_t cb = copy_back(g, {a});
    st_.group_done[g] = swap_out(g, static_cast<uint32_t>(cb));
  }

  // Stage 1-2 parameter all-gather (all_gather_dp_groups): the flat lp buffer in allgather_bucket_size shards.
  void allgather_params(size_t first, size_t last, std::vector<uint32_t> deps, bool sharded) {
    int64_t full = 0;
    for (size_t p = first; p < last; ++p) full += cx_.params[p].trainable ? cx_.params[p].numel : 0;
    int64_t shards = 1;
    if (sharded) shards = std::max<int64_t>(1, full / std::max<int64_t>(1, cx_.s.zero.allgather_bucket_size));
    const int64_t per = (full + shards - 1) / shards;
    size_t p = first;
    for (int64_t k = 0; k < shards && p < last; ++k) {
      const size_t lo = p;
      int64_t n = 0;
      while (p < last && (n < per || k + 1 == shards)) {
        n += cx_.params[p].trainable ? cx_.params[p].numel : 0;  // frozen parameters are not in the flat buffer
        ++p;
      }
      Op ag = make_op(OpKind::allgather, Purpose::gather_updated_params, Stream::comm, Phase::optimizer, micro_, -1);
      ag.bytes = cx_.lp * n;
      ag.group_ranks = static_cast<int32_t>(cx_.world);
      ag.tensor = cx_.tensor(TensorKind::lp_param, lo);
      ag.tensor_count = static_cast<int32_t>(p - lo);
      ag.deps = deps;
      e_.emit(std::move(ag));
    }
  }

 private:
  const Context& cx_;
  Emitter& e_;
  StepState& st_;
  int32_t micro_ = 0;

  int64_t nvme_align() const {
    return aio_aligned_numel(cx_.s.aio, cx_.lp);
  }
  void range(Op& op, size_t g, TensorKind k) const {
    op.tensor = cx_.tensor(k, cx_.groups[g].first);
    op.tensor_count = static_cast<int32_t>(cx_.groups[g].last - cx_.groups[g].first);
  }
  uint32_t io(OpKind k, Purpose why, size_t g, TensorKind tk, int64_t bytes, std::vector<uint32_t> deps) {
    const Stream s = k == OpKind::nvme_read ? Stream::nvme_read : k == OpKind::nvme_write ? Stream::nvme_write
                     : k == OpKind::h2d ? Stream::h2d : Stream::d2h;
    Op op = make_op(k, why, s, Phase::optimizer, micro_, cx_.groups[g].layer);
    op.bytes = bytes;
    range(op, g, tk);
    op.deps = std::move(deps);
    return e_.emit(std::move(op));
  }

  // GPU Adam: no offload (stage 3 flattens this group's fp32 grads for the step, a transient), or the
  // Twin-Flow GPU share (its fp32 grads are static). The lp update is part of the fused kernel.
  uint32_t adam_gpu(size_t g, const std::vector<uint32_t>& deps) {
    const OptGroup& og = cx_.groups[g];
    int64_t alloc = -1;
    const bool transient_fp32 = cx_.stage == 3 && !cx_.opt_offload;
    if (transient_fp32) {
      Op al = make_op(OpKind::alloc, Purpose::alloc_fp32_grads, Stream::compute, Phase::optimizer, micro_, og.layer);
      al.mem_delta[0] = 4 * og.elements;
      range(al, g, TensorKind::fp32_grad);
      al.deps = deps;
      alloc = e_.emit(std::move(al));
    }
    Op a = make_op(OpKind::adam_gpu, Purpose::adam, Stream::compute, Phase::optimizer, micro_, og.layer);
    a.elements = og.elements;
    a.mem_bound_bytes = (30 + 8) * og.elements;  // fp32 p r/w, g r, m r/w, v r/w, lp write; the unscale's g r/w
    range(a, g, TensorKind::fp32_master);
    a.deps = deps;
    if (alloc >= 0) a.deps.push_back(static_cast<uint32_t>(alloc));
    if (st_.last_compute >= 0) a.deps.push_back(static_cast<uint32_t>(st_.last_compute));
    const uint32_t id = e_.emit(std::move(a));
    st_.last_compute = id;
    st_.group_adam[g] = id;
    if (transient_fp32) {
      Op fr =
          make_op(OpKind::release, Purpose::release_fp32_grads, Stream::compute, Phase::optimizer, micro_, og.layer);
      fr.mem_delta[0] = -4 * og.elements;
      range(fr, g, TensorKind::fp32_grad);
      fr.deps.push_back(id);
      e_.emit(std::move(fr));
    }
    return id;
  }

  // After a GPU step, stage 3 lp partitions that live off the GPU are written back (D2H, then NVMe).
  int64_t copy_back_from_gpu(size_t g, const std::vector<uint32_t>& deps) {
    const OptGroup& og = cx_.groups[g];
    int64_t off = 0, nv = 0;
    if (cx_.stage == 3)
      for (size_t p = og.first; p < og.last; ++p) {
        if (cx_.params[p].lp_home != Tier::gpu) off += cx_.params[p].part;
        if (cx_.params[p].lp_home == Tier::nvme) nv += align_up(cx_.params[p].part, nvme_align());
      }
    int64_t last = deps.empty() ? -1 : deps.back();
    if (off > 0) last = io(OpKind::d2h, Purpose::updated_params_to_host, g, TensorKind::lp_param, cx_.lp * off, deps);
    if (nv > 0)
      last = io(OpKind::nvme_write, Purpose::write_updated_params, g, TensorKind::lp_param, cx_.lp * nv,
                {static_cast<uint32_t>(last)});
    return last;
  }
};

std::vector<uint32_t> all_done(const StepState& st) {
  std::vector<uint32_t> d;
  for (int64_t x : st.group_done)
    if (x >= 0) d.push_back(static_cast<uint32_t>(x));
  return d;
}

}  // namespace

void emit_dpu_prologue(const Context& cx, Emitter& e, StepState& st) {
  GroupEmitter ge(cx, e, st);
  for (size_t g = 0; g < cx.groups.size(); ++g) {
    if (cx.groups[g].tier == Tier::gpu) continue;
    const uint32_t a = ge.adam(g, {}, /*with_grads=*/false);
    ge.swap_out(g, a);
  }
}

void emit_overlap_ready_groups(const Context& cx, Emitter& e, StepState& st) {
  GroupEmitter ge(cx, e, st);
  for (size_t g = 0; g < cx.groups.size(); ++g) {
    const OptGroup& og = cx.groups[g];
    if (st.group_emitted[g] || og.tier == Tier::gpu) continue;
    bool ready = true;
    for (size_t p = og.first; p < og.last && ready; ++p) ready = st.grad_delivered[p] >= 0;
    if (!ready) continue;
    st.group_emitted[g] = 1;
    ge.update(g, {});
    if (cx.stage <= 2) ge.allgather_params(og.first, og.last, {static_cast<uint32_t>(st.group_done[g])}, false);
  }
}

void emit_optimizer(const Context& cx, Emitter& e, StepState& st) {
  GroupEmitter ge(cx, e, st);
  const int32_t micro = static_cast<int32_t>(cx.s.gradient_accumulation_steps - 1);
  // Global gradient norm (clipping, fp16 overflow check): one scalar all-reduce after every partition arrived.
  std::vector<uint32_t> norm_dep;
  if (cx.stage >= 1) {
    Op n = make_op(OpKind::allreduce, Purpose::grad_norm, Stream::comm, Phase::optimizer, micro, -1);
    n.bytes = 4;
    n.group_ranks = static_cast<int32_t>(cx.world);
    for (int64_t d : st.grad_delivered)
      if (d >= 0) n.deps.push_back(static_cast<uint32_t>(d));
    if (st.last_flush >= 0) n.deps.push_back(static_cast<uint32_t>(st.last_flush));
    norm_dep.push_back(e.emit(std::move(n)));
  }
  const bool per_group_gather = cx.schedule == Schedule::overlap && cx.opt_offload;
  for (size_t g = 0; g < cx.groups.size(); ++g) {
    const OptGroup& og = cx.groups[g];
    if (st.group_emitted[g]) continue;  // overlap: already stepped during backward
    if (cx.schedule == Schedule::dpu && og.tier != Tier::gpu && st.group_adam[g] >= 0) {
      // The update computed during this step lands once backward no longer reads the parameters.
      std::vector<uint32_t> d = {static_cast<uint32_t>(st.group_adam[g])};
      if (st.last_backward >= 0) d.push_back(static_cast<uint32_t>(st.last_backward));
      st.group_done[g] = ge.copy_back(g, d);
    } else {
      ge.update(g, norm_dep);
    }
    if (per_group_gather && cx.stage >= 1 && cx.stage <= 2)
      ge.allgather_params(og.first, og.last, {static_cast<uint32_t>(st.group_done[g])}, false);
  }
  if (cx.stage >= 1 && cx.stage <= 2 && !per_group_gather) ge.allgather_params(0, cx.np(), all_done(st), true);
  if (cx.stage == 3 && cx.rep.persistent_numel > 0) {
    // _post_step: persistent parameters are all-gathered from their updated partitions.
    Op ag = make_op(OpKind::allgather, Purpose::gather_persistent_params, Stream::comm, Phase::optimizer, micro, -1);
    ag.bytes = cx.lp * cx.rep.persistent_numel;
    ag.group_ranks = static_cast<int32_t>(cx.world);
    ag.deps = all_done(st);
    e.emit(std::move(ag));
  }
}

}  // namespace zs::core::sched
