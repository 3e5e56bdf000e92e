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

using core::Result;
using core::TensorKind;

TensorKind Engine::Impl::kind_of(const core::Op& op) const {
  return op.tensor < 0 ? TensorKind::activation : plan.tensors[static_cast<size_t>(op.tensor)].kind;
}

std::pair<size_t, size_t> Engine::Impl::param_range(const core::Op& op) const {
  const size_t a = plan.param_of(op.tensor);
  return {a, a + static_cast<size_t>(op.tensor_count)};
}

std::pair<size_t, size_t> Engine::Impl::group_range(const core::Op& op) const {
  auto [a, b] = param_range(op);
  return {static_cast<size_t>(params[a].group), static_cast<size_t>(params[b - 1].group) + 1};
}

int64_t Engine::Impl::act_layer(const core::Op& op) const {
  return plan.activation_slot(op.tensor);
}

const void* Engine::Impl::lp_full_ptr(size_t p) const {
  const ParamRt& r = params[p];
  if (stage < 3 || r.persistent) return r.lp_full;
  return r.gathered ? r.gathered->data() : nullptr;
}

// One handler per purpose: what the op is for, as the scheduler emitted it.
Status Engine::Impl::run_op(const core::Op& op) {
  using P = core::Purpose;
  switch (op.purpose) {
    case P::compute:
      seen_compute = true;
      return op_compute(op);
    case P::checkpoint_out: return checkpoint_to_host(op);
    case P::checkpoint_in: return checkpoint_from_host(op);
    case P::release_activations: return release_activations(op);
    case P::read_params: return read_params_from_nvme(op);
    case P::upload_params: return fetch_params_to_gpu(op);
    case P::gather_params: return gather_params(op);
    case P::release_params: return release_params(op);
    case P::release_grads: return release_grads(op);
    case P::reduce_grads: return op_reduce(op);
    case P::alloc_allreduce_bucket: return alloc_allreduce_bucket(op);
    // Stage 0's all-reduce runs on its flattened bucket; ZeRO's all-reduced IPG buckets reduce like a reduce-scatter.
    case P::allreduce_grads: return stage == 0 ? allreduce_grads(op) : op_reduce(op);
    case P::release_allreduce_bucket: return release_allreduce_bucket(op);
    case P::alloc_reduce_temporaries: return alloc_reduce_temporaries(op);
    case P::release_reduce_temporaries: return release_reduce_temporaries(op);
    case P::offload_grads: return move_grad_partitions(op);
    case P::fp32_grads_to_host: return fp32_grads_to_host(op);
    case P::cast_fp32_grads: return op_cast(op);  // as the copy-back cast (the D2H already cast them to fp32)
    case P::write_grads: return write_grad_run(op);
    case P::grad_norm: return grad_norm(op);
    case P::swap_state_in: return swap_in_state(op);
    case P::swap_state_out: return swap_out_state(op);
    case P::alloc_fp32_grads: return alloc_fp32_grads(op);
    case P::release_fp32_grads: return release_fp32_grads(op);
    case P::adam: return op_adam(op);
    case P::cast_params: return op_cast(op);
    case P::upload_updated_params: return upload_updated_params(op);
    case P::updated_params_to_host: return updated_params_to_host(op);
    case P::write_updated_params: return write_updated_params_to_nvme(op);
    case P::gather_updated_params: return gather_updated_params(op);
    case P::gather_persistent_params: return gather_persistent_params(op);
    case P::unset: break;
  }
  return internal("op " + std::to_string(op.id) + " (" + core::to_string(op.kind) + "): no purpose");
}

// --- compute -------------------------------------------------------------------------------------------------------

namespace {

// What one forward, backward or recompute op binds: the GptModel::Call (weights, activations, residual gradients,
// parameter gradients), the resources its work reads and writes, the buffers it holds, and the checkpoint it
// copies into its input first.
struct ComputeBinding {
  Engine::Impl& e;
  const core::Op& op;
  const std::vector<ModuleInfo>& mods;
  size_t mod;
  const ModuleInfo& mi;
  int64_t l;  // its block, -1 outside the blocks
  size_t micro;
  bool rec;
  bool first_of_block, last_of_block;
  std::shared_ptr<GptModel::Call> c = std::make_shared<GptModel::Call>();
  std::vector<uint64_t> reads, writes;
  Keep keep;
  const void* ckpt_src = nullptr;
  void* ckpt_dst = nullptr;

