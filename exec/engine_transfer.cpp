// The engine's transfers: activation checkpoints to and from the host, ZeRO-3 fetches from CPU and NVMe, gradient
// partitions between the GPU bucket and host memory, the boundary's fp32 gradients, optimizer-state swaps, and the
// updated lp partitions on their way home.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>

#include "exec/engine_impl.h"
#include "exec/kernels_ref.h"

namespace zs::exec {

using core::OpKind;
using core::Result;
using core::TensorKind;

namespace {

std::string where(const core::Op& op, TensorKind k) {
  return "op " + std::to_string(op.id) + " (" + core::to_string(op.kind) + " " + core::to_string(k) + ")";
}

// GroupRt::slot index of an optimizer state kind: master, m, v, fp32 gradients.
int state_slot(TensorKind k) {
  return k == TensorKind::fp32_master ? 0 : k == TensorKind::adam_m ? 1 : k == TensorKind::adam_v ? 2 : 3;
}

std::string state_file(size_t g0, int slot_i) {
  const char* suffix[4] = {".master", ".exp_avg", ".exp_avg_sq", ".grad32"};
  return "g" + std::to_string(g0) + suffix[slot_i];
}

// m and v may be kept in bf16 (bf16.bf16_optimizer_states); master and gradients are fp32.
int64_t state_bytes(int slot_i, bool bf16_states, int64_t elements) {
  const int64_t state_b = bf16_states ? 2 : 4;
  return (slot_i == 1 || slot_i == 2 ? state_b : 4) * elements;
}

}  // namespace

// --- transfers ---------------------------------------------------------------------------------------------------

// The one optimizer group an optimizer-phase transfer covers.
Result<size_t> Engine::Impl::one_group(const core::Op& op) const {
  auto [g0, g1] = group_range(op);
  if (g1 != g0 + 1) return internal(where(op, kind_of(op)) + ": covers several optimizer groups");
  return g0;
}

// Activation checkpoints to and from pinned host memory (cpu_checkpointing). Out, the GPU copy is freed once
// the copy is issued; back in, the host copy stays for the next micro-step's recompute.
Status Engine::Impl::checkpoint_to_host(const core::Op& op) { return move_checkpoint(op, true); }
Status Engine::Impl::checkpoint_from_host(const core::Op& op) { return move_checkpoint(op, false); }

Status Engine::Impl::move_checkpoint(const core::Op& op, bool to_host) {
  const int64_t l = act_layer(op);
  const int64_t bytes = act_plan.per_layer_checkpoint;
  const int64_t from = to_host ? slot_checkpoint_gpu(l) : slot_checkpoint_cpu(l);
  const int64_t to = to_host ? slot_checkpoint_cpu(l) : slot_checkpoint_gpu(l);
  auto dst_buf = ensure_act(to, bytes, to_host ? "activation checkpoints (CPU)" : "activation checkpoints");
  if (!dst_buf) return dst_buf.error();
  auto src_it = acts.find(from);
  if (src_it == acts.end())
    return internal(where(op, TensorKind::activation) +
                    (to_host ? ": no checkpoint to move" : ": no host checkpoint to bring back"));
  Keep keep = {*dst_buf, src_it->second};
  auto src = src_it->second, dst = *dst_buf;
  launch(op, {}, {rid(Res::act, slot_checkpoint_gpu(l)), rid(Res::act, slot_checkpoint_cpu(l))},
         [this, src, dst, bytes, keep](void* st) { return K->copy(dst->data(), src->data(), bytes, st); });
  if (to_host) free_act(from);
  return {};
}

// ZeRO-3 fetch of offloaded partitions, first step: NVMe → parameter swap buffer.
Status Engine::Impl::read_params_from_nvme(const core::Op& op) {
  auto [a, b] = param_range(op);
  std::vector<uint64_t> writes;
  std::vector<Event> waits;
  std::vector<std::pair<std::string, std::pair<void*, int64_t>>> reads_;
  for (size_t p = a; p < b; ++p) {
    ParamRt& r = params[p];
    if (r.lp_home != Tier::nvme || r.pswap_slot >= 0) continue;
    const int32_t sl = pswap_slots.acquire(waits);
    if (sl < 0)
      return internal(where(op, kind_of(op)) + ": no free parameter swap buffer (offload_param.buffer_count " +
                      std::to_string(pswap_slots.busy.size()) + ")");
    r.pswap_slot = sl;
    writes.push_back(rid(Res::pswap_slot, sl));
    reads_.push_back({r.swap_name, {pswap_slots.ptr(sl), r.part * lp}});
  }
  Swapper* sw = par_swapper.get();
  issue(
      op, {}, writes,
      [this, sw, reads_]() -> Status {
        std::vector<SwapIo> ios;
        for (const auto& [n, buf] : reads_) ios.push_back({n, buf.first, buf.second});
        return swap_in_all(*sw, ios);
      },
      waits);
  return {};
}

// ZeRO-3 fetch, second step: the CPU partition (or its swap buffer) → the gathered copy on the GPU.
Status Engine::Impl::fetch_params_to_gpu(const core::Op& op) {
  auto [a, b] = param_range(op);
  std::vector<uint64_t> reads, writes;
  Keep keep;
  std::vector<DeviceCopy> copies;
  for (size_t p = a; p < b; ++p) {
    ParamRt& r = params[p];
    if (r.lp_home == Tier::gpu) continue;
    if (!r.gathered) {  // the all-gather allocates it one op later; the copy lands in it now
      auto buf = alloc_gpu(lp * world * r.part, "gathered params");
      if (!buf) return buf.error();
      r.gathered = std::make_shared<Buffer>(std::move(*buf));
    }
    keep.push_back(r.gathered);
    writes.push_back(rid(Res::gathered, static_cast<int64_t>(p)));
    const void* src = r.lp_part;
    if (r.lp_home == Tier::nvme) {
      if (r.pswap_slot < 0) return internal(where(op, kind_of(op)) + ": '" + r.name + "' was not read from NVMe");
      src = pswap_slots.ptr(r.pswap_slot);
      reads.push_back(rid(Res::pswap_slot, r.pswap_slot));
    } else {
      reads.push_back(rid(Res::lp, static_cast<int64_t>(p)));
    }
    copies.push_back({bytes_of(r.gathered->data()) + r.part_start * lp, src, r.part * lp});
  }
  launch(op, reads, writes, [this, copies, keep](void* st) -> Status {
    for (const auto& c : copies) ZS_TRY(K->copy(c.dst, c.src, c.bytes, st));
    return Status{};
  });
  return {};
}

// Gradient partitions between the GPU bucket and host memory (stage 3 offload; stage 2 offload with GA).
Status Engine::Impl::move_grad_partitions(const core::Op& op) {
  auto [a, b] = param_range(op);
  const size_t micro = static_cast<size_t>(op.micro_step);
  const DType d = dt;
  const int64_t elsz = lp;
  std::vector<uint64_t> writes;
  Keep keep;
  const int32_t rop = bucket_of[micro][a].first;
  if (rop < 0) return internal(where(op, kind_of(op)) + ": no bucket");
  const int64_t bk_i = bucket_k[static_cast<size_t>(rop)] % static_cast<int64_t>(buckets.size());
  auto bk = buckets[static_cast<size_t>(bk_i)];
  keep.push_back(bk);
  writes.push_back(rid(Res::bucket, bk_i));
  struct Item {
    void* bucket;
    void* host;
    int64_t n;
  };
  std::vector<Item> items;
  for (size_t p = a; p < b; ++p) {
    ParamRt& r = params[p];
    void* host = stage == 3 ? r.grad_acc : bytes_of(grad_accum_cpu) + r.part_flat * lp;
    items.push_back({bytes_of(bk->data()) + (bucket_of[micro][p].second + r.part_start) * lp, host, r.part});
    writes.push_back(rid(Res::grad_acc, static_cast<int64_t>(p)));
  }
  const bool down = op.kind == OpKind::d2h;
  const bool add = !down && micro > 0;  // later micro-steps add through the GPU (the next D2H copies the sum out)
  launch(op, {}, writes, [this, items, keep, down, add, d, elsz](void* st) -> Status {
    for (const auto& it : items) {
      if (down)
        ZS_TRY(K->copy(it.host, it.bucket, it.n * elsz, st));
      else if (add)
        ZS_TRY(K->accumulate(d, it.bucket, it.host, it.n, false, st));
      else
        ZS_TRY(K->copy(it.bucket, it.host, it.n * elsz, st));
    }
    return Status{};
  });
  return {};
}

// One bucket run of an NVMe group's fp32 gradients, staged by fp32_grads_to_host, to its file.
Status Engine::Impl::write_grad_run(const core::Op& op) {
  auto [a, b] = param_range(op);
  const int32_t ri = run_of_first[a];
  if (ri < 0) return internal(where(op, kind_of(op)) + ": not a gradient run");
  const GradRun& run = grad_runs[static_cast<size_t>(ri)];
  GroupRt& g = groups[run.group];
  if (g.run_slot < 0) return internal(where(op, kind_of(op)) + ": no staged gradients");
  const int32_t sl = g.run_slot;
  g.run_slot = -1;
  Swapper* sw = opt_swapper;
  void* src = opt_slots.ptr(sl);
  const std::string name = run.name;
  const int64_t bytes = 4 * run.elements;
  Event e = issue(op, {rid(Res::opt_slot, sl)}, {},
                  [this, sw, name, src, bytes]() -> Status { return swap_out(*sw, name, src, bytes); });
  opt_slots.release(sl, e);
  return {};
}

// The boundary's fp32 gradients: cast on the way to the host (CPU groups) or to a swap buffer (NVMe groups).
Status Engine::Impl::fp32_grads_to_host(const core::Op& op) {
  auto [a, b] = param_range(op);
  const size_t micro = static_cast<size_t>(op.micro_step);
  const DType d = dt;
  std::vector<uint64_t> reads, writes;
  std::vector<Event> waits;
  Keep keep;
  struct Item {
    ParamRt* r;
    float* dst;
    const void* src;
  };
  std::vector<Item> items;
  for (size_t p = a; p < b; ++p) {
    ParamRt& r = params[p];
    GroupRt& g = groups[static_cast<size_t>(r.group)];
    const void* src = nullptr;
    if (stage == 1) {
      src = bytes_of(r.grad_acc) + r.part_start * lp;
      reads.push_back(rid(Res::grad_acc, static_cast<int64_t>(p)));
    } else {
      const auto [rop, off] = bucket_of[micro][p];
      const int64_t bk_i = bucket_k[static_cast<size_t>(rop)] % static_cast<int64_t>(buckets.size());
      keep.push_back(buckets[static_cast<size_t>(bk_i)]);
      src = bytes_of(buckets[static_cast<size_t>(bk_i)]->data()) + (off + r.part_start) * lp;
      reads.push_back(rid(Res::bucket, bk_i));
    }
    float* dst = nullptr;
    if (g.tier == Tier::nvme) {  // staged in a swap buffer, the run's first element at its start
      const int32_t ri = run_of_first[a];
      if (ri < 0) return internal(where(op, kind_of(op)) + ": gradients of an NVMe group outside a known run");
      if (g.run_slot < 0) {
        g.run_slot = opt_slots.acquire(waits);
        if (g.run_slot < 0) return internal(where(op, kind_of(op)) + ": no free optimizer swap buffer for gradients");
      }
      writes.push_back(rid(Res::opt_slot, g.run_slot));
      dst =
          static_cast<float*>(opt_slots.ptr(g.run_slot)) + (r.group_offset - grad_runs[static_cast<size_t>(ri)].offset);
    } else {
      dst = g.g32 + r.group_offset;
    }
    writes.push_back(rid(Res::fp32_grad, static_cast<int64_t>(p)));
    items.push_back({&r, dst, src});
  }
  launch(
      op, reads, writes,
      [this, items, keep, d](void* st) -> Status {
        for (const auto& it : items) ZS_TRY(K->to_f32(d, it.dst, it.src, it.r->part, it.r->sumsq, st));
        return Status{};
      },
      waits);
  return {};
}

// What a state swap moves: the group, which of its states, that state's file and bytes.
Result<Engine::Impl::StateSwap> Engine::Impl::state_swap(const core::Op& op) const {
  auto one = one_group(op);
  if (!one) return one.error();
  if (!opt_swapper) return internal(where(op, kind_of(op)) + ": no optimizer swapper");
  StateSwap w;
  w.group = *one;
  w.slot = state_slot(kind_of(op));
  w.file = state_file(w.group, w.slot);
  w.bytes = state_bytes(w.slot, s.bf16.bf16_optimizer_states, groups[w.group].elements);
  return w;
}

// One optimizer state of an NVMe group (the fp32 gradients: all its run files) into a free swap buffer.
Status Engine::Impl::swap_in_state(const core::Op& op) {
  auto swap = state_swap(op);
  if (!swap) return swap.error();
  const size_t g0 = swap->group;
  const int slot_i = swap->slot;
  GroupRt& g = groups[g0];
  const std::string name = swap->file;
  const int64_t bytes = swap->bytes;
  Swapper* sw = opt_swapper;
  std::vector<Event> waits;
  const int32_t sl = opt_slots.acquire(waits);
  if (sl < 0)
    return internal(where(op, kind_of(op)) + ": no free optimizer swap buffer (offload_optimizer.buffer_count " +
                    std::to_string(opt_slots.busy.size()) + ")");
  g.slot[slot_i] = sl;
  auto* dst = static_cast<unsigned char*>(opt_slots.ptr(sl));
  std::vector<std::tuple<std::string, void*, int64_t>> files;
  if (slot_i == 3)
    for (size_t ri : g.runs)
      files.push_back({grad_runs[ri].name, dst + 4 * grad_runs[ri].offset, 4 * grad_runs[ri].elements});
  else
    files.push_back({name, dst, bytes});
  std::vector<uint64_t> w = {rid(Res::opt_slot, sl)};
  if (slot_i != 3) w.push_back(rid(Res::group, static_cast<int64_t>(g0)));
  issue(
      op, {}, w,
      [this, sw, files]() -> Status {
        std::vector<SwapIo> ios;
        for (const auto& [n, p, b] : files) ios.push_back({n, p, b});
        return swap_in_all(*sw, ios);
      },
      waits);
  return {};
}

// An updated optimizer state back to its file; its swap buffer is free once the write has run.
Status Engine::Impl::swap_out_state(const core::Op& op) {
  auto swap = state_swap(op);
  if (!swap) return swap.error();
  const size_t g0 = swap->group;
  const int slot_i = swap->slot;
  GroupRt& g = groups[g0];
  const std::string name = swap->file;
  const int64_t bytes = swap->bytes;
  Swapper* sw = opt_swapper;
  const int32_t sl = g.slot[slot_i];
  if (sl < 0) return internal(where(op, kind_of(op)) + ": nothing swapped in to write back");
  g.slot[slot_i] = -1;
  void* src = opt_slots.ptr(sl);
  Event e = issue(op, {rid(Res::opt_slot, sl), rid(Res::group, static_cast<int64_t>(g0))}, {},
                  [this, sw, name, src, bytes]() -> Status { return swap_out(*sw, name, src, bytes); });
  opt_slots.release(sl, e);
  return {};
}

// Updated lp partitions to the GPU: stages 1-2 from the pinned copy-back buffer, stage 3 (GPU homes) cast from the
// fp32 master.
Status Engine::Impl::upload_updated_params(const core::Op& op) {
  auto one = one_group(op);
  if (!one) return one.error();
  const size_t g0 = *one;
  GroupRt& g = groups[g0];
  const DType d = dt;
  const int64_t elsz = lp;
  std::vector<uint64_t> reads, writes;
  const float* master =
      g.tier == Tier::nvme ? static_cast<const float*>(g.slot[0] >= 0 ? opt_slots.ptr(g.slot[0]) : nullptr) : g.master;
  struct Item {
    void* dst;
    const void* src;   // a pinned lp copy (stages 1-2), or
    const float* f32;  // the fp32 master, cast on the way (stage 3)
    int64_t n;
  };
  std::vector<Item> items;
  for (size_t p = g.first; p < g.last; ++p) {
    ParamRt& r = params[p];
    if (stage < 3) {
      items.push_back(
          {bytes_of(r.lp_full) + r.part_start * lp, bytes_of(copy_back) + r.part_flat * lp, nullptr, r.part});
      reads.push_back(rid(Res::copy_back, static_cast<int64_t>(p)));
    } else if (r.lp_home == Tier::gpu) {
      if (!master) return internal(where(op, kind_of(op)) + ": the master is not in memory");
      items.push_back({r.lp_part, nullptr, master + r.group_offset, r.part});
      reads.push_back(rid(Res::group, static_cast<int64_t>(g0)));
    } else {
      continue;
    }
    writes.push_back(rid(Res::lp, static_cast<int64_t>(p)));
  }
  launch(op, reads, writes, [this, items, d, elsz](void* st) -> Status {
    for (const auto& it : items) {
      if (it.src)
        ZS_TRY(K->copy(it.dst, it.src, it.n * elsz, st));
      else
        ZS_TRY(K->from_f32(d, it.dst, it.f32, it.n, st));
    }
    return Status{};
  });
  return {};
}

// Stage 3 GPU Adam: updated partitions cast to their host homes (CPU partitions, or the NVMe ones' reserve).
Status Engine::Impl::updated_params_to_host(const core::Op& op) {
  auto one = one_group(op);
  if (!one) return one.error();
  const size_t g0 = *one;
  GroupRt& g = groups[g0];
  const DType d = dt;
  std::vector<uint64_t> reads, writes;
  struct Item {
    void* dst;
    const float* f32;
    int64_t n;
  };
  std::vector<Item> items;
  for (size_t p = g.first; p < g.last; ++p) {
    ParamRt& r = params[p];
    if (r.lp_home == Tier::gpu) continue;
    void* dst = r.lp_home == Tier::cpu ? r.lp_part : bytes_of(pswap_reserve) + r.group_offset * lp;
    items.push_back({dst, g.master + r.group_offset, r.part});
    writes.push_back(r.lp_home == Tier::cpu ? rid(Res::lp, static_cast<int64_t>(p)) : rid(Res::copy_back, kReserve));
  }
  reads.push_back(rid(Res::group, static_cast<int64_t>(g0)));
  launch(op, reads, writes, [this, items, d](void* st) -> Status {
    for (const auto& it : items) ZS_TRY(K->from_f32(d, it.dst, it.f32, it.n, st));
    return Status{};
  });
  return {};
}

// Updated lp partitions that live on NVMe, from param_swap_reserve to their files.
Status Engine::Impl::write_updated_params_to_nvme(const core::Op& op) {
  auto one = one_group(op);
  if (!one) return one.error();
  GroupRt& g = groups[*one];
  std::vector<uint64_t> reads;
  std::vector<std::pair<std::string, std::pair<const void*, int64_t>>> outs;
  for (size_t p = g.first; p < g.last; ++p) {
    ParamRt& r = params[p];
    if (r.lp_home != Tier::nvme) continue;
    outs.push_back({r.swap_name, {bytes_of(pswap_reserve) + r.group_offset * lp, r.part * lp}});
    reads.push_back(rid(Res::copy_back, kReserve));
  }
  Swapper* sw = par_swapper.get();
  issue(op, reads, {}, [this, sw, outs]() -> Status {
    std::vector<SwapIo> ios;
    for (const auto& [n, buf] : outs) ios.push_back({n, const_cast<void*>(buf.first), buf.second});
    return swap_out_all(*sw, ios);
  });
  return {};
}

}  // namespace zs::exec
