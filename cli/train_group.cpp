// `zerosim train`'s data-parallel group (train_group.h).
#include "cli/train_group.h"

#include <algorithm>
#include <cstdio>
#include <string>

namespace zs::cli {

core::Result<Group> make_group(double comm_timeout_s) {
  Group g;
#ifdef ZEROSIM_HAVE_MPI
  if (exec::launched_under_mpi()) {
    auto rt = exec::MpiRuntime::init(nullptr, nullptr);
    if (!rt) return rt.error();
    g.mpi = std::move(*rt);
    exec::MpiCommunicatorOptions mo;
    mo.timeout_s = comm_timeout_s;
    // For tests only: ZEROSIM_TEST_SKIP_COLLECTIVE=RANK:CALL[:HANG_S] makes RANK hang HANG_S seconds at its
    // CALL-th collective (0-based) and leave it out (tests/cli/mpi_train.sh).
    if (const char* sk = std::getenv("ZEROSIM_TEST_SKIP_COLLECTIVE")) {
      int r = -1;
      long long c = -1;
      double h = 0;
      if (std::sscanf(sk, "%d:%lld:%lf", &r, &c, &h) >= 2) {
        mo.skip_rank = r;
        mo.skip_call = c;
        mo.skip_hang_s = h;
      }
    }
    auto c = exec::make_mpi_communicator(mo);
    if (!c) return c.error();
    g.comm = std::move(*c);
    g.rank = g.mpi->rank();
    g.world = g.mpi->world();
    g.local_rank = g.mpi->local_rank();
    g.local_size = g.mpi->local_size();
    return g;
  }
#else
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char* n = std::getenv(v); n && std::atoi(n) > 1)
      return core::bad_input(std::string("launched with ") + v + "=" + n +
                             ", but this build has no MPI (CMake found none): it would train " + n +
                             " independent copies");
#endif
  g.comm = exec::make_single_rank_communicator();
  return g;
}

std::vector<std::array<int64_t, 3>> gather_peaks(exec::Communicator& c, const std::array<int64_t, 3>& mine,
                                                 core::Status& st) {
  std::vector<std::array<int64_t, 3>> all(static_cast<size_t>(c.world()));
  all[static_cast<size_t>(c.rank())] = mine;
  st = c.all_gather(all.data(), all.data() + c.rank(), 6, exec::DType::fp32, {.op_name = "peak memory"});
  return all;
}
std::array<int64_t, 3> max_peaks(const std::vector<std::array<int64_t, 3>>& all) {
  std::array<int64_t, 3> m{};
  for (const auto& a : all)
    for (size_t t = 0; t < 3; ++t) m[t] = std::max(m[t], a[t]);
  return m;
}

}  // namespace zs::cli