  ComputeBinding(Engine::Impl& impl, const core::Op& o, const core::TraceStep& ts)
      : e(impl),
        op(o),
        mods(impl.model->modules()),
        mod(ts.module),
        mi(mods[mod]),
        l(mi.layer),
        micro(static_cast<size_t>(o.micro_step)),
        rec(ts.pass == core::Pass::recompute),
        first_of_block(l >= 0 && (mod == 0 || mods[mod - 1].layer != l)),
        last_of_block(l >= 0 && (mod + 1 == mods.size() || mods[mod + 1].layer != l)) {}

  bool head_module() const { return mi.role == ModuleRole::final_norm || mi.role == ModuleRole::lm_head; }

  Result<std::shared_ptr<Buffer>> arena(int64_t idx, int64_t bytes, const std::string& name) {
    auto b = e.ensure_act(idx, bytes, name);
    if (!b) return b.error();
    keep.push_back(*b);
    writes.push_back(rid(Res::act, idx));
    return *b;
  }

  Result<HeadActs> head() {
    auto h = arena(e.slot_head(), e.act_plan.head_and_loss, "activations (head and loss)");
    if (!h) return h.error();
    return e.model->head_view((*h)->data());
  }

  // Where block j's input lives: its arena, its checkpoint, or the head's input for j = L.
  Result<void*> x_of(int64_t j) {
    const int64_t L = e.L;
    if (j == L && e.ckpt && !rec) {  // the head's arena comes with the final norm: park the last output until then
      auto b = arena(e.slot_head_input(), e.act_plan.per_layer_checkpoint, "head input (checkpointed forward)");
      if (!b) return b.error();
      e.extra("last block's output until the head's arena exists (checkpointed forward)",
              e.act_plan.per_layer_checkpoint);
      return (*b)->data();
    }
    if (j == L) {
      auto h = head();
      if (!h) return h.error();
      return h->xf;
    }
    if (e.ckpt) {
      auto b = arena(e.slot_checkpoint_gpu(j), e.act_plan.per_layer_checkpoint, "activation checkpoints");
      if (!b) return b.error();
      return (*b)->data();
    }
    auto b = arena(e.slot_block(j), e.act_plan.per_layer_full, "activations");
    if (!b) return b.error();
    return e.model->layer_view((*b)->data()).x;
  }

  Status bind_weights() {
    for (int32_t p : mi.params) {
      const ParamRt& r = e.params[static_cast<size_t>(p)];
      const void* w = e.lp_full_ptr(static_cast<size_t>(p));
      if (!w) return internal("op " + std::to_string(op.id) + ": parameter '" + r.name + "' is not gathered");
      c->params.push_back(w);
      reads.push_back(e.stage == 3 && !r.persistent ? rid(Res::gathered, p) : rid(Res::lp, p));
      if (r.gathered) keep.push_back(r.gathered);
    }
    return {};
  }

  Status bind_forward() {
    if (mi.role == ModuleRole::tok_embedding && e.act_plan.embedding > 0) {
      // GPT-2's dropout mask, kept as counted
      auto a = arena(e.slot_embedding(), e.act_plan.embedding, "activations (embedding)");
      if (!a) return a.error();
    }
    if (mi.role == ModuleRole::tok_embedding || mi.role == ModuleRole::pos_embedding) {
      auto x = x_of(0);
      if (!x) return x.error();
      c->x_out = *x;
    }
    if (l >= 0) ZS_TRY(bind_forward_block());
    if (head_module()) ZS_TRY(bind_forward_head());
    return {};
  }

