// Executor: runs a Plan on a flow-level engine — honours each op's dependencies and the in-order queue of its
// (rank, stream), turns ops into executions, flows and collective ring flows, and records the Trace. It knows
// nothing of SimGrid: the engine behind it is a Backend (sim/simgrid_adapter.cpp), which reports completions.
//   Executor ex(plan, cost, topology);  ZS_TRY(ex.init());
//   backend.run(ex);   // calls ex.start(backend), then ex.complete(token) per finished activity
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "core/cost_model.h"
#include "core/plan.h"
#include "core/status.h"
#include "core/trace.h"
#include "sim/topology.h"

namespace zs::sim {

// The engine the executor drives. Activities are created only when they can start (the frontier), which keeps
// SimGrid 3.32 linear in the number of ops (DEPENDENCIES.md).
class Backend {
 public:
  virtual ~Backend() = default;
  // Work of `seconds` of exclusive use on a time-shared host (concurrent work shares it fairly).
  virtual void exec(int32_t host, double seconds, uint64_t token) = 0;
  // `bytes` from host to host over the topology's route (max-min fair sharing).
  virtual void flow(int32_t src, int32_t dst, double bytes, uint64_t token) = 0;
  // A pure delay (ring-step latencies beyond the first hop).
  virtual void delay(double seconds, uint64_t token) = 0;
  virtual double now() const = 0;
};

// How one collective op is carried out on the representative node (docs/SIM.md "Collectives").
struct CollectivePlan {
  core::Collective collective = core::Collective::allreduce;
  int64_t ranks = 1;        // group size n
  int64_t local_group = 1;  // members on this node, g
  int64_t nodes = 1;        // nodes spanned, k
  bool tree = false;        // NCCL's tree (all-reduce across nodes) instead of the ring
  double wire_bytes = 0;    // per member, from collectives.h
  int64_t steps = 0;        // latency steps
};
CollectivePlan plan_collective(core::OpKind kind, int64_t bytes, int64_t group_ranks, const TopologyShape& shape);

// Routing shared by the executor and the summary's link accounting (one copy).
// The hosts a transfer op of `rank` runs between; host memory that is not pinned has its own staging host.
std::pair<int32_t, int32_t> transfer_endpoints(const core::Plan& p, const Topology& t, const core::Op& op,
                                               int32_t rank);
// Where the member at position j of a local group [first, first + members) sends in a ring: the next member,
// or the NIC for the last member of a group that spans nodes (its peer on the next node is symmetric).
int32_t ring_next(const Topology& t, const CollectivePlan& cp, int64_t first, int64_t members, int64_t j);

class Executor {
 public:
  Executor(const core::Plan& plan, const core::CostModel& cost, const Topology& topo);
  // Checks the plan against the topology (deps point backwards, ranks exist, NVMe/network present) and builds
  // the instance graph. Must succeed before start().
  core::Status init();
  void start(Backend& b);
  void complete(uint64_t token);
  bool finished() const { return done_count_ == insts_.size(); }
  size_t instances() const { return insts_.size(); }
  int64_t activities() const { return activities_; }
  double end_time_s() const { return end_time_; }
  // Events of every instance (all simulated ranks) in instance order; rank 0's memory timeline.
  std::vector<core::TraceEvent> events() const;
  const std::vector<core::MemorySample>& memory() const { return memory_; }
  // After a run that did not finish: how many ops never ran and the first of them.
  std::string unfinished_report() const;

 private:
  struct Inst {
    int32_t rank = 0;
    uint32_t op = 0;       // index into plan.ops
    uint32_t pending = 0;  // unfinished dependencies
    uint32_t queue = 0;    // (rank, stream) queue index
    int32_t coll = -1;     // collective state index while waiting/running
    bool waking = false;   // its stream slept (cost.stream_wake_s): started after the wake-up delay
    bool pooled = false;   // a CPU op counted in pool_active_
    double start = -1, end = -1;
  };
  struct Coll {
    std::vector<uint32_t> members;  // instances, in local-rank order
    uint32_t arrived = 0;
    uint32_t outstanding = 0;  // flows still running
    uint32_t needed = 0;
    double hop_latency = 0;
    CollectivePlan plan;
  };
  enum class ActType : uint8_t { op, coll_flow, coll_delay, wake, age };
  struct Act {
    ActType type = ActType::op;
    uint32_t ref = 0;  // instance or collective index
  };

  uint64_t new_act(ActType t, uint32_t ref);
  // `waker`: the stream whose op's end made op i ready (−1: none, or its own stream's previous op).
  void try_start(uint32_t i, int waker = -1);
  void launch(uint32_t i);
  void launch_collective(uint32_t c);
  void finish(uint32_t i);
  void start_flow(uint32_t i);
  double data_age_s(const Inst& in, const core::Op& op) const;
  void drain();
  double cost_of(const core::Op& op) const;

  const core::Plan& plan_;
  const core::CostModel& cost_;
  const Topology& topo_;
  Backend* b_ = nullptr;
  bool replicate_ = true;
  std::vector<Inst> insts_;
  std::vector<uint32_t> succ_begin_, succ_;    // CSR: instance → successors
  std::vector<std::vector<uint32_t>> queues_;  // per (rank, stream), instances in program order
  std::vector<uint32_t> head_;                 // next position per queue
  std::vector<double> head_since_;             // per queue: when its head op became the head (its stream idle)
  std::vector<int32_t> coll_seq_;              // per instance: k-th collective of its rank, -1 none
  // Per (rank, tensor), when this step's last NVMe write of it ended (-1: not yet); only with hot NVMe figures.
  std::vector<double> nvme_written_;
  // Swaps of the node in flight, and since when none has been (the step starts with the path idle since the
  // previous step's last swap, which the step's start stands for, as data_age_s takes it).
  int32_t nvme_active_ = 0;
  double nvme_idle_since_ = 0;
  // Per rank, CPU Adam's pool (cost.cpu_pool_wake_s): its CPU ops running, since when none has (the step's start
  // for the previous step's last), and when its workers that slept join.
  std::vector<int32_t> pool_active_;
  std::vector<double> pool_idle_since_, pool_awake_at_;
  std::unordered_map<uint64_t, uint32_t> coll_index_;
  std::vector<Coll> colls_;
  std::vector<Act> acts_;
  std::vector<uint64_t> free_acts_;
  std::vector<uint32_t> finished_;  // worklist of instances that just finished
  size_t done_count_ = 0;
  int64_t activities_ = 0;
  double end_time_ = 0;
  std::array<int64_t, 3> mem_now_{};
  std::vector<core::MemorySample> memory_;
};

}  // namespace zs::sim
