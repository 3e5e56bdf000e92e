#include "sim/executor.h"

#include <algorithm>
#include <cmath>

namespace zs::sim {
namespace {

using core::OpKind;

constexpr size_t kStreams = 7;  // core::Stream values

bool is_collective(OpKind k) { return k == OpKind::allgather || k == OpKind::reduce_scatter || k == OpKind::allreduce; }
core::Collective collective_of(OpKind k) {
  return k == OpKind::allgather        ? core::Collective::allgather
         : k == OpKind::reduce_scatter ? core::Collective::reduce_scatter
                                       : core::Collective::allreduce;
}
int64_t ceil_log2(int64_t x) {
  int64_t r = 0;
  while ((int64_t{1} << r) < x) ++r;
  return r;
}
std::string op_name(const core::Op& op) {
  return "op " + std::to_string(op.id) + " (" + core::to_string(op.kind) + ")";
}

}  // namespace

CollectivePlan plan_collective(OpKind kind, int64_t bytes, int64_t group_ranks, const TopologyShape& shape) {
  CollectivePlan p;
  p.collective = collective_of(kind);
  p.ranks = std::max<int64_t>(group_ranks, 1);
  p.local_group = std::min(p.ranks, shape.local_ranks);
  p.nodes = p.ranks > shape.gpus_per_node ? (p.ranks + shape.gpus_per_node - 1) / shape.gpus_per_node : 1;
  p.wire_bytes = core::wire_bytes_per_rank(p.collective, bytes, p.ranks);
  p.steps = core::ring_steps(p.collective, p.ranks);
  if (p.collective == core::Collective::allreduce && p.nodes > 1) {
    // NCCL's double binary tree: a chain inside the node, log-depth across nodes, up then down.
    const int64_t tree_steps = 2 * ((p.local_group - 1) + ceil_log2(p.nodes));
    if (tree_steps < p.steps) {
      p.tree = true;
      p.steps = tree_steps;
    }
  }
  return p;
}

std::pair<int32_t, int32_t> transfer_endpoints(const core::Plan& p, const Topology& t, const core::Op& op,
                                               int32_t rank) {
  const bool lp_link = op.kind == OpKind::h2d || op.kind == OpKind::d2h;
  bool pageable = false;
  if (lp_link && op.tensor >= 0 && static_cast<size_t>(op.tensor) < p.tensors.size()) {
    const core::PlanTensor& x = p.tensors[static_cast<size_t>(op.tensor)];
    pageable = x.home == core::Tier::cpu && !x.pinned;
  }
  pageable = pageable || (lp_link && op.pageable_host);
  const int32_t host = pageable ? t.pageable_host() : t.cpu_host(), gpu = t.gpu_host(rank);
  switch (op.kind) {
    case OpKind::h2d:
      return {host, gpu};
    case OpKind::d2h:
      return {gpu, host};
    case OpKind::nvme_read:
      return {t.nvme_host(), t.cpu_host()};
    default:
      return {t.cpu_host(), t.nvme_host()};  // nvme_write
  }
}

int32_t ring_next(const Topology& t, const CollectivePlan& cp, int64_t first, int64_t members, int64_t j) {
  if (cp.nodes > 1 && j + 1 == members) return t.remote_host();  // leaves here, enters at member 0
  return t.gpu_host(first + (j + 1) % members);
}

Executor::Executor(const core::Plan& plan, const core::CostModel& cost, const Topology& topo)
    : plan_(plan), cost_(cost), topo_(topo) {}

core::Status Executor::init() {
  const auto& ops = plan_.ops;
  const int64_t L = topo_.shape.local_ranks;
  replicate_ = plan_.represented_ranks <= 1 &&
               std::all_of(ops.begin(), ops.end(), [](const core::Op& o) { return o.rank == 0; });

  uint32_t max_id = 0;
  for (const auto& o : ops) max_id = std::max(max_id, o.id);
  std::vector<int64_t> index_of(ops.empty() ? 0 : static_cast<size_t>(max_id) + 1, -1);
  for (size_t k = 0; k < ops.size(); ++k) {
    if (index_of[ops[k].id] >= 0) return core::internal_error("plan: duplicate op id " + std::to_string(ops[k].id));
    index_of[ops[k].id] = static_cast<int64_t>(k);
  }
  for (size_t k = 0; k < ops.size(); ++k) {
    const core::Op& o = ops[k];
    for (uint32_t d : o.deps)
      if (d > max_id || index_of[d] < 0 || index_of[d] >= static_cast<int64_t>(k))
        return core::internal_error("plan: " + op_name(o) + " depends on op " + std::to_string(d) +
                                    ", which is not an earlier op");
    if (!replicate_ && (o.rank < 0 || o.rank >= L))
      return core::internal_error("plan: " + op_name(o) + " is for rank " + std::to_string(o.rank) + ", but " +
                                  std::to_string(L) + " ranks are simulated");
    if ((o.kind == OpKind::nvme_read || o.kind == OpKind::nvme_write) && o.bytes > 0 &&
        !topo_.has_route(topo_.nvme_host(), topo_.cpu_host()))
      return core::bad_input("the plan moves data to or from NVMe, but the hardware profile has no NVMe bandwidth");
    if (is_collective(o.kind)) {
      if (o.group_ranks > plan_.ranks)
        return core::internal_error("plan: " + op_name(o) + " has a group of " + std::to_string(o.group_ranks) +
                                    " ranks in a world of " + std::to_string(plan_.ranks));
      CollectivePlan cp = plan_collective(o.kind, o.bytes, o.group_ranks, topo_.shape);
      if (cp.nodes > 1 && cp.wire_bytes > 0 && !topo_.network)
        return core::bad_input("a collective spans " + std::to_string(cp.nodes) +
                               " nodes, but the hardware profile has no network (network_GBps_per_node is 0)");
    }
  }

  // Instances: every (rank, op) in replicate mode (ranks are symmetric), the listed ops otherwise.
  const int64_t ranks = replicate_ ? L : 1;
  const size_t nops = ops.size();
  insts_.resize(nops * static_cast<size_t>(ranks));
  queues_.assign(static_cast<size_t>(L) * kStreams, {});
  coll_seq_.assign(insts_.size(), -1);
  std::vector<int32_t> coll_counter(static_cast<size_t>(L), 0);
  auto inst_of = [&](int64_t r, size_t k) { return replicate_ ? static_cast<size_t>(r) * nops + k : k; };
  std::vector<uint32_t> succ_count(insts_.size() + 1, 0);
  for (int64_t r = 0; r < ranks; ++r)
    for (size_t k = 0; k < nops; ++k) {
      const size_t i = inst_of(r, k);
      Inst& in = insts_[i];
      in.rank = replicate_ ? static_cast<int32_t>(r) : ops[k].rank;
      in.op = static_cast<uint32_t>(k);
      in.pending = static_cast<uint32_t>(ops[k].deps.size());
      in.queue = static_cast<uint32_t>(static_cast<size_t>(in.rank) * kStreams + static_cast<size_t>(ops[k].stream));
      queues_[in.queue].push_back(static_cast<uint32_t>(i));
      if (is_collective(ops[k].kind)) coll_seq_[i] = coll_counter[static_cast<size_t>(in.rank)]++;
      for (uint32_t d : ops[k].deps) ++succ_count[inst_of(r, static_cast<size_t>(index_of[d]))];
    }
  if (cost_.nvme_settle_s > 0) nvme_written_.assign(static_cast<size_t>(L) * plan_.tensors.size(), -1.0);
  succ_begin_.assign(insts_.size() + 1, 0);
  for (size_t i = 0; i < insts_.size(); ++i) succ_begin_[i + 1] = succ_begin_[i] + succ_count[i];
  succ_.assign(succ_begin_.back(), 0);
  std::vector<uint32_t> fill(succ_begin_.begin(), succ_begin_.end() - 1);
  for (int64_t r = 0; r < ranks; ++r)
    for (size_t k = 0; k < nops; ++k)
      for (uint32_t d : ops[k].deps)
        succ_[fill[inst_of(r, static_cast<size_t>(index_of[d]))]++] = static_cast<uint32_t>(inst_of(r, k));
  head_.assign(queues_.size(), 0);
  head_since_.assign(queues_.size(), 0.0);
  pool_active_.assign(static_cast<size_t>(L), 0);
  pool_idle_since_.assign(static_cast<size_t>(L), 0.0);
  pool_awake_at_.assign(static_cast<size_t>(L), 0.0);
  mem_now_ = plan_.static_bytes;
  memory_.clear();
  memory_.push_back({0.0, mem_now_});
  return {};
}

uint64_t Executor::new_act(ActType t, uint32_t ref) {
  ++activities_;
  if (!free_acts_.empty()) {
    uint64_t tok = free_acts_.back();
    free_acts_.pop_back();
    acts_[tok] = {t, ref};
    return tok;
  }
  acts_.push_back({t, ref});
  return acts_.size() - 1;
}

void Executor::start(Backend& b) {
  b_ = &b;
  for (size_t q = 0; q < queues_.size(); ++q)
    if (!queues_[q].empty()) try_start(queues_[q][0]);
  drain();
}

void Executor::try_start(uint32_t i, int waker) {
  Inst& in = insts_[i];
  if (in.pending > 0 || in.start >= 0 || in.coll >= 0 || in.waking) return;
  const auto& q = queues_[in.queue];
  if (head_[in.queue] >= q.size() || q[head_[in.queue]] != i) return;
  // A stream that waited longer than it polls has gone to sleep: its work starts a wake-up later (the pair's own
  // figure from the stream that handed it over, where the profile has one).
  const core::Op& op = plan_.ops[in.op];
  if (cost_.stream_wake_s > 0 && op.kind != OpKind::alloc && op.kind != OpKind::release &&
      b_->now() - head_since_[in.queue] > cost_.stream_spin_s) {
    const double w =
        waker >= 0 ? core::stream_wake_for(cost_, static_cast<core::Stream>(waker), op.stream) : cost_.stream_wake_s;
    if (w > 0) {
      in.waking = true;
      b_->delay(w, new_act(ActType::wake, i));
      return;
    }
  }
  launch(i);
}

double Executor::cost_of(const core::Op& op) const { return core::compute_time_s(cost_, op); }

void Executor::launch(uint32_t i) {
  Inst& in = insts_[i];
  const core::Op& op = plan_.ops[in.op];
  const double now = b_->now();
  switch (op.kind) {
    case OpKind::forward:
    case OpKind::backward:
    case OpKind::recompute:
    case OpKind::adam_gpu:
    case OpKind::adam_cpu:
    case OpKind::cast_cpu: {
      in.start = now;
      double t = cost_of(op);
      if (t <= 0) return finish(i);
      const bool cpu = op.kind == OpKind::adam_cpu || op.kind == OpKind::cast_cpu;
      if (cpu && cost_.cpu_pool_wake_s > 0 && cost_.cpu_pool_threads > 1) {
        // A pool idle past its poll has its workers asleep: they join cpu_pool_wake_s after this op's start, and
        // until then the caller works alone (T threads' work at 1), in this op and in those that follow it.
        const auto r = static_cast<size_t>(in.rank);
        in.pooled = true;
        if (pool_active_[r]++ == 0 && now - pool_idle_since_[r] > cost_.stream_spin_s)
          pool_awake_at_[r] = now + cost_.cpu_pool_wake_s;
        t += core::cpu_pool_wake_extra_s(cost_, t, pool_awake_at_[r] - now);
      }
      b_->exec(cpu ? topo_.cpu_host() : topo_.gpu_host(in.rank), t, new_act(ActType::op, i));
      return;
    }
    case OpKind::h2d:
    case OpKind::d2h:
    case OpKind::nvme_read:
    case OpKind::nvme_write: {
      in.start = now;
      if (op.bytes <= 0) return finish(i);
      const bool nvme = op.kind == OpKind::nvme_read || op.kind == OpKind::nvme_write;
      if (nvme) {
        double extra = 0;
        // The first swap after the path rested pays its wake-up; one that joins or follows a running swap does not.
        if (nvme_active_++ == 0) extra = core::nvme_idle_extra_s(cost_, now - nvme_idle_since_);
        if (cost_.nvme_settle_s > 0) {
          // Young data is still in a write cache: the link prices the fastest swap, the data's age the rest.
          const bool read = op.kind == OpKind::nvme_read;
          const double want = core::nvme_swap_time_s(cost_, read, op.bytes, data_age_s(in, op));
          const double link = core::nvme_link_latency_s(cost_, read) +
                              static_cast<double>(op.bytes) / core::nvme_link_Bps(cost_, read);
          extra += std::max(0.0, want - link);
        }
        if (extra > 1e-12) {
          b_->delay(extra, new_act(ActType::age, i));
          return;
        }
      }
      start_flow(i);
      return;
    }
    case OpKind::allgather:
    case OpKind::reduce_scatter:
    case OpKind::allreduce: {
      const CollectivePlan cp = plan_collective(op.kind, op.bytes, op.group_ranks, topo_.shape);
      if (cp.wire_bytes <= 0) {
        in.start = now;
        return finish(i);
      }
      const int64_t g = cp.local_group;
      const uint64_t key = static_cast<uint64_t>(coll_seq_[i]) * static_cast<uint64_t>(topo_.shape.local_ranks) +
                           static_cast<uint64_t>(in.rank / g);
      auto [it, fresh] = coll_index_.try_emplace(key, static_cast<uint32_t>(colls_.size()));
      if (fresh) {
        Coll c;
        c.plan = cp;
        const int64_t first = (in.rank / g) * g;
        c.needed = static_cast<uint32_t>(std::min(g, topo_.shape.local_ranks - first));
        colls_.push_back(std::move(c));
      }
      const uint32_t ci = it->second;
      in.coll = static_cast<int32_t>(ci);
      colls_[ci].members.push_back(i);
      if (++colls_[ci].arrived == colls_[ci].needed) {
        coll_index_.erase(it);
        launch_collective(ci);
      }
      return;
    }
    case OpKind::alloc:
    case OpKind::release:
      in.start = now;
      return finish(i);
  }
}

void Executor::start_flow(uint32_t i) {
  const Inst& in = insts_[i];
  const core::Op& op = plan_.ops[in.op];
  const auto [src, dst] = transfer_endpoints(plan_, topo_, op, in.rank);
  b_->flow(src, dst, static_cast<double>(op.bytes), new_act(ActType::op, i));
}

// How long ago the swap's data was last written: since this step's last write of its tensors, or, when this step
// has not written them, since the step began (the previous step wrote them at its end, at the latest).
double Executor::data_age_s(const Inst& in, const core::Op& op) const {
  const double now = b_->now();
  double last = -1;
  if (op.tensor >= 0) {
    const size_t base = static_cast<size_t>(in.rank) * plan_.tensors.size();
    for (int32_t t = op.tensor; t < op.tensor + std::max(op.tensor_count, 1); ++t)
      if (static_cast<size_t>(t) < plan_.tensors.size())
        last = std::max(last, nvme_written_[base + static_cast<size_t>(t)]);
  }
  return last >= 0 ? now - last : now;
}

void Executor::launch_collective(uint32_t ci) {
  Coll& c = colls_[ci];
  std::sort(c.members.begin(), c.members.end(),
            [&](uint32_t a, uint32_t b) { return insts_[a].rank < insts_[b].rank; });
  const double now = b_->now();
  const size_t g = c.members.size();
  for (size_t j = 0; j < g; ++j) {
    Inst& in = insts_[c.members[j]];
    in.start = now;
    const int32_t src = topo_.gpu_host(in.rank);
    const int64_t first = insts_[c.members[0]].rank;
    const int32_t dst = ring_next(topo_, c.plan, first, static_cast<int64_t>(g), static_cast<int64_t>(j));
    if (src == dst) continue;
    c.hop_latency = std::max(c.hop_latency, topo_.route(src, dst).latency_s);
    ++c.outstanding;
    b_->flow(src, dst, c.plan.wire_bytes, new_act(ActType::coll_flow, ci));
  }
  if (c.outstanding == 0)
    for (uint32_t m : c.members) finish(m);
}

void Executor::complete(uint64_t token) {
  const Act a = acts_[token];
  free_acts_.push_back(token);
  switch (a.type) {
    case ActType::op:
      finish(a.ref);
      break;
    case ActType::wake:
      launch(a.ref);
      break;
    case ActType::age:
      start_flow(a.ref);
      break;
    case ActType::coll_flow: {
      Coll& c = colls_[a.ref];
      if (--c.outstanding > 0) break;
      const double extra = static_cast<double>(std::max<int64_t>(c.plan.steps - 1, 0)) * c.hop_latency;
      if (extra > 0) {
        b_->delay(extra, new_act(ActType::coll_delay, a.ref));
        break;
      }
      [[fallthrough]];
    }
    case ActType::coll_delay: {
      Coll& c = colls_[a.ref];
      for (uint32_t m : c.members) finish(m);
      c.members.clear();
      c.members.shrink_to_fit();
      break;
    }
  }
  drain();
}

void Executor::finish(uint32_t i) {
  Inst& in = insts_[i];
  in.end = b_->now();
  end_time_ = std::max(end_time_, in.end);
  ++done_count_;
  const core::Op& op = plan_.ops[in.op];
  if ((op.kind == OpKind::nvme_read || op.kind == OpKind::nvme_write) && op.bytes > 0 && --nvme_active_ == 0)
    nvme_idle_since_ = in.end;
  if (in.pooled && --pool_active_[static_cast<size_t>(in.rank)] == 0)
    pool_idle_since_[static_cast<size_t>(in.rank)] = in.end;
  if (op.kind == OpKind::nvme_write && !nvme_written_.empty() && op.tensor >= 0) {
    const size_t base = static_cast<size_t>(in.rank) * plan_.tensors.size();
    for (int32_t t = op.tensor; t < op.tensor + std::max(op.tensor_count, 1); ++t)
      if (static_cast<size_t>(t) < plan_.tensors.size()) nvme_written_[base + static_cast<size_t>(t)] = in.end;
  }
  if (in.rank == 0 && (op.mem_delta[0] != 0 || op.mem_delta[1] != 0 || op.mem_delta[2] != 0)) {
    for (size_t t = 0; t < 3; ++t) mem_now_[t] += op.mem_delta[t];
    if (memory_.back().t_s == in.end)
      memory_.back().bytes = mem_now_;
    else
      memory_.push_back({in.end, mem_now_});
  }
  finished_.push_back(i);
}

void Executor::drain() {
  while (!finished_.empty()) {
    const uint32_t i = finished_.back();
    finished_.pop_back();
    const uint32_t q = insts_[i].queue;
    ++head_[q];
    head_since_[q] = b_->now();
    if (head_[q] < queues_[q].size()) try_start(queues_[q][head_[q]]);
    for (uint32_t s = succ_begin_[i]; s < succ_begin_[i + 1]; ++s) {
      const uint32_t j = succ_[s];
      if (--insts_[j].pending == 0) try_start(j, static_cast<int>(plan_.ops[insts_[i].op].stream));
    }
  }
}

std::vector<core::TraceEvent> Executor::events() const {
  std::vector<core::TraceEvent> ev;
  ev.reserve(insts_.size());
  for (const Inst& in : insts_) {
    const core::Op& op = plan_.ops[in.op];
    core::TraceEvent e;
    e.op = op.id;
    e.rank = in.rank;
    e.stream = op.stream;
    e.kind = op.kind;
    e.phase = op.phase;
    e.layer = op.layer;
    e.micro_step = op.micro_step;
    e.start_s = in.start;
    e.end_s = in.end;
    e.bytes = op.bytes;
    e.flops = op.gemm_flops;
    ev.push_back(e);
  }
  return ev;
}

std::string Executor::unfinished_report() const {
  size_t waiting = 0;
  const Inst* first = nullptr;
  for (const Inst& in : insts_)
    if (in.end < 0) {
      ++waiting;
      if (!first) first = &in;
    }
  if (!first) return "";
  const core::Op& op = plan_.ops[first->op];
  return std::to_string(waiting) +
         " ops never ran (deadlock: a stream's head waits on an op queued behind it); first: rank " +
         std::to_string(first->rank) + " " + op_name(op) + " on stream " + core::to_string(op.stream);
}

}  // namespace zs::sim
