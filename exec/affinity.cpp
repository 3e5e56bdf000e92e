// Core binding of ranks (affinity.h).
#include "exec/affinity.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace zs::exec {

std::vector<int> cores_for_rank(int local_rank, int local_size, int cpus) {
  std::vector<int> out;
  if (cpus <= 0 || local_size <= 0) return out;
  if (local_size > cpus) {  // oversubscribed: round-robin, one core each
    out.push_back(local_rank % cpus);
    return out;
  }
  // Contiguous blocks; the first cpus % local_size ranks get one more.
  const int base = cpus / local_size, extra = cpus % local_size;
  const int first = local_rank * base + std::min(local_rank, extra);
  const int count = base + (local_rank < extra ? 1 : 0);
  for (int c = first; c < first + count; ++c) out.push_back(c);
  return out;
}

core::Result<CoreBinding> bind_cores_to_rank(int local_rank, int local_size) {
  CoreBinding b;
  const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  b.node_cpus = online > 0 ? static_cast<int>(online) : 1;
  b.cores = cores_for_rank(local_rank, local_size, b.node_cpus);
  b.shared = local_size > b.node_cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : b.cores) CPU_SET(c, &set);
  if (::sched_setaffinity(0, sizeof set, &set) != 0)
    return core::io_error("--bind-cores-to-rank: sched_setaffinity failed: " + std::string(std::strerror(errno)));
  std::string list;
  for (int c : b.cores) list += (list.empty() ? "" : ",") + std::to_string(c);
  b.text = "rank " + std::to_string(local_rank) + " of " + std::to_string(local_size) + " on this node: CPUs " + list +
           " (" + std::to_string(b.cores.size()) + " of " + std::to_string(b.node_cpus) + ")";
  if (b.shared)
    b.text += ", shared: " + std::to_string(local_size) + " ranks on " + std::to_string(b.node_cpus) + " CPUs";
  return b;
}

}  // namespace zs::exec
