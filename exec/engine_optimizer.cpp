// The engine's optimizer ops: Adam on a group (CPU or the device; dpu's prologue; overlap's speculative updates
// and their redo once the norm is known), and the fp32 → lp casts.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>

#include "exec/engine_impl.h"
#include "exec/kernels_ref.h"

namespace zs::exec {

using core::OpKind;
using core::Phase;
using core::Result;
using core::TensorKind;

// --- the optimizer ---------------------------------------------------------------------------------------------

AdamScalars Engine::Impl::step_adam_scalars(int64_t step) {
  std::lock_guard<std::mutex> lk(adam_mu);
  if (scalars_step != step) {
    (void)adam->step(step, AdamBuffers{});  // no elements: β^t and the scalars only
    scalars_step = step;
  }
  return adam->last_scalars();
}

// DeepSpeed's Adam on one group with the step's scalars: tiles over CPU Adam's threads, or in one piece on the
// device's compute stream. Every kernel variant gives the same bits (exec/cpu_adam.h).
void Engine::Impl::adam_update(const AdamBuffers& b, bool on_cpu, int64_t step) {
  const AdamScalars sc = step_adam_scalars(step);
  const AdamKernel k = best_adam_kernel();
  if (!on_cpu) {
    adam_kernel(k, sc, b, 0, b.n);
    return;
  }
  const int64_t tile = pool_unit_elems(b.n, adam_pool->threads(), kAdamTileElems), tiles = (b.n + tile - 1) / tile;
  adam_pool->run(tiles, [&](int64_t t) { adam_kernel(k, sc, b, t * tile, std::min(b.n, (t + 1) * tile)); });
}

void Engine::Impl::host_parallel(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  const int64_t grain = pool_unit_elems(n, adam_pool->threads(), kCpuPassChunkElems);
  const int64_t chunks = (n + grain - 1) / grain;
  adam_pool->run(chunks, [&](int64_t c) { fn(c * grain, std::min(n, (c + 1) * grain)); });
}

// unscale_and_clip_grads on the host: x *= mul over CPU Adam's threads, with its SIMD kernel.
void Engine::Impl::host_scale(float* x, float mul, int64_t n) {
  const AdamKernel k = best_adam_kernel();
  host_parallel(n, [x, mul, k](int64_t lo, int64_t hi) { scale_f32(k, x + lo, mul, hi - lo); });
}

namespace {

// What one Adam op updates and reads: its group's master, fp32 gradients and states (static homes, or NVMe swap
// buffers), the transient fp32 gradients of stage 3 without offload, and the lp copies GPU Adam writes.
struct AdamBinding {
  std::vector<uint64_t> reads, writes;
  Keep keep;
  AdamBuffers ab;
  float* g32 = nullptr;
  std::vector<std::pair<ParamRt*, float*>> from_lp;  // lp gradient → its place in the transient fp32 buffer
  std::vector<std::pair<void*, std::pair<const float*, int64_t>>> lp_out;  // GPU lp copy ← (master, elements)
};

Result<AdamBinding> bind_adam(Engine::Impl& e, const core::Op& op, size_t g0, bool reads_scalars) {
  GroupRt& g = e.groups[g0];
  AdamBinding b;
  b.writes = {rid(Res::group, static_cast<int64_t>(g0))};
  if (reads_scalars) b.reads.push_back(rid(Res::scalars, 0));
  for (size_t p = g.first; p < g.last; ++p) b.writes.push_back(rid(Res::fp32_grad, static_cast<int64_t>(p)));
  float* master = g.master;
  float* g32 = g.g32;
  void* m = g.m;
  void* v = g.v;
  if (g.tier == Tier::nvme) {
    for (int i = 0; i < 4; ++i)
      if (g.slot[i] < 0) return internal("op " + std::to_string(op.id) + ": optimizer states not swapped in");
    master = static_cast<float*>(e.opt_slots.ptr(g.slot[0]));
    m = e.opt_slots.ptr(g.slot[1]);
    v = e.opt_slots.ptr(g.slot[2]);
    g32 = static_cast<float*>(e.opt_slots.ptr(g.slot[3]));
    for (int i = 0; i < 4; ++i) b.writes.push_back(rid(Res::opt_slot, g.slot[i]));
  }
  // Stage 3 without offload: this group's fp32 gradients are formed for the step in a transient buffer.
  if (op.kind == OpKind::adam_gpu && e.stage == 3 && !e.opt_offload) {
    if (!e.transient_fp32) return internal("GPU Adam without its fp32 gradient buffer");
    b.keep.push_back(e.transient_fp32);
    g32 = e.transient_fp32->as<float>();
    for (size_t p = g.first; p < g.last; ++p) {
      b.from_lp.push_back({&e.params[p], g32 + e.params[p].group_offset});
      b.reads.push_back(rid(Res::grad_acc, static_cast<int64_t>(p)));
    }
  }
  // GPU Adam's fused lp update: the GPU-resident lp copies.
  const ParamRt& p0 = e.params[g.first];
  const bool master_is_lp = static_cast<void*>(master) == (p0.lp_full ? p0.lp_full : p0.lp_part);  // fp32, stage 0
  if (op.kind == OpKind::adam_gpu && !master_is_lp) {
    for (size_t p = g.first; p < g.last; ++p) {
      ParamRt& r = e.params[p];
      void* dst =
          e.stage < 3 ? bytes_of(r.lp_full) + r.part_start * e.lp : (r.lp_home == Tier::gpu ? r.lp_part : nullptr);
      if (!dst) continue;
      b.lp_out.push_back({dst, {master + r.group_offset, r.part}});
      b.writes.push_back(rid(Res::lp, static_cast<int64_t>(p)));
    }
  }
  b.g32 = g32;
  b.ab.params = master;
  b.ab.grads = g32;
  b.ab.grad_dtype = GradDtype::fp32;
  b.ab.exp_avg = m;
  b.ab.exp_avg_sq = v;
  b.ab.state_dtype = e.s.bf16.bf16_optimizer_states ? StateDtype::bf16 : StateDtype::fp32;
  b.ab.n = g.elements;
  return b;
}

// The step's scalars for an update, or null when there is nothing to apply (dpu's first step, an overflow).
// Called when the update runs: the norm it needs is known by then.
struct UpdateScalars {
  Engine::Impl* e;
  bool prologue, speculative;
  Result<const Scalars*> operator()() const {
    static const Scalars spec = [] {
      Scalars s;
      s.ready = true;
      s.multiplier = 1.0f;
      return s;
    }();
    if (prologue && !e->pending_grads) return static_cast<const Scalars*>(nullptr);  // dpu's first step: no gradients
    if (!prologue && !speculative) ZS_TRY(e->compute_scalars(e->cur));
    const Scalars* sc = prologue ? &e->pending : speculative ? &spec : &e->cur;
    return sc->overflow ? nullptr : sc;
  }
};

}  // namespace

Status Engine::Impl::op_adam(const core::Op& op) {
  auto [g0, g1] = group_range(op);
  if (g1 != g0 + 1) return internal("op " + std::to_string(op.id) + ": Adam over several groups");
  GroupRt& g = groups[g0];
  const bool prologue = o.schedule == core::Schedule::dpu && !seen_compute;
  const bool speculative = o.schedule == core::Schedule::overlap && !norm_issued && g.tier != Tier::gpu;
  auto bound = bind_adam(*this, op, g0, !prologue && !speculative && stage >= 1);
  if (!bound) return bound.error();
  AdamBinding& b = *bound;
  const std::vector<uint64_t>& reads = b.reads;
  const std::vector<uint64_t>& writes = b.writes;
  Keep& keep = b.keep;
  const AdamBuffers& ab = b.ab;
  float* const g32 = b.g32;
  const auto& from_lp = b.from_lp;
  const auto& lp_out = b.lp_out;
  const bool snapshot = speculative && s.gradient_clipping > 0;
  const int64_t state_b = s.bf16.bf16_optimizer_states ? 2 : 4;
  if (snapshot) {
    auto buf = alloc_cpu((4 + 2 * state_b) * g.elements, false, "overlap speculation snapshot");
    if (!buf) return buf.error();
    g.snapshot = std::make_shared<Buffer>(std::move(*buf));
    extra("overlap speculation snapshot (fp32 master, m, v of the groups updated before the norm)",
          cpu_acct.by_name()["overlap speculation snapshot"]);
    keep.push_back(g.snapshot);
  }
  g.speculative = speculative;
  const int64_t step_no = adam_step + 1;
  const DType d = dt;
  const bool on_cpu = g.tier != Tier::gpu;
  if (on_cpu == (op.kind == OpKind::adam_gpu))
    return internal("op " + std::to_string(op.id) + ": " + core::to_string(op.kind) + " on a group at home on " +
                    core::to_string(g.tier));
  auto snap = g.snapshot;
  const UpdateScalars scalars{this, prologue, speculative};
  if (!on_cpu) {
    // GPU Adam: device work. Its launch reads the step's scalars, which the norm (or, at stage 0, the gradients'
    // norm² shares the device wrote) decides: launched once everything it waits for has run.
    launch(
        op, reads, writes,
        [this, scalars, from_lp, lp_out, ab, g32, step_no, d, keep](void* st) -> Status {
          auto sc = scalars();
          if (!sc) return sc.error();
          if (!*sc) return Status{};
          for (const auto& [r, f] : from_lp) ZS_TRY(K->to_f32(d, f, r->grad_acc, r->part, nullptr, st));
          // unscale_and_clip_grads: DeepSpeed multiplies even by 1 (a pass the cost model prices); exact then.
          ZS_TRY(K->scale(g32, (*sc)->multiplier, ab.n, st));
          ZS_TRY(K->adam(step_adam_scalars(step_no), ab, st));
          for (const auto& [dst, src] : lp_out) ZS_TRY(K->from_f32(d, dst, src.first, src.second, st));
          return Status{};
        },
        {}, /*sync_waits=*/true);
  } else {
    issue(op, reads, writes, [this, scalars, ab, g32, step_no, snap, state_b, keep]() -> Status {
      auto sc = scalars();
      if (!sc) return sc.error();
      if (!*sc) return Status{};
      const float mul = (*sc)->multiplier;
      host_scale(g32, mul, ab.n);
      if (snap) {
        auto* sp = snap->as<unsigned char>();
        std::memcpy(sp, ab.params, static_cast<size_t>(4 * ab.n));
        std::memcpy(sp + 4 * ab.n, ab.exp_avg, static_cast<size_t>(state_b * ab.n));
        std::memcpy(sp + (4 + state_b) * ab.n, ab.exp_avg_sq, static_cast<size_t>(state_b * ab.n));
      }
      adam_update(ab, true, step_no);
      return Status{};
    });
  }
  if (g.tier == Tier::nvme && g.slot[3] >= 0) {  // the gradients are consumed
    opt_slots.release(g.slot[3], op_event[op.id]);
    g.slot[3] = -1;
  }
  return {};
}

Status Engine::Impl::op_cast(const core::Op& op) {
  auto [g0, g1] = group_range(op);
  if (g1 != g0 + 1) return internal("op " + std::to_string(op.id) + ": cast over several groups");
  GroupRt& g = groups[g0];
  const float* master =
      g.tier == Tier::nvme ? static_cast<const float*>(g.slot[0] >= 0 ? opt_slots.ptr(g.slot[0]) : nullptr) : g.master;
  if (!master) return internal("op " + std::to_string(op.id) + ": the master is not in memory");
  std::vector<uint64_t> reads = {rid(Res::group, static_cast<int64_t>(g0))}, writes;
  if (g.tier == Tier::nvme) reads.push_back(rid(Res::opt_slot, g.slot[0]));
  struct Item {
    void* dst;
    const float* src;
    int64_t n;
  };
  std::vector<Item> items;
  for (size_t p = g.first; p < g.last; ++p) {
    ParamRt& r = params[p];
    if (stage < 3) {  // into the pinned copy-back buffer, H2D next
      items.push_back({bytes_of(copy_back) + r.part_flat * lp, master + r.group_offset, r.part});
      writes.push_back(rid(Res::copy_back, static_cast<int64_t>(p)));
    } else if (r.lp_home == Tier::cpu) {  // in place
      items.push_back({r.lp_part, master + r.group_offset, r.part});
      writes.push_back(rid(Res::lp, static_cast<int64_t>(p)));
    } else if (r.lp_home == Tier::nvme) {  // into the reserved swap buffer, NVMe write next
      items.push_back({bytes_of(pswap_reserve) + r.group_offset * lp, master + r.group_offset, r.part});
      writes.push_back(rid(Res::copy_back, kReserve));
    }
  }
  const DType d = dt;
  // One pass over the group's elements on CPU Adam's threads (torch's copy_ is parallel too); items are the
  // group's parameters back to back, so an element range maps to pieces of them.
  std::vector<int64_t> starts = {0};
  for (const auto& it : items) starts.push_back(starts.back() + it.n);
  const AdamKernel kern = best_adam_kernel();
  issue(op, reads, writes, [this, items, starts, d, kern]() -> Status {
    host_parallel(starts.back(), [&](int64_t lo, int64_t hi) {
      size_t k = static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), lo) - starts.begin()) - 1;
      for (; k < items.size() && starts[k] < hi; ++k) {
        const int64_t a = std::max(lo, starts[k]) - starts[k], b = std::min(hi, starts[k + 1]) - starts[k];
        const auto& it = items[k];
        if (d == DType::fp32)
          std::memcpy(static_cast<float*>(it.dst) + a, it.src + a, static_cast<size_t>(4 * (b - a)));
        else
          cast_to_lp(kern, static_cast<uint16_t*>(it.dst) + a, it.src + a, b - a,
                     d == DType::fp16 ? LpDtype::fp16 : LpDtype::bf16);
      }
    });
    return Status{};
  });
  return {};
}

