// The engine's op handlers: what each Plan op does to real buffers. A handler allocates and frees (accounting
// in program order, as the Plan's ledger counts), names the buffers its work reads and writes (the hazard
// tracker orders it after earlier users), and issues the work on the op's stream. Gradient arithmetic is one
// rule everywhere — a parameter's gradient is accumulated in its 16-bit dtype, contribution by contribution —
// so every stage and offload placement produces the same bits.
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

TensorKind Engine::Impl::kind_of(const core::Op& op) const {
  return op.tensor < 0 ? TensorKind::activation : plan.tensors[static_cast<size_t>(op.tensor)].kind;
}

std::pair<size_t, size_t> Engine::Impl::param_range(const core::Op& op) const {
  const size_t a = static_cast<size_t>(op.tensor) % params.size();
  return {a, a + static_cast<size_t>(op.tensor_count)};
}

std::pair<size_t, size_t> Engine::Impl::group_range(const core::Op& op) const {
  auto [a, b] = param_range(op);
  return {static_cast<size_t>(params[a].group), static_cast<size_t>(params[b - 1].group) + 1};
}

int64_t Engine::Impl::act_layer(const core::Op& op) const {
  return op.tensor - static_cast<int64_t>(6 * params.size());
}

const void* Engine::Impl::lp_full_ptr(size_t p) const {
  const ParamRt& r = params[p];
  if (stage < 3 || r.persistent) return r.lp_full;
  return r.gathered ? r.gathered->data() : nullptr;
}

Status Engine::Impl::run_op(const core::Op& op) {
  switch (op.kind) {
    case OpKind::forward:
    case OpKind::backward:
    case OpKind::recompute:
      seen_compute = true;
      return op_compute(op);
    case OpKind::release:
      return op_release(op);
    case OpKind::alloc:
      return op_alloc(op);
    case OpKind::allgather:
      return op_allgather(op);
    case OpKind::reduce_scatter:
      return op_reduce(op);
    case OpKind::allreduce:
      return op_allreduce(op);
    case OpKind::h2d:
    case OpKind::d2h:
    case OpKind::nvme_read:
    case OpKind::nvme_write:
      return op_transfer(op);
    case OpKind::adam_cpu:
    case OpKind::adam_gpu:
      return op_adam(op);
    case OpKind::cast_cpu:
      return op_cast(op);
  }
  return internal("unknown op kind");
}

// --- compute -------------------------------------------------------------------------------------------------------

