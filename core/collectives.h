// Collective costs, the one copy shared by core, sim and exec (nccl-tests' PERFORMANCE.md): for n ranks and a
// buffer of B bytes, ring all-reduce moves 2(n−1)/n·B per rank, all-gather and reduce-scatter (n−1)/n·B.
//   double t = collective_time_s(Collective::allreduce, bytes, 8, link_Bps, latency_s);
#pragma once

#include <cstdint>
#include <string>

namespace zs::core {

enum class Collective { allreduce, allgather, reduce_scatter, broadcast };

// Bytes each rank sends (= receives) on the wire for a collective over `bytes` of data (the full,
// unpartitioned buffer for all-gather / reduce-scatter, as nccl-tests' "size").
inline double wire_bytes_per_rank(Collective c, int64_t bytes, int64_t ranks) {
  if (ranks <= 1) return 0.0;
  const double b = static_cast<double>(bytes), n = static_cast<double>(ranks);
  switch (c) {
    case Collective::allreduce: return 2.0 * (n - 1.0) / n * b;
    case Collective::allgather:
    case Collective::reduce_scatter: return (n - 1.0) / n * b;
    case Collective::broadcast: return b;
  }
  return 0.0;
}

// Ring steps: each carries one chunk and pays one latency.
inline int64_t ring_steps(Collective c, int64_t ranks) {
  if (ranks <= 1) return 0;
  return c == Collective::allreduce ? 2 * (ranks - 1) : ranks - 1;
}

// Ring time with per-rank bandwidth (bus bandwidth, bytes/s) and per-step latency.
inline double collective_time_s(Collective c, int64_t bytes, int64_t ranks, double busbw_Bps, double step_latency_s) {
  if (ranks <= 1) return 0.0;
  return wire_bytes_per_rank(c, bytes, ranks) / busbw_Bps + static_cast<double>(ring_steps(c, ranks)) * step_latency_s;
}

inline std::string to_string(Collective c) {
  switch (c) {
    case Collective::allreduce: return "allreduce";
    case Collective::allgather: return "allgather";
    case Collective::reduce_scatter: return "reduce_scatter";
    case Collective::broadcast: return "broadcast";
  }
  return "?";
}

}  // namespace zs::core