// --- overlap: the deferred check ---------------------------------------------------------------------------------

Status Engine::Impl::write_lp_from_master(size_t gi) {
  GroupRt& g = groups[gi];
  std::vector<unsigned char> tmp;
  for (size_t p = g.first; p < g.last; ++p) {
    ParamRt& r = params[p];
    // Cast on the host once, then into every lp home (device or host memory) of the parameter.
    tmp.resize(static_cast<size_t>(r.part * lp));
    dispatch(dt, [&](auto tag) {
      using T = decltype(tag);
      cast_from_f32<T>(reinterpret_cast<T*>(tmp.data()), g.master + r.group_offset, r.part);
    });
    const int64_t bytes = r.part * lp;
    if (stage < 3) {
      if (copy_back) ZS_TRY(K->copy_sync(bytes_of(copy_back) + r.part_flat * lp, tmp.data(), bytes));
      ZS_TRY(K->copy_sync(bytes_of(r.lp_full) + r.part_start * lp, tmp.data(), bytes));
    } else {
      if (r.lp_part) ZS_TRY(K->copy_sync(r.lp_part, tmp.data(), bytes));
      if (r.persistent && world == 1) ZS_TRY(K->copy_sync(r.lp_full, tmp.data(), bytes));
      if (r.lp_home == Tier::nvme) ZS_TRY(swap_out(*par_swapper, r.swap_name, tmp.data(), bytes));
    }
  }
  return {};
}

