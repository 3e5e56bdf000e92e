// The NCCL communicator: exec::Communicator (communicator.h) over NCCL on device buffers, ordered on the stream in
// CollectiveCall::stream (nullptr: the legacy default stream), with NCCL's in-place conventions (they are the
// interface's). Bootstrapped from an ncclUniqueId that the caller moves between ranks (MPI_Bcast, a file, a
// socket: this file depends on none of them). The communicator is non-blocking; every call waits for its op with
// a deadline (CommunicatorOptions::timeout_s), polling ncclCommGetAsyncError and the stream, and on expiry aborts
// the communicator (ncclCommAbort) and fails naming the op and the rank — never a hang.
//   NcclUniqueIdBytes id{};
//   if (rank == 0) id = *nccl_unique_id();
//   MPI_Bcast(id.data(), id.size(), MPI_BYTE, 0, MPI_COMM_WORLD);       // the caller's transport
//   auto comm = make_nccl_communicator({.rank = rank, .world = world, .cuda_device = local_rank}, id);
#pragma once

#include <array>
#include <functional>
#include <memory>

#include "core/status.h"
#include "exec/communicator.h"

namespace zs::exec {

using NcclUniqueIdBytes = std::array<char, 128>;  // NCCL_UNIQUE_ID_BYTES

// A fresh id (rank 0 calls this once per communicator). Needs no GPU, but does need NCCL's bootstrap network.
core::Result<NcclUniqueIdBytes> nccl_unique_id();

struct NcclOptions {
  int rank = 0;
  int world = 1;
  int cuda_device = 0;  // the GPU this rank drives
  CommunicatorOptions comm;
  // true: each collective returns once it has completed on its stream (with everything queued before it there),
  // so errors and timeouts surface at the call. false: returns once enqueued; failures surface at the next call.
  bool wait_for_completion = true;
};

core::Result<std::unique_ptr<Communicator>> make_nccl_communicator(const NcclOptions& o, const NcclUniqueIdBytes& id);
// The same, with the id moved by `broadcast_id`: called on every rank with rank 0's fresh id in `id` on rank 0;
// it must leave rank 0's id in `id` on every rank.
core::Result<std::unique_ptr<Communicator>> make_nccl_communicator(
    const NcclOptions& o, const std::function<core::Status(NcclUniqueIdBytes& id)>& broadcast_id);

}  // namespace zs::exec