  // A block's arena (its own, the checkpointed forward's scratch, or the recompute's), the checkpoint that seeds
  // its input, and where its output goes.
  Status bind_forward_block() {
    Result<std::shared_ptr<Buffer>> a = std::shared_ptr<Buffer>();
    if (!e.ckpt) {
      a = arena(e.slot_block(l), e.act_plan.per_layer_full, "activations");
    } else if (!rec) {
      a = arena(e.slot_forward_scratch(l), e.act_plan.per_layer_full, "checkpointed-block forward scratch");
      e.extra("checkpointed-block forward scratch (one block's activations while its forward runs)",
              e.act_plan.per_layer_full);
    } else {
      a = arena(e.slot_block(l), e.act_plan.per_layer_full, "activations (recomputed)");
    }
    if (!a) return a.error();
    c->layer = e.model->layer_view((*a)->data());
    if (e.ckpt && first_of_block) {
      auto src = e.acts.find(e.slot_checkpoint_gpu(l));
      if (src == e.acts.end())
        return internal("op " + std::to_string(op.id) + ": checkpoint of layer " + std::to_string(l) +
                        " is not on the GPU");
      keep.push_back(src->second);
      reads.push_back(rid(Res::act, e.slot_checkpoint_gpu(l)));
      ckpt_src = src->second->data();
      ckpt_dst = c->layer.x;
    }
    if (last_of_block && !rec) {
      auto x = x_of(l + 1);
      if (!x) return x.error();
      c->x_out = *x;
    }
    return {};
  }

  // The head's arena; the final norm takes the last block's output parked by a checkpointed forward.
  Status bind_forward_head() {
    auto h = head();
    if (!h) return h.error();
    c->head = *h;
    auto parked = e.acts.find(e.slot_head_input());
    if (mi.role == ModuleRole::final_norm && parked != e.acts.end()) {
      keep.push_back(parked->second);
      reads.push_back(rid(Res::act, e.slot_head_input()));
      ckpt_src = parked->second->data();
      ckpt_dst = h->xf;
    }
    return {};
  }

  Status bind_backward(const std::vector<int32_t>& alloc_here) {
    const int64_t L = e.L;
    if (mi.role == ModuleRole::lm_head)
      for (auto& p : e.params) p.contributions = 0;  // the micro-step's first
    const int64_t blk = l >= 0 ? l : (head_module() ? L : -1);
    ZS_TRY(e.spare_dres ? bind_spare_residual_grads(blk) : bind_residual_grads(blk));
    if (l >= 0) {
      auto a = e.acts.find(e.slot_block(l));
      if (a == e.acts.end())
        return internal("op " + std::to_string(op.id) + ": activations of layer " + std::to_string(l) + " are gone");
      keep.push_back(a->second);
      writes.push_back(rid(Res::act, e.slot_block(l)));
      c->layer = e.model->layer_view(a->second->data());
    }
    if (head_module()) {
      auto a = e.acts.find(e.slot_head());
      if (a == e.acts.end()) return internal("head activations are gone");
      keep.push_back(a->second);
      writes.push_back(rid(Res::act, e.slot_head()));
      c->head = e.model->head_view(a->second->data());
    }
    return bind_param_grads(alloc_here);
  }

