// The MPI communicator (host device, several ranks under mpirun) and the MPI runtime it needs. Every collective is
// point-to-point messages (MPI_Isend/MPI_Irecv, tagged with the call's sequence number) polled with MPI_Test
// against a deadline, so a rank that never joins turns into an error naming the op, this rank and the ranks whose
// messages did not arrive — never a hang. Reductions run in rank order in the dtype (communicator.h), on every
// rank from the same inputs, so all ranks hold the same bits. Built only when CMake finds MPI (ZEROSIM_HAVE_MPI).
//   auto rt = MpiRuntime::init(&argc, &argv);          // MPI_Init_thread; MPI_Finalize when it goes
//   auto comm = make_mpi_communicator({.timeout_s = 300});
//   Status s = (*comm)->all_reduce(buf, n, DType::bf16, ReduceOp::avg, {.op_name = "allreduce bucket"});
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"
#include "exec/communicator.h"

namespace zs::exec {

// True when this process was started by mpirun/srun/a PMI launcher (OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK).
bool launched_under_mpi();

// MPI_Init_thread (MPI_THREAD_MULTIPLE asked, SERIALIZED at least: collectives come from the comm stream's
// thread) and MPI_Finalize in the destructor. Errors return (MPI_ERRORS_RETURN on MPI_COMM_WORLD). Move-only.
class MpiRuntime {
 public:
  static core::Result<std::unique_ptr<MpiRuntime>> init(int* argc, char*** argv);
  ~MpiRuntime();
  MpiRuntime(const MpiRuntime&) = delete;
  MpiRuntime& operator=(const MpiRuntime&) = delete;
  int rank() const { return rank_; }
  int world() const { return world_; }
  // Ranks on this node (MPI_COMM_TYPE_SHARED) and this one's index among them (core binding).
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  // MPI_Abort(MPI_COMM_WORLD): every rank stops (after a timeout, so no rank waits forever).
  [[noreturn]] void abort(int code) const;

 private:
  MpiRuntime() = default;
  int rank_ = 0, world_ = 1, local_rank_ = 0, local_size_ = 1;
};

struct MpiCommunicatorOptions : CommunicatorOptions {
  // Messages longer than this are sent as several (MPI counts are int; matching keeps their order).
  int64_t max_message_bytes = int64_t{1} << 30;
  // For tests only: rank skip_rank leaves out its skip_call-th collective (0-based): it waits skip_hang_s (a hung
  // rank) and returns without taking part, so the others' deadline fires. -1: never.
  int skip_rank = -1;
  int64_t skip_call = -1;
  double skip_hang_s = 0;
};

// A communicator over a duplicate of MPI_COMM_WORLD (MPI must be initialised). After a timeout it is broken:
// every later call fails at once (messages of the failed call may still be in flight).
core::Result<std::unique_ptr<Communicator>> make_mpi_communicator(const MpiCommunicatorOptions& o = {});

}  // namespace zs::exec
