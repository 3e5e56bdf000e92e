// The engine's collective ops (engine_ops.cpp has the rest): ZeRO-3 fetches and stage 1-2 parameter all-gathers,
// gradient reductions into IPG buckets and partitions, stage 0's bucketed all-reduce, and the global gradient norm.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>

#include "exec/engine_impl.h"
#include "exec/kernels_ref.h"

namespace zs::exec {

using core::Result;
using core::TensorKind;

// --- collectives -----------------------------------------------------------------------------------------------

namespace {
struct Padded {  // a persistent parameter's full copy and its partition
  void* full;
  const void* part_src;
  int64_t numel, part;
};
}  // namespace

// ZeRO-3 fetch: a module's partitions → its full parameters (offloaded ones were copied in by upload_params).
Status Engine::Impl::gather_params(const core::Op& op) {
  std::vector<uint64_t> reads, writes;
  Keep keep;
  std::vector<DeviceCopy> copies;
  std::vector<std::pair<void*, int64_t>> gathers;  // full buffer, elements per rank
  auto [a, b] = param_range(op);
  for (size_t p = a; p < b; ++p) {
    ParamRt& r = params[p];
    if (r.persistent) continue;
    if (!r.gathered) {  // world · part elements: the all-gather fills every rank's padded slice
      auto buf = alloc_gpu(lp * world * r.part, "gathered params");
      if (!buf) return buf.error();
      r.gathered = std::make_shared<Buffer>(std::move(*buf));
    }
    keep.push_back(r.gathered);
    writes.push_back(rid(Res::gathered, static_cast<int64_t>(p)));
    if (r.lp_home == Tier::gpu) {
      copies.push_back({bytes_of(r.gathered->data()) + r.part_start * lp, r.lp_part, r.part * lp});
      reads.push_back(rid(Res::lp, static_cast<int64_t>(p)));
    }
    gathers.push_back({r.gathered->data(), r.part});
  }
  const DType d = dt;
  Communicator* cm = comm;
  const std::string name = "allgather op " + std::to_string(op.id);
  launch(op, reads, writes, [this, copies, gathers, keep, d, cm, name](void* st) -> Status {
    for (const auto& c : copies) ZS_TRY(K->copy(c.dst, c.src, c.bytes, st));
    for (const auto& [buf, n] : gathers)
      ZS_TRY(cm->all_gather(buf, static_cast<unsigned char*>(buf) + cm->rank() * n * dtype_bytes(d), n, d,
                            {.op_name = name, .stream = st}));
    return Status{};
  });
  return {};
}

// ZeRO-3 _post_step: persistent parameters from their updated partitions.
Status Engine::Impl::gather_persistent_params(const core::Op& op) {
  std::vector<uint64_t> reads, writes;
  // The full copy holds numel elements, the gather world · part: through a padded staging buffer on the device
  // (persistent parameters are small by definition); one rank copies its partition into place.
  std::vector<Padded> padded;
  int64_t most = 0;
  for (size_t p = 0; p < params.size(); ++p) {
    ParamRt& r = params[p];
    if (!r.persistent || !r.lp_part) continue;
    writes.push_back(rid(Res::lp, static_cast<int64_t>(p)));
    padded.push_back({r.lp_full, r.lp_part, r.numel, r.part});
    most = std::max(most, world * r.part * lp);
  }
  std::shared_ptr<Buffer> tmp;
  if (world > 1 && most > 0) {
    auto b = alloc_gpu(most, "persistent params all-gather staging");
    if (!b) return b.error();
    tmp = std::make_shared<Buffer>(std::move(*b));
    extra("persistent params all-gather staging (world x the largest persistent partition)", most);
    tmp->release_accounting();  // stream-ordered free: held by the work below
  }
  const DType d = dt;
  Communicator* cm = comm;
  const std::string name = "allgather persistent params (op " + std::to_string(op.id) + ")";
  launch(op, reads, writes, [this, padded, tmp, d, cm, name](void* st) -> Status {
    const int64_t e = dtype_bytes(d), W = cm->world(), R = cm->rank();
    for (const auto& x : padded) {
      if (W == 1) {
        ZS_TRY(K->copy(x.full, x.part_src, x.numel * e, st));
        continue;
      }
      auto* t = tmp->as<unsigned char>();
      ZS_TRY(K->zero(t, W * x.part * e, st));
      ZS_TRY(K->copy(t + R * x.part * e, x.part_src, x.part * e, st));
      ZS_TRY(cm->all_gather(t, t + R * x.part * e, x.part, d, {.op_name = name, .stream = st}));
      ZS_TRY(K->copy(x.full, t, x.numel * e, st));
    }
    return Status{};
  });
  return {};
}

// Stages 1-2: the updated lp partitions into every rank's full flat copy.
Status Engine::Impl::gather_updated_params(const core::Op& op) {
  std::vector<uint64_t> reads, writes;
  auto [a, b] = param_range(op);
  for (size_t p = a; p < b; ++p) writes.push_back(rid(Res::lp, static_cast<int64_t>(p)));
  // The range [f0, f1) of the flat model: the whole model in world slices of S is an in-place all-gather;
  // any other range (per-group gathers) is one broadcast from each rank that owns part of it.
  const int64_t f0 = params[a].flat, f1 = params[b - 1].flat + params[b - 1].numel;
  auto* base = bytes_of(params[0].lp_full);
  const int64_t S = flat_part, W = world;
  const bool whole = f0 == 0 && f1 == W * S;
  const std::vector<core::FlatPiece> pieces = plan.layout.owners(f0, f1);
  const DType d = dt;
  const int64_t e = lp;
  Communicator* cm = comm;
  const std::string name = "allgather lp params (op " + std::to_string(op.id) + ")";
  launch(op, reads, writes, [base, pieces, S, W, whole, d, e, cm, name](void* st) -> Status {
    if (W == 1) return Status{};
    if (whole) return cm->all_gather(base, base + cm->rank() * S * e, S, d, {.op_name = name, .stream = st});
    for (const core::FlatPiece& q : pieces)
      ZS_TRY(cm->broadcast(base + q.lo * e, (q.hi - q.lo) * e, static_cast<int>(q.rank),
                           {.op_name = name, .stream = st}));
    return Status{};
  });
  return {};
}

Status Engine::Impl::op_reduce(const core::Op& op) {
  auto [a, b] = param_range(op);
  const size_t micro = static_cast<size_t>(op.micro_step);
  const bool boundary = op.micro_step + 1 == ga;
  std::vector<uint64_t> reads, writes;
  Keep keep;
  const DType d = dt;
  Communicator* cm = comm;
  const std::string name = std::string(op.kind == core::OpKind::allreduce ? "allreduce" : "reduce_scatter") + " op " + std::to_string(op.id);
  struct Item {
    ParamRt* r;
    void* grad;        // the gradient's place in the reduced region (bucket slot or the full lp grads)
    void* piece;       // this rank's reduced partition in it
    const void* fill;  // copy this in first (a gradient not yet in the bucket), or null
    int64_t pad;       // stage 3: elements of zeros after the gradient (world · part − numel)
    float* fp32;       // the boundary's fp32 gradient (stage 1/2 without offload), or null
    bool accumulate, overwrite, finalize;
  };
  std::vector<Item> items;
  void* region = nullptr;  // stages 1-2: the op's gradients, contiguous in flat order
  if (stage == 1) {        // at the GA boundary, in place on the full lp gradients
    region = params[a].grad_acc;
    for (size_t p = a; p < b; ++p) {
      ParamRt& r = params[p];
      GroupRt& g = groups[static_cast<size_t>(r.group)];
      const bool fin = !opt_offload;
      items.push_back({&r, r.grad_acc, bytes_of(r.grad_acc) + r.part_start * lp, nullptr, 0,
                       fin ? g.g32 + r.group_offset : nullptr, false, false, fin});
      writes.push_back(rid(Res::grad_acc, static_cast<int64_t>(p)));
      if (fin) writes.push_back(rid(Res::fp32_grad, static_cast<int64_t>(p)));
    }
  } else {
    const int64_t k = bucket_k[op.id] % static_cast<int64_t>(buckets.size());
    auto& bk = buckets[static_cast<size_t>(k)];
    keep.push_back(bk);
    writes.push_back(rid(Res::bucket, k));
    region = bytes_of(bk->data()) + bucket_of[micro][a].second * lp;
    for (size_t p = a; p < b; ++p) {
      ParamRt& r = params[p];
      const int64_t off = bucket_of[micro][p].second;
      Item it{&r,
              bytes_of(bk->data()) + off * lp,
              bytes_of(bk->data()) + (off + r.part_start) * lp,
              nullptr,
              bucket_numel(r) - r.numel,
              nullptr,
              !opt_offload,
              micro == 0,
              false};
      if (!r.in_bucket) {  // its release comes later in program order: copy it in now
        if (!r.grad_full) return internal("gradient of '" + r.name + "' is gone before its reduction");
        keep.push_back(r.grad_full);
        it.fill = r.grad_full->data();
        reads.push_back(rid(Res::grad_full, static_cast<int64_t>(p)));
        r.in_bucket = true;
      }
      if (!opt_offload) {
        writes.push_back(rid(Res::grad_acc, static_cast<int64_t>(p)));
        if (boundary) {
          it.finalize = true;
          GroupRt& g = groups[static_cast<size_t>(r.group)];
          if (stage == 2) {
            it.fp32 = g.g32 + r.group_offset;
            writes.push_back(rid(Res::fp32_grad, static_cast<int64_t>(p)));
          }
        }
      }
      items.push_back(it);
    }
  }
  const int64_t elsz = lp;
  const int64_t f0 = params[a].flat, f1 = params[b - 1].flat + params[b - 1].numel;
  const std::vector<core::FlatPiece> pieces = stage < 3 ? plan.layout.owners(f0, f1) : std::vector<core::FlatPiece>{};
  const int st = stage;
  const bool all_reduce = op.kind == core::OpKind::allreduce;  // stages 1-2: DeepSpeed's default all-reduces the bucket
  const int64_t region_elems = f1 - f0;
  launch(op, reads, writes,
         [this, items, keep, d, cm, name, elsz, region, f0, pieces, st, all_reduce, region_elems](void* sm) -> Status {
    for (const auto& it : items) {
      if (it.fill) ZS_TRY(K->copy(it.grad, it.fill, it.r->numel * elsz, sm));
      if (it.pad > 0) ZS_TRY(K->zero(bytes_of(it.grad) + it.r->numel * elsz, it.pad * elsz, sm));
    }
    if (st == 3) {  // per parameter, in place: [world · part] → this rank's part (averaged over ranks)
      for (const auto& it : items)
        ZS_TRY(cm->reduce_scatter(it.piece, it.grad, it.r->part, d, ReduceOp::avg, {.op_name = name, .stream = sm}));
    } else if (all_reduce) {
      // Stages 1-2 (average_tensor → allreduce_bucket): every rank gets the averaged bucket, keeps its part.
      ZS_TRY(cm->all_reduce(region, region_elems, d, ReduceOp::avg, {.op_name = name, .stream = sm}));
    } else {
      // Stages 1-2 with use_multi_rank_bucket_allreduce false: the region's elements owned by each rank's flat
      // partition are reduced to that rank.
      for (const core::FlatPiece& q : pieces)
        ZS_TRY(cm->reduce(bytes_of(region) + (q.lo - f0) * elsz, q.hi - q.lo, d, ReduceOp::avg,
                          static_cast<int>(q.rank), {.op_name = name, .stream = sm}));
    }
    for (const auto& it : items) {
      const void* src = it.piece;
      if (it.accumulate) {
        ZS_TRY(K->accumulate(d, it.r->grad_acc, it.piece, it.r->part, it.overwrite, sm));
        src = it.r->grad_acc;
      }
      if (it.finalize) ZS_TRY(K->to_f32(d, it.fp32, src, it.r->part, it.r->sumsq, sm));
    }
    return Status{};
  });
  return {};
}

// The global gradient norm (and fp16 overflow flag).
Status Engine::Impl::grad_norm(const core::Op& op) {
  norm_issued = true;
  issue(op, {}, {rid(Res::scalars, 0)}, [this]() -> Status { return compute_scalars(cur); });
  return {};
}

// Stage 0 at the GA boundary: flatten a bucket of gradients, all-reduce, unflatten (buffered_allreduce_fallback).
Status Engine::Impl::allreduce_grads(const core::Op& op) {
  auto [a, b] = param_range(op);
  if (!allreduce_buf) return internal("op " + std::to_string(op.id) + ": all-reduce without its bucket");
  Keep keep = {allreduce_buf};
  std::vector<uint64_t> writes = {rid(Res::bucket, 1000)};
  std::vector<std::pair<ParamRt*, float*>> items;
  for (size_t p = a; p < b; ++p) {
    ParamRt& r = params[p];
    GroupRt& g = groups[static_cast<size_t>(r.group)];
    float* f = mixed ? g.g32 + r.group_offset : nullptr;  // an fp32 model's grads are its fp32 grads
    items.push_back({&r, f});
    writes.push_back(rid(Res::grad_acc, static_cast<int64_t>(p)));
    writes.push_back(rid(Res::fp32_grad, static_cast<int64_t>(p)));
  }
  const DType d = dt;
  const int64_t elsz = lp;
  Communicator* cm = comm;
  auto buf = allreduce_buf;
  const std::string name = "allreduce bucket (op " + std::to_string(op.id) + ")";
  launch(op, {}, writes, [this, items, keep, buf, d, cm, elsz, name](void* st) -> Status {
    auto* base = static_cast<unsigned char*>(buf->data());
    int64_t off = 0;
    for (const auto& [r, f] : items) {
      ZS_TRY(K->copy(base + off, r->grad_acc, r->numel * elsz, st));
      off += r->numel * elsz;
    }
    ZS_TRY(cm->all_reduce(base, off / elsz, d, ReduceOp::avg, {.op_name = name, .stream = st}));
    off = 0;
    for (const auto& [r, f] : items) {
      ZS_TRY(K->copy(r->grad_acc, base + off, r->numel * elsz, st));
      off += r->numel * elsz;
      ZS_TRY(K->to_f32(d, f, r->grad_acc, r->numel, r->sumsq, st));
    }
    return Status{};
  });
  return {};
}

}  // namespace zs::exec