  // Block j's spare bytes hold the gradient w.r.t. its output; a block writes its input's gradient into the
  // previous block's spare (block 0 into its own, whose content it has consumed by then).
  Status bind_spare_residual_grads(int64_t blk) {
    const int64_t L = e.L;
    auto spare = [&](int64_t j) -> Result<void*> {
      auto a = e.acts.find(e.slot_block(j));
      if (a == e.acts.end()) return internal("activations of layer " + std::to_string(j) + " are gone");
      keep.push_back(a->second);
      writes.push_back(rid(Res::act, e.slot_block(j)));
      return bytes_of(a->second->data()) + e.model->layer_bytes();
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
    return {};
  }

  // Two residual-gradient buffers, allocated at the head's backward, that the blocks take in turns.
  Status bind_residual_grads(int64_t blk) {
    const int64_t L = e.L;
    if (mi.role == ModuleRole::lm_head) {
      for (auto& d : e.dres) {
        auto b = e.alloc_gpu(e.model->residual_grad_bytes(), "backward residual gradients");
        if (!b) return b.error();
        d = std::make_shared<Buffer>(std::move(*b));
      }
      e.extra("backward residual gradients (2 x [tokens, hidden]; inside the arenas for GPT-2 without checkpointing)",
              2 * e.model->residual_grad_bytes());
    }
    if (!e.dres[0]) return internal("backward before the head's backward");
    keep.push_back(e.dres[0]);
    keep.push_back(e.dres[1]);
    writes.push_back(rid(Res::dres, 0));
    c->dres_in = blk >= 0 ? e.dres[static_cast<size_t>((L - 1 - blk + 2) % 2)]->data()
                          : e.dres[static_cast<size_t>(L % 2)]->data();
    c->dres_out = blk >= 0 ? e.dres[static_cast<size_t>((L - blk) % 2)]->data() : nullptr;
    return {};
  }

  // Where each parameter's gradient goes and whether this contribution overwrites or accumulates.
  Status bind_param_grads(const std::vector<int32_t>& alloc_here) {
    for (int32_t p : mi.params) {
      ParamRt& r = e.params[static_cast<size_t>(p)];
      void* dst = nullptr;
      GradWrite w = GradWrite::accumulate;
      if (e.stage >= 2) {
        if (std::find(alloc_here.begin(), alloc_here.end(), p) != alloc_here.end()) {
          auto b = e.alloc_gpu(e.lp * r.numel, "module grads");
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
    return {};
  }
};

}  // namespace

Status Engine::Impl::op_compute(const core::Op& op) {
  const int32_t si = op_step[op.id];
  const core::TraceStep& ts = trace[static_cast<size_t>(si)];
  ComputeBinding cb(*this, op, ts);
  const size_t mod = cb.mod;
  const ModuleInfo& mi = cb.mi;
  const int64_t l = cb.l;
  const size_t micro = cb.micro;
  const bool bwd = ts.pass == core::Pass::backward, rec = cb.rec;
  const int64_t N = model->tokens();
  auto c = cb.c;
  c->tokens = tokens_of(micro);
  c->targets = c->tokens + N;
  c->dloss = static_cast<float>(scaler.scale / (static_cast<double>(N) * static_cast<double>(ga)));
  ZS_TRY(cb.bind_weights());
  if (!bwd)
    ZS_TRY(cb.bind_forward());
  else
    ZS_TRY(cb.bind_backward(grads_alloc_at[static_cast<size_t>(si)]));

  if (!bwd && mi.role == ModuleRole::lm_head) c->host_losses = loss_parts.as<float>() + static_cast<int64_t>(micro) * N;
  std::vector<Event> waits;
  if (!tokens_ready.done()) waits.push_back(tokens_ready);
  const Keep& keep = cb.keep;
  const void* ckpt_src = cb.ckpt_src;
  void* ckpt_dst = cb.ckpt_dst;
  const int64_t ckpt_bytes = act_plan.per_layer_checkpoint;
  launch(
      op, cb.reads, cb.writes,
      [this, c, mod, bwd, keep, ckpt_src, ckpt_dst, ckpt_bytes](void* st) -> Status {
        if (ckpt_src) ZS_TRY(K->copy(ckpt_dst, ckpt_src, ckpt_bytes, st));
        return bwd ? K->backward(*model, mod, *c, st) : K->forward(*model, mod, *c, st);
      },
      waits);
  if (!bwd && ckpt && !rec && cb.last_of_block) free_act(slot_forward_scratch(l));
  if (!bwd && mi.role == ModuleRole::final_norm) free_act(slot_head_input());
  if (bwd && mi.role == ModuleRole::tok_embedding) {
    for (auto& d : dres)
      if (d) d->release_accounting();
    dres = {};
    if (layer0_release_pending) {
      free_act(slot_block(0));
      layer0_release_pending = false;
    }
  }
  if (bwd && mi.role == ModuleRole::final_norm && head_release_pending) {
    free_act(slot_head());
    head_release_pending = false;
  }
  return {};
}

// --- release / alloc ---------------------------------------------------------------------------------------------

// A block's (the embedding's, the head's) activations; a block's checkpoints go with them.
Status Engine::Impl::release_activations(const core::Op& op) {
  const int64_t idx = act_layer(op);  // the activation tensor's slot: slot_block(l), slot_embedding(), slot_head()
  if (idx == slot_head()) {
    head_release_pending = true;  // the final norm's backward still reads its input (in the head's arena)
    note(
        "the head's activations are freed after the final norm's backward (it reads the norm's input), "
        "one op after the Plan frees them");
    launch(op, {}, {}, nullptr);
    return {};
  }
  if (idx == slot_block(0) && spare_dres) {  // the embeddings' backward reads block 0's input gradient from its arena
    layer0_release_pending = true;
    note(
        "block 0's activations are freed after the embeddings' backward (its arena holds their input "
        "gradient), two ops after the Plan frees them");
    launch(op, {}, {}, nullptr);
    return {};
  }
  std::vector<uint64_t> writes;
  Keep keep;
  std::vector<int64_t> ids = {idx};
  if (idx < L && ckpt) ids.push_back(slot_checkpoint_gpu(idx));
  if (idx < L && cpu_ckpt) ids.push_back(slot_checkpoint_cpu(idx));
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

// ZeRO-3 release_sub_module: the gathered copies, and the NVMe partitions' swap buffers.
Status Engine::Impl::release_params(const core::Op& op) {
  auto [a, b] = param_range(op);
  std::vector<uint64_t> writes;
  Keep keep;
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

// Gradients complete: into the IPG bucket (unless already there), then freed.
Status Engine::Impl::release_grads(const core::Op& op) {
  auto [a, b] = param_range(op);
  std::vector<uint64_t> writes;
  Keep keep;
  std::vector<DeviceCopy> copies;
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

// The GPU buffers a Plan allocates and frees with ops of their own: allocated into `slot` by the alloc op; the
// release op frees it once the work before it is done (the buffer is kept alive by the launch) and marks
// `written` (the resource later users of the buffer's memory wait for), when given.
Status Engine::Impl::take_transient(const core::Op& op, const char* what, std::shared_ptr<Buffer>& slot) {
  auto b = alloc_gpu(op.mem_delta[0], what);
  if (!b) return b.error();
  slot = std::make_shared<Buffer>(std::move(*b));
  launch(op, {}, {}, nullptr);
  return {};
}

Status Engine::Impl::give_back_transient(const core::Op& op, std::shared_ptr<Buffer>& slot, int64_t written) {
  std::vector<uint64_t> writes;
  Keep keep;
  if (slot) {
    keep.push_back(slot);
    slot->release_accounting();
    slot.reset();
  }
  if (written >= 0) writes.push_back(rid(Res::bucket, written));
  launch(op, {}, writes, [keep](void*) -> Status { return Status{}; });
  return {};
}

// Stage 0: the bucket of one buffered all-reduce, allocated before it and freed after.
Status Engine::Impl::alloc_allreduce_bucket(const core::Op& op) {
  return take_transient(op, "all-reduce bucket", allreduce_buf);
}

Status Engine::Impl::release_allreduce_bucket(const core::Op& op) {
  return give_back_transient(op, allreduce_buf, allreduce_buf ? 1000 : -1);
}

// DeepSpeed's gradient reduction allocates temporaries while it runs (a flattened or concatenated bucket,
// partition copies; memory.h reduce_temporaries_bytes). The engine reduces in place, so it holds a buffer of
// that size for as long as the Plan does: its memory then is DeepSpeed's.
Status Engine::Impl::alloc_reduce_temporaries(const core::Op& op) {
  return take_transient(op, "gradient reduction temporaries (DeepSpeed's)", reduce_temporaries);
}

Status Engine::Impl::release_reduce_temporaries(const core::Op& op) {
  return give_back_transient(op, reduce_temporaries, -1);
}

// Stage 3 GPU Adam: a group's transient fp32 gradients, allocated before its Adam and freed after.
Status Engine::Impl::alloc_fp32_grads(const core::Op& op) {
  return take_transient(op, "fp32 grads of a sub-group (GPU Adam)", transient_fp32);
}

Status Engine::Impl::release_fp32_grads(const core::Op& op) { return give_back_transient(op, transient_fp32, 1001); }

}  // namespace zs::exec