Status Engine::Impl::op_compute(const core::Op& op) {
  const int32_t si = op_step[op.id];
  const core::TraceStep& ts = trace[static_cast<size_t>(si)];
  const size_t mod = ts.module;
  const auto& mods = model->modules();
  const ModuleInfo& mi = mods[mod];
  const int64_t l = mi.layer;
  const size_t micro = static_cast<size_t>(op.micro_step);
  const bool bwd = ts.pass == core::Pass::backward, rec = ts.pass == core::Pass::recompute;
  const int64_t N = model->tokens();
  auto c = std::make_shared<GptModel::Call>();
  std::vector<uint64_t> reads, writes;
  Keep keep;
  c->tokens = tokens_of(micro);
  c->targets = c->tokens + N;
  c->dloss = static_cast<float>(scaler.scale / (static_cast<double>(N) * static_cast<double>(ga)));
  for (int32_t p : mi.params) {
    const ParamRt& r = params[static_cast<size_t>(p)];
    const void* w = lp_full_ptr(static_cast<size_t>(p));
    if (!w) return internal("op " + std::to_string(op.id) + ": parameter '" + r.name + "' is not gathered");
    c->params.push_back(w);
    reads.push_back(stage == 3 && !r.persistent ? rid(Res::gathered, p) : rid(Res::lp, p));
    if (r.gathered) keep.push_back(r.gathered);
  }
  const bool first_of_block = l >= 0 && (mod == 0 || mods[mod - 1].layer != l);
  const bool last_of_block = l >= 0 && (mod + 1 == mods.size() || mods[mod + 1].layer != l);
  auto arena = [&](int64_t idx, int64_t bytes, const std::string& name) -> Result<std::shared_ptr<Buffer>> {
    auto b = ensure_act(idx, bytes, name);
    if (!b) return b.error();
    keep.push_back(*b);
    writes.push_back(rid(Res::act, idx));
    return *b;
  };
  auto head = [&]() -> Result<HeadActs> {
    auto h = arena(L + 1, act_plan.head_and_loss, "activations (head and loss)");
    if (!h) return h.error();
    return model->head_view((*h)->data());
  };
  // Where block j's input lives: its arena, its checkpoint, or the head's input for j = L.
  auto x_of = [&](int64_t j) -> Result<void*> {
    if (j == L && ckpt && !rec) {  // the head's arena comes with the final norm: park the last output until then
      auto b = arena(4 * L + 2, act_plan.per_layer_checkpoint, "head input (checkpointed forward)");
      if (!b) return b.error();
      extra("last block's output until the head's arena exists (checkpointed forward)", act_plan.per_layer_checkpoint);
      return (*b)->data();
    }
    if (j == L) {
      auto h = head();
      if (!h) return h.error();
      return h->xf;
    }
    if (ckpt) {
      auto b = arena(L + 2 + j, act_plan.per_layer_checkpoint, "activation checkpoints");
      if (!b) return b.error();
      return (*b)->data();
    }
    auto b = arena(j, act_plan.per_layer_full, "activations");
    if (!b) return b.error();
    return model->layer_view((*b)->data()).x;
  };
  const void* ckpt_src = nullptr;
  void* ckpt_dst = nullptr;
  const int64_t ckpt_bytes = act_plan.per_layer_checkpoint;

  if (!bwd) {
    if (mi.role == ModuleRole::tok_embedding && act_plan.embedding > 0) {
      auto e = arena(L, act_plan.embedding, "activations (embedding)");  // GPT-2's dropout mask, kept as counted
      if (!e) return e.error();
    }
    if (mi.role == ModuleRole::tok_embedding || mi.role == ModuleRole::pos_embedding) {
      auto x = x_of(0);
      if (!x) return x.error();
      c->x_out = *x;
    }
    if (l >= 0) {
      Result<std::shared_ptr<Buffer>> a = std::shared_ptr<Buffer>();
      if (!ckpt) {
        a = arena(l, act_plan.per_layer_full, "activations");
      } else if (!rec) {
        a = arena(3 * L + 2 + l, act_plan.per_layer_full, "checkpointed-block forward scratch");
        extra("checkpointed-block forward scratch (one block's activations while its forward runs)",
              act_plan.per_layer_full);
      } else {
        a = arena(l, act_plan.per_layer_full, "activations (recomputed)");
      }
      if (!a) return a.error();
      c->layer = model->layer_view((*a)->data());
      if (ckpt && first_of_block) {
        auto src = acts.find(L + 2 + l);
        if (src == acts.end())
          return internal("op " + std::to_string(op.id) + ": checkpoint of layer " + std::to_string(l) +
                          " is not on the GPU");
        keep.push_back(src->second);
        reads.push_back(rid(Res::act, L + 2 + l));
        ckpt_src = src->second->data();
        ckpt_dst = c->layer.x;
      }
      if (last_of_block && !rec) {
        auto x = x_of(l + 1);
        if (!x) return x.error();
        c->x_out = *x;
      }
    }
    if (mi.role == ModuleRole::final_norm || mi.role == ModuleRole::lm_head) {
      auto h = head();
      if (!h) return h.error();
      c->head = *h;
      auto parked = acts.find(4 * L + 2);
      if (mi.role == ModuleRole::final_norm && parked != acts.end()) {
        keep.push_back(parked->second);
        reads.push_back(rid(Res::act, 4 * L + 2));
        ckpt_src = parked->second->data();
        ckpt_dst = h->xf;
      }
    }
  } else {
    if (mi.role == ModuleRole::lm_head)
      for (auto& p : params) p.contributions = 0;  // the micro-step's first
    const int64_t blk = l >= 0 ? l : (mi.role == ModuleRole::final_norm || mi.role == ModuleRole::lm_head ? L : -1);
    if (spare_dres) {
      // Block j's spare bytes hold the gradient w.r.t. its output; a block writes its input's gradient into the
      // previous block's spare (block 0 into its own, whose content it has consumed by then).
      auto spare = [&](int64_t j) -> Result<void*> {
        auto a = acts.find(j);
        if (a == acts.end()) return internal("activations of layer " + std::to_string(j) + " are gone");
        keep.push_back(a->second);
        writes.push_back(rid(Res::act, j));
        return bytes_of(a->second->data()) + model->layer_bytes();
      };
      const int64_t in_j = blk >= 0 && blk < L ? blk : (blk < 0 ? 0 : -1);
      const int64_t out_j = blk >= 1 ? blk - 1 : (blk == 0 ? 0 : -1);
      if (in_j >= 0 && mi.role != ModuleRole::final_norm) {
        auto p = spare(in_j);
        if (!p) return p.error();
        c->dres_in = *p;
      }
      if (out_j >= 0) {
        auto p = spare(out_j);
        if (!p) return p.error();
        c->dres_out = *p;
      }
    } else {
      if (mi.role == ModuleRole::lm_head) {
        for (auto& d : dres) {
          auto b = alloc_gpu(model->residual_grad_bytes(), "backward residual gradients");
          if (!b) return b.error();
          d = std::make_shared<Buffer>(std::move(*b));
        }
        extra("backward residual gradients (2 x [tokens, hidden]; inside the arenas for GPT-2 without checkpointing)",
              2 * model->residual_grad_bytes());
      }
      if (!dres[0]) return internal("backward before the head's backward");
      keep.push_back(dres[0]);
      keep.push_back(dres[1]);
      writes.push_back(rid(Res::dres, 0));
      c->dres_in = blk >= 0 ? dres[static_cast<size_t>((L - 1 - blk + 2) % 2)]->data()
                            : dres[static_cast<size_t>(L % 2)]->data();
      c->dres_out = blk >= 0 ? dres[static_cast<size_t>((L - blk) % 2)]->data() : nullptr;
    }
    if (l >= 0) {
      auto a = acts.find(l);
      if (a == acts.end())
        return internal("op " + std::to_string(op.id) + ": activations of layer " + std::to_string(l) + " are gone");
      keep.push_back(a->second);
      writes.push_back(rid(Res::act, l));
      c->layer = model->layer_view(a->second->data());
    }
    if (mi.role == ModuleRole::final_norm || mi.role == ModuleRole::lm_head) {
      auto a = acts.find(L + 1);
      if (a == acts.end()) return internal("head activations are gone");
      keep.push_back(a->second);
      writes.push_back(rid(Res::act, L + 1));
      c->head = model->head_view(a->second->data());
    }
    const auto& alloc_here = grads_alloc_at[static_cast<size_t>(si)];
    for (int32_t p : mi.params) {
      ParamRt& r = params[static_cast<size_t>(p)];
      void* dst = nullptr;
      GradWrite w = GradWrite::accumulate;
      if (stage >= 2) {
        if (std::find(alloc_here.begin(), alloc_here.end(), p) != alloc_here.end()) {
          auto b = alloc_gpu(lp * r.numel, "module grads");
          if (!b) return b.error();
          r.grad_full = std::make_shared<Buffer>(std::move(*b));
          r.in_bucket = false;
        }
        if (!r.grad_full) return internal("gradient of '" + r.name + "' has no buffer");
        keep.push_back(r.grad_full);
        dst = r.grad_full->data();
        w = r.contributions == 0 ? GradWrite::overwrite : GradWrite::accumulate;
        writes.push_back(rid(Res::grad_full, p));
      } else {
        dst = r.grad_acc;
        w = (micro == 0 && r.contributions == 0) ? GradWrite::overwrite : GradWrite::accumulate;
        writes.push_back(rid(Res::grad_acc, p));
      }
      ++r.contributions;
      c->grads.push_back(dst);
      c->grad_write.push_back(w);
    }
  }

  if (!bwd && mi.role == ModuleRole::lm_head) c->host_losses = loss_parts.as<float>() + static_cast<int64_t>(micro) * N;
  std::vector<Event> waits;
  if (!tokens_ready.done()) waits.push_back(tokens_ready);
  launch(op, reads, writes, [this, c, mod, bwd, keep, ckpt_src, ckpt_dst, ckpt_bytes](void* st) -> Status {
    if (ckpt_src) ZS_TRY(K->copy(ckpt_dst, ckpt_src, ckpt_bytes, st));
    return bwd ? K->backward(*model, mod, *c, st) : K->forward(*model, mod, *c, st);
  }, waits);
  if (!bwd && ckpt && !rec && last_of_block) free_act(3 * L + 2 + l);
  if (!bwd && mi.role == ModuleRole::final_norm) free_act(4 * L + 2);
  if (bwd && mi.role == ModuleRole::tok_embedding) {
    for (auto& d : dres)
      if (d) d->release_accounting();
    dres = {};
    if (layer0_release_pending) {
      free_act(0);
      layer0_release_pending = false;
    }
  }
  if (bwd && mi.role == ModuleRole::final_norm && head_release_pending) {
    free_act(L + 1);
    head_release_pending = false;
  }
  return {};
}

