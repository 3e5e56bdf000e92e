// Communicator: the data-parallel group's collectives — all-gather, reduce-scatter, all-reduce, broadcast,
// barrier — as ZeRO uses them, with NCCL's in-place conventions. The single-rank communicator (here) makes
// every collective a local copy; MPI (host device) and NCCL (CUDA device) implementations come with multi-rank
// training (issue 7) behind this same interface, with a timeout that turns a missing rank into an error naming
// the op and rank instead of a hang.
//   auto comm = make_single_rank_communicator();
//   Status s = comm->all_gather(full, full + rank * n * 2, n, DType::bf16, {.op_name = "allgather h.3"});
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "exec/dtype.h"

namespace zs::exec {

using core::Status;

enum class ReduceOp : uint8_t { sum, avg };

// Reductions of the multi-rank implementations run in a fixed rank order, one rounded add at a time in the dtype
// (exactly as grad_accumulate rounds): acc = x_0, acc = round(acc + x_1), ... — so every rank gets the same bits
// and a run is reproducible. avg divides each contribution by world first (DeepSpeed pre-divides gradients),
// which for a power-of-two world is exact, so avg then equals sum / world bit for bit.
// Per call: what the collective is for (error messages), and the stream it is ordered on (NCCL: a
// cudaStream_t from Stream::native_handle(); MPI and single-rank calls are blocking and ignore it).
struct CollectiveCall {
  std::string op_name;
  void* stream = nullptr;
};

struct CommunicatorOptions {
  double timeout_s = 300;  // a collective not complete by then fails on every rank (multi-rank implementations)
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world() const = 0;
  virtual std::string name() const = 0;  // "single", "mpi", "nccl"

  // recv [world · count] ← every rank's send [count]. In place when send == recv + rank · count elements.
  virtual Status all_gather(void* recv, const void* send, int64_t count, DType t, const CollectiveCall& c) = 0;
  // recv [count] ← reduction over ranks of send[rank · count, (rank + 1) · count). In place when
  // recv == send + rank · count elements.
  virtual Status reduce_scatter(void* recv, const void* send, int64_t count, DType t, ReduceOp op,
                                const CollectiveCall& c) = 0;
  virtual Status all_reduce(void* buf, int64_t count, DType t, ReduceOp op, const CollectiveCall& c) = 0;
  // buf [count] on `root` ← reduction over ranks of every rank's buf (other ranks' buf is left as it was, or, in
  // this default, reduced too): DeepSpeed's stage 1-2 bucket reduction to each partition's owner. The default is
  // an all-reduce (the same values, more bytes); MPI overrides it with a real reduce.
  virtual Status reduce(void* buf, int64_t count, DType t, ReduceOp op, int root, const CollectiveCall& c) {
    (void)root;
    return all_reduce(buf, count, t, op, c);
  }
  // Doubles (gradient-norm partial sums, overflow flags) reduced in rank order.
  virtual Status all_reduce_f64(double* buf, int64_t count, ReduceOp op, const CollectiveCall& c) = 0;
  virtual Status broadcast(void* buf, int64_t bytes, int root, const CollectiveCall& c) = 0;
  virtual Status barrier(const CollectiveCall& c) = 0;
};

std::unique_ptr<Communicator> make_single_rank_communicator();

// The multi-rank reduction: out[i] = in[0][i] ⊕ in[1][i] ⊕ … in rank order, one rounded add at a time in t (avg:
// each contribution / world first, world = in.size()). out may be one of the inputs.
void reduce_rank_order(DType t, void* out, const std::vector<const void*>& in, int64_t count, ReduceOp op);

// `world` communicators whose ranks are threads of this process ([r] is rank r; each rank's calls come from its
// own threads): the MPI communicator's semantics — rank-order reductions, a deadline naming the ranks that did
// not arrive — without MPI, for tests of several engines in one process. They share state; keep all alive.
std::vector<std::unique_ptr<Communicator>> make_thread_group(int world, const CommunicatorOptions& o = {});

}  // namespace zs::exec
