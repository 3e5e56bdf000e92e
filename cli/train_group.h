// `zerosim train`'s data-parallel group: MPI when launched by mpirun (or srun/PMI), else one rank; and the per-tier
// memory peaks gathered over it.
#pragma once

#include <array>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "core/status.h"
#include "exec/communicator.h"
#ifdef ZEROSIM_HAVE_MPI
#include "exec/mpi_communicator.h"
#endif

namespace zs::cli {

// The ranks of one `train` run and this process's place among them.
struct Group {
#ifdef ZEROSIM_HAVE_MPI
  std::unique_ptr<exec::MpiRuntime> mpi;  // declared first: finalised after the communicator is gone
#endif
  std::unique_ptr<exec::Communicator> comm;
  int rank = 0, world = 1, local_rank = 0, local_size = 1;
  // After a failure on one rank the others may wait in a collective: stop them all (MPI_Abort), never hang.
  [[noreturn]] void abort(int code) const {
#ifdef ZEROSIM_HAVE_MPI
    if (mpi) mpi->abort(code);
#endif
    std::exit(code);
  }
};

// The group this process is in; comm_timeout_s bounds every MPI collective.
core::Result<Group> make_group(double comm_timeout_s);

// Per-tier peaks of every rank (each rank's three int64 as raw bytes through an all-gather: a copy, exact).
std::vector<std::array<int64_t, 3>> gather_peaks(exec::Communicator& c, const std::array<int64_t, 3>& mine,
                                                 core::Status& st);
std::array<int64_t, 3> max_peaks(const std::vector<std::array<int64_t, 3>>& all);

}  // namespace zs::cli