// --- release / alloc ---------------------------------------------------------------------------------------------

Status Engine::Impl::op_release(const core::Op& op) {
  std::vector<uint64_t> writes;
  Keep keep;
  if (op.tensor < 0) {  // stage 0: the all-reduce bucket
    if (allreduce_buf) {
      keep.push_back(allreduce_buf);
      allreduce_buf->release_accounting();
      allreduce_buf.reset();
      writes.push_back(rid(Res::bucket, 1000));
    }
    launch(op, {}, writes, [keep](void*) -> Status { return Status{}; });
    return {};
  }
  const TensorKind k = kind_of(op);
  if (k == TensorKind::activation) {
    const int64_t idx = act_layer(op);
    if (idx == L + 1) {
      head_release_pending = true;  // the final norm's backward still reads its input (in the head's arena)
      note(
          "the head's activations are freed after the final norm's backward (it reads the norm's input), "
          "one op after the Plan frees them");
      launch(op, {}, {}, nullptr);
      return {};
    }
    if (idx == 0 && spare_dres) {  // the embeddings' backward reads block 0's input gradient from its arena
      layer0_release_pending = true;
      note(
          "block 0's activations are freed after the embeddings' backward (its arena holds their input "
          "gradient), two ops after the Plan frees them");
      launch(op, {}, {}, nullptr);
      return {};
    }
    std::vector<int64_t> ids = {idx};
    if (idx < L && ckpt) ids.push_back(L + 2 + idx);
    if (idx < L && cpu_ckpt) ids.push_back(2 * L + 2 + idx);
    for (int64_t id : ids) {
      auto it = acts.find(id);
      if (it == acts.end()) continue;
      keep.push_back(it->second);
      writes.push_back(rid(Res::act, id));
      free_act(id);
    }
    launch(op, {}, writes, [keep](void*) -> Status { return Status{}; });
    return {};
  }
  auto [a, b] = param_range(op);
  if (k == TensorKind::lp_param) {  // ZeRO-3 release_sub_module
    std::vector<int32_t> slots;
    for (size_t p = a; p < b; ++p) {
      ParamRt& r = params[p];
      if (r.gathered) {
        keep.push_back(r.gathered);
        writes.push_back(rid(Res::gathered, static_cast<int64_t>(p)));
        r.gathered->release_accounting();
        r.gathered.reset();
      }
      if (r.pswap_slot >= 0) {
        writes.push_back(rid(Res::pswap_slot, r.pswap_slot));
        slots.push_back(r.pswap_slot);
        r.pswap_slot = -1;
      }
    }
    Event e = launch(op, {}, writes, [keep](void*) -> Status { return Status{}; });
    for (int32_t sl : slots) pswap_slots.release(sl, e);
    return {};
  }
  if (k == TensorKind::lp_grad) {  // gradients complete: into the IPG bucket (unless already there), then freed
    struct Copy {
      void* dst;
      const void* src;
      int64_t bytes;
    };
    std::vector<Copy> copies;
    std::vector<uint64_t> reads;
    const size_t micro = static_cast<size_t>(op.micro_step);
    for (size_t p = a; p < b; ++p) {
      ParamRt& r = params[p];
      if (!r.grad_full) continue;
      if (!r.in_bucket) {
        const auto [rop, off] = bucket_of[micro][p];
        if (rop < 0) return internal("gradient of '" + r.name + "' has no reduce op");
        auto& bk = buckets[static_cast<size_t>(bucket_k[static_cast<size_t>(rop)]) % buckets.size()];
        keep.push_back(bk);
        copies.push_back({bytes_of(bk->data()) + off * lp, r.grad_full->data(), r.numel * lp});
        writes.push_back(rid(Res::bucket, bucket_k[static_cast<size_t>(rop)] % static_cast<int64_t>(buckets.size())));
        r.in_bucket = true;
      }
      keep.push_back(r.grad_full);
      writes.push_back(rid(Res::grad_full, static_cast<int64_t>(p)));
      r.grad_full->release_accounting();
      r.grad_full.reset();
    }
    launch(op, reads, writes, [this, copies, keep](void* st) -> Status {
      for (const auto& c : copies) ZS_TRY(K->copy(c.dst, c.src, c.bytes, st));
      return Status{};
    });
    return {};
  }
  if (k == TensorKind::fp32_grad) {  // stage 3 GPU Adam: a group's transient fp32 gradients
    if (transient_fp32) {
      keep.push_back(transient_fp32);
      transient_fp32->release_accounting();
      transient_fp32.reset();
    }
    launch(op, {}, {rid(Res::bucket, 1001)}, [keep](void*) -> Status { return Status{}; });
    return {};
  }
  return internal("op " + std::to_string(op.id) + ": release of a " + core::to_string(k) + " tensor");
}

Status Engine::Impl::op_alloc(const core::Op& op) {
  if (op.tensor < 0) {
    auto b = alloc_gpu(op.mem_delta[0], "all-reduce bucket");
    if (!b) return b.error();
    allreduce_buf = std::make_shared<Buffer>(std::move(*b));
  } else if (kind_of(op) == TensorKind::fp32_grad) {
    auto b = alloc_gpu(op.mem_delta[0], "fp32 grads of a sub-group (GPU Adam)");
    if (!b) return b.error();
    transient_fp32 = std::make_shared<Buffer>(std::move(*b));
  } else {
    return internal("op " + std::to_string(op.id) + ": alloc of a " + core::to_string(kind_of(op)) + " tensor");
  }
  launch(op, {}, {}, nullptr);
  return {};
}

}  // namespace zs::exec