Status Engine::Impl::finish_overlap() {
  bool any = false;
  for (const auto& g : groups) any = any || g.speculative;
  if (!any) return {};
  ZS_TRY(compute_scalars(cur));
  const bool redo = cur.overflow || cur.multiplier != 1.0f;
  const auto t_start = std::chrono::steady_clock::now();
  const int64_t state_b = s.bf16.bf16_optimizer_states ? 2 : 4;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    GroupRt& g = groups[gi];
    if (!g.speculative) continue;
    if (redo) {
      if (!g.snapshot) return internal("overlap: a speculative update without its snapshot");
      // The update assumed no clipping; clipping applies: restore and redo it with the step's scalars.
      const auto* sp = g.snapshot->as<unsigned char>();
      std::memcpy(g.master, sp, static_cast<size_t>(4 * g.elements));
      std::memcpy(g.m, sp + 4 * g.elements, static_cast<size_t>(state_b * g.elements));
      std::memcpy(g.v, sp + (4 + state_b) * g.elements, static_cast<size_t>(state_b * g.elements));
      if (!cur.overflow) {
        float* g32 = g.g32;
        const float mul = cur.multiplier;
        host_scale(g32, mul, g.elements);
        AdamBuffers ab;
        ab.params = g.master;
        ab.grads = g.g32;
        ab.exp_avg = g.m;
        ab.exp_avg_sq = g.v;
        ab.state_dtype = state_b == 2 ? StateDtype::bf16 : StateDtype::fp32;
        ab.n = g.elements;
        // The speculative update already advanced β^t to this step: the same scalars again.
        adam_update(ab, true, adam_step + 1);
      }
      ZS_TRY(write_lp_from_master(gi));
    }
    if (g.snapshot) {
      g.snapshot.reset();  // Buffer dtor gives back its accounting
    }
    g.speculative = false;
  }
  if (redo) {
    note(
        "overlap: gradient clipping applied after a speculative per-layer update; the engine redid those updates "
        "from their snapshots (counted in the optimizer phase)");
    core::TraceEvent e;
    e.op = static_cast<uint32_t>(plan.ops.size() - 1);
    e.stream = core::Stream::cpu_adam;
    e.kind = OpKind::adam_cpu;
    e.phase = Phase::optimizer;
    e.start_s = std::chrono::duration<double>(t_start - t0).count();
    e.end_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    events.push_back(e);
  }
  return {};
}

}  // namespace zs::exec
