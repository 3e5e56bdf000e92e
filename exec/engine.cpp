// Engine (engine.h): the executor and the step — every op issued in program order onto its stream, after the
// Plan's dependencies and the data hazards on the buffers it touches — the step's scalars, the trace, the public
// surface. Setup and static memory: engine_setup.cpp; op handlers: engine_ops/_comm/_transfer/_optimizer.cpp;
// checkpoints: engine_checkpoint.cpp.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>

#include "exec/engine_impl.h"
#include "exec/io_env.h"
#include "exec/kernels_ref.h"
#include "exec/thread_pool.h"

namespace zs::exec {

using core::Error;
using core::ErrorKind;
using core::OpKind;
using core::Result;

core::MemoryOptions engine_memory_options() {
  core::MemoryOptions o;
  o.cuda_context_GiB = 0;
  o.allocator_reserve_frac = 0;
  o.host_process_GiB = 0;
  return o;
}

// --- slot pools, loss scaler -------------------------------------------------------------------------------------

int32_t SlotPool::acquire(std::vector<Event>& waits) {
  for (size_t i = 0; i < busy.size(); ++i)
    if (!busy[i]) {
      busy[i] = 1;
      waits.push_back(last_use[i]);
      return static_cast<int32_t>(i);
    }
  return -1;
}

void SlotPool::release(int32_t s, const Event& e) {
  if (s < 0) return;
  busy[static_cast<size_t>(s)] = 0;
  last_use[static_cast<size_t>(s)] = e;
}

void LossScaler::update(bool overflow) {
  if (!dynamic) return;
  if (overflow) {
    if (delayed_shift == 1 || cur_hysteresis == 1)
      scale = std::max(scale / 2, min_scale);
    else
      --cur_hysteresis;
    last_overflow_iter = cur_iter;
  } else {
    if (consecutive_hysteresis) cur_hysteresis = delayed_shift;
    if ((cur_iter - last_overflow_iter) % window == 0) {
      if (!consecutive_hysteresis) cur_hysteresis = delayed_shift;
      scale *= 2;
    }
  }
  ++cur_iter;
}

// --- the executor ----------------------------------------------------------------------------------------------

Stream& Engine::Impl::stream(core::Stream st) {
  auto r = dev->stream(core::to_string(st));
  return **r;
}

Event Engine::Impl::order(const core::Op& op, std::vector<uint64_t>& reads, std::vector<uint64_t>& writes,
                          std::vector<Event>& waits,
                          const std::function<Event(Stream&, const std::vector<Event>&)>& submit) {
  for (uint32_t d : op.deps) waits.push_back(op_event[d]);
  std::sort(writes.begin(), writes.end());
  writes.erase(std::unique(writes.begin(), writes.end()), writes.end());
  for (uint64_t r : reads) {
    if (std::binary_search(writes.begin(), writes.end(), r)) continue;
    auto it = hazards.find(r);
    if (it != hazards.end()) waits.push_back(it->second.first);
  }
  for (uint64_t w : writes) {
    auto it = hazards.find(w);
    if (it == hazards.end()) continue;
    waits.push_back(it->second.first);
    for (const Event& e : it->second.second) waits.push_back(e);
  }
  waits.erase(std::remove_if(waits.begin(), waits.end(), [](const Event& e) { return e.done(); }), waits.end());
  op_ledger[op.id] = {dev->memory().in_use(), cpu_acct.in_use(), nvme_acct.in_use()};
  core::TraceEvent* ev = &events[op.id];
  ev->op = op.id;
  ev->stream = op.stream;
  ev->kind = op.kind;
  ev->phase = op.phase;
  ev->layer = op.layer;
  ev->micro_step = op.micro_step;
  ev->bytes = op.bytes;
  ev->flops = op.gemm_flops;
  Event e = submit(stream(op.stream), waits);
  op_event[op.id] = e;
  for (uint64_t r : reads)
    if (!std::binary_search(writes.begin(), writes.end(), r)) hazards[r].second.push_back(e);
  for (uint64_t w : writes) {
    auto& h = hazards[w];
    h.first = e;
    h.second.clear();
  }
  return e;
}

Event Engine::Impl::issue(const core::Op& op, std::vector<uint64_t> reads, std::vector<uint64_t> writes,
                          std::function<Status()> work, std::vector<Event> waits) {
  core::TraceEvent* ev = &events[op.id];
  const auto t0c = t0;
  return order(op, reads, writes, waits, [&](Stream& st, const std::vector<Event>& w) {
    return dev->enqueue(st, w, [ev, t0c, work = std::move(work)]() -> Status {
      using clk = std::chrono::steady_clock;
      ev->start_s = std::chrono::duration<double>(clk::now() - t0c).count();
      Status s = work ? work() : Status{};
      ev->end_s = std::chrono::duration<double>(clk::now() - t0c).count();
      return s;
    });
  });
}

Event Engine::Impl::launch(const core::Op& op, std::vector<uint64_t> reads, std::vector<uint64_t> writes,
                           std::function<Status(void*)> work, std::vector<Event> waits, bool sync_waits) {
  core::TraceEvent* ev = &events[op.id];
  LaunchOptions lo;
  lo.sync_waits = sync_waits;
  lo.start_s = &ev->start_s;
  lo.end_s = &ev->end_s;
  lo.epoch = t0;
  return order(op, reads, writes, waits, [&](Stream& st, const std::vector<Event>& w) {
    return dev->launch(st, w, std::move(work), lo);
  });
}

// The step's scalars from the per-parameter norm² shares (summed in parameter order: the same order at every stage).
Status Engine::Impl::compute_scalars(Scalars& sc) {
  std::lock_guard<std::mutex> lk(scalar_mu);
  if (sc.ready) return {};
  double total = 0;
  for (const auto& p : params) total += *p.sumsq;
  // Stages 1-3 hold disjoint partitions (Σ over ranks, in rank order); stage 0's gradients are whole on every rank.
  if (stage >= 1) ZS_TRY(comm->all_reduce_f64(&total, 1, ReduceOp::sum, {.op_name = "gradient norm"}));
  sc.norm = std::sqrt(total);
  sc.overflow = !std::isfinite(total);
  sc.loss_scale = scaler.scale;
  // unscale_and_clip_grads: combined = loss_scale · max(1, (‖g‖/loss_scale + 1e-6) / clip).
  double combined = sc.loss_scale;
  if (s.gradient_clipping > 0 && !sc.overflow) {
    const double clip = (sc.norm / sc.loss_scale + 1e-6) / s.gradient_clipping;
    if (clip > 1) combined = clip * sc.loss_scale;
  }
  sc.multiplier = combined == 1.0 ? 1.0f : static_cast<float>(1.0 / combined);
  sc.ready = true;
  return {};
}

Result<std::shared_ptr<Buffer>> Engine::Impl::ensure_act(int64_t idx, int64_t bytes, const std::string& name) {
  auto it = acts.find(idx);
  if (it != acts.end()) return it->second;
  const bool on_cpu = idx >= slot_checkpoint_cpu(0) && idx < slot_forward_scratch(0);  // CPU checkpoints
  auto b = on_cpu ? alloc_cpu(bytes, true, name) : alloc_gpu(bytes, name);
  if (!b) return b.error();
  auto sp = std::make_shared<Buffer>(std::move(*b));
  acts[idx] = sp;
  return sp;
}

void Engine::Impl::free_act(int64_t idx) {
  auto it = acts.find(idx);
  if (it == acts.end()) return;
  it->second->release_accounting();
  acts.erase(it);
}

// --- a step ------------------------------------------------------------------------------------------------------

Result<StepResult> Engine::Impl::step(DataLoader& data) {
  const size_t nops = plan.ops.size();
  events.assign(nops, core::TraceEvent{});
  op_event.assign(nops, Event());
  op_ledger.assign(nops, {});
  hazards.clear();
  for (auto& p : params) {
    p.gathered.reset();
    p.grad_full.reset();
    p.pswap_slot = -1;
    *p.sumsq = 0;
  }
  for (auto& g : groups) g.speculative = false;
  cur = Scalars{};
  bucket_turn = 0;
  head_release_pending = false;
  layer0_release_pending = false;
  const int64_t N = model->tokens();
  micro_loss.assign(static_cast<size_t>(ga), 0.0);
  // Data-parallel sharding: a step's global batch is world · GA micro-batches drawn in order from the (identically
  // seeded) loader on every rank; rank r trains on micro-batches r·GA .. r·GA + GA − 1 of them. So world ranks with
  // GA g see exactly the micro-batches a one-rank run with GA world·g sees, in the same order.
  {
    std::vector<int32_t> skip(static_cast<size_t>(2 * N));
    for (int64_t m = 0; m < world * ga; ++m) {
      int32_t* dst = m / ga == rank ? tokens_host.as<int32_t>() + (m % ga) * 2 * N : skip.data();
      data.next(dst, dst + N);
    }
  }
  t0 = std::chrono::steady_clock::now();
  tokens_ready = Event();
  if (tokens_dev) {  // a GPU reads its token ids from device memory: uploaded before the first compute op
    void* dst = tokens_dev.data();
    const void* src = tokens_host.data();
    const int64_t bytes = tokens_host.bytes();
    tokens_ready = dev->launch(stream(core::Stream::compute), {},
                               [this, dst, src, bytes](void* st) { return K->copy(dst, src, bytes, st); });
  }
  seen_compute = false;
  norm_issued = false;
  Status st;
  for (const auto& op : plan.ops) {
    st = run_op(op);
    if (!st.ok()) break;
  }
  Status sy = dev->synchronize();
  if (st.ok()) st = sy;
  // Buffers of the step that are still held (a failed step) go now.
  acts.clear();
  dres = {};
  transient_fp32.reset();
  allreduce_buf.reset();
  for (auto& p : params) {
    p.gathered.reset();
    p.grad_full.reset();
  }
  if (!st.ok()) return st.error();
  ZS_TRY(finish_overlap());
  const double step_time = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // The micro-steps' losses: Σ token losses (double, token order) / tokens, from what the lm_head left.
  for (size_t m = 0; m < micro_loss.size(); ++m) {
    const float* l = loss_parts.as<float>() + static_cast<int64_t>(m) * N;
    double sum = 0;
    for (int64_t n = 0; n < N; ++n) sum += l[n];
    micro_loss[m] = sum / static_cast<double>(N);
  }
  StepResult r;
  r.step = step_index;
  for (double l : micro_loss) r.loss += l;
  r.loss /= static_cast<double>(ga);
  if (world > 1) {  // the global batch's mean loss: Σ over ranks in rank order, / world
    ZS_TRY(comm->all_reduce_f64(&r.loss, 1, ReduceOp::sum, {.op_name = "step loss"}));
    r.loss /= static_cast<double>(world);
  }
  r.loss_scale = scaler.scale;
  r.tokens = N * ga;
  r.step_time_s = step_time;
  const bool dpu_applies = o.schedule == core::Schedule::dpu && opt_offload;
  if (!cur.ready) ZS_TRY(compute_scalars(cur));
  if (dpu_applies) {
    // This step applied the previous step's gradients; this step's wait for the next one.
    const bool applied = pending_grads && !pending.overflow;
    if (applied) ++adam_step;
    r.grad_norm = pending_grads ? pending.norm / pending.loss_scale : 0;
    r.skipped = !applied;
    pending = cur;
    pending_grads = true;
  } else {
    r.grad_norm = cur.norm / cur.loss_scale;
    r.skipped = cur.overflow;
    if (!cur.overflow) ++adam_step;
  }
  scaler.update(cur.overflow);
  ++step_index;

  // Trace and phases (core::phase_split, docs/SIM.md's rule).
  core::Trace t;
  t.source = "train";
  t.schedule = core::to_string(o.schedule);
  t.events = events;
  for (size_t i = 0; i < nops; ++i) t.memory.push_back({events[i].end_s, op_ledger[i]});
  std::sort(t.memory.begin(), t.memory.end(), [](const auto& a, const auto& b) { return a.t_s < b.t_s; });
  t.step_time_s = 0;
  for (const auto& e : t.events) t.step_time_s = std::max(t.step_time_s, e.end_s);
  t.peak_bytes = {dev->memory().peak(), cpu_acct.peak(), nvme_acct.peak()};
  trace_last = std::move(t);
  r.peak_bytes = {dev->memory().peak(), cpu_acct.peak(), nvme_acct.peak()};
  r.phase_s = core::phase_split(trace_last);
  return r;
}

// --- public surface --------------------------------------------------------------------------------------------

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() {
  if (!impl_) return;
  (void)impl_->dev->synchronize();
  std::error_code ec;
  std::set<std::string> dirs;
  for (Swapper* sw : {impl_->par_swapper.get(), impl_->opt_swapper})
    if (sw)
      for (const auto& p : sw->options().paths) dirs.insert(p);
  impl_->par_swapper.reset();
  impl_->opt_swapper_owned.reset();
  for (const auto& d : dirs) std::filesystem::remove_all(d, ec);
}

core::Plan engine_plan(const core::ModelSpec& m, const core::Hardware& hw, const core::Strategy& s,
                       core::Schedule schedule) {
  core::PlanOptions po;
  po.schedule = schedule;
  po.memory = engine_memory_options();
  return core::make_plan(m, hw, s, po);
}

Result<std::unique_ptr<Engine>> Engine::create(const core::ModelSpec& m, const core::Hardware& hw,
                                               const core::Strategy& s, Device& dev, Communicator& comm,
                                               const EngineOptions& o) {
  return create(m, hw, s, engine_plan(m, hw, s, o.schedule), dev, comm, o);
}

Result<std::unique_ptr<Engine>> Engine::create(const core::ModelSpec& m, const core::Hardware& hw,
                                               const core::Strategy& s, core::Plan plan, Device& dev,
                                               Communicator& comm, const EngineOptions& o) {
  if (plan.schedule != o.schedule)
    return internal("the plan's schedule is " + core::to_string(plan.schedule) + ", the engine's " +
                    core::to_string(o.schedule));
  if (plan.overhead_bytes != std::array<int64_t, 3>{})
    return internal("the plan counts framework overheads: make it with engine_plan (engine_memory_options)");
  auto impl = std::make_unique<Impl>();
  impl->plan = std::move(plan);
  impl->m = m;
  impl->hw = hw;
  impl->s = s;
  impl->dev = &dev;
  impl->K = &dev.kernels();
  impl->comm = &comm;
  impl->o = o;
  ZS_TRY(impl->setup());
  if (dev.memory().capacity() < impl->plan.peak_bytes[0])
    return core::bad_input("the plan does not fit: the device has " + core::format_bytes(dev.memory().capacity()) +
                           ", the plan's GPU peak is " + core::format_bytes(impl->plan.peak_bytes[0]));
  std::unique_ptr<Engine> e(new Engine(std::move(impl)));
  Impl& I = *e->impl_;
  ZS_TRY(I.allocate_static());
  ZS_TRY(I.init_states());
  I.measured_static.static_bytes = {dev.memory().in_use(), I.cpu_acct.in_use(), I.nvme_acct.in_use()};
  I.measured_static.peak_bytes = {dev.memory().peak(), I.cpu_acct.peak(), I.nvme_acct.peak()};
  return e;
}

Result<StepResult> Engine::step(DataLoader& data) { return impl_->step(data); }
const core::Plan& Engine::plan() const { return impl_->plan; }
int64_t Engine::steps_done() const { return impl_->step_index; }
core::Trace Engine::last_trace() const { return impl_->trace_last; }
std::vector<std::string> Engine::notes() const { return impl_->notes; }
std::vector<double> Engine::take_pool_wake_samples() {
  return impl_->adam_pool ? impl_->adam_pool->take_wake_samples() : std::vector<double>{};
}

MeasuredMemory Engine::memory() const {
  MeasuredMemory mm;
  mm.peak_bytes = {impl_->dev->memory().peak(), impl_->cpu_acct.peak(), impl_->nvme_acct.peak()};
  mm.static_bytes = impl_->measured_static.static_bytes;
  mm.in_use_bytes = {impl_->dev->memory().in_use(), impl_->cpu_acct.in_use(), impl_->nvme_acct.in_use()};
  for (const auto& [k, v] : impl_->extras) mm.extras.push_back({k, v});
  return mm;
}

size_t most_typical(const std::vector<std::array<double, 3>>& steps) {
  std::array<double, 3> med{};
  for (size_t k = 0; k < 3; ++k) {
    std::vector<double> v;
    for (const auto& s : steps) v.push_back(s[k]);
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    med[k] = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  }
  size_t best = 0;
  double best_d = INFINITY;
  for (size_t i = 0; i < steps.size(); ++i) {
    double d = 0;
    for (size_t k = 0; k < 3; ++k)
      if (med[k] > 0) d += steps[i][k] > 0 ? std::fabs(std::log(steps[i][k] / med[k])) : INFINITY;
    if (d < best_d) {
      best_d = d;
      best = i;
    }
  }
  return best;
}

}  // namespace zs::exec
