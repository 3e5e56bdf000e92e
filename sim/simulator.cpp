#include "sim/simulator.h"

#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <functional>
#include <type_traits>

#include "sim/executor.h"
#include "sim/simgrid_adapter.h"

namespace zs::sim {
namespace {

static_assert(std::is_trivially_copyable_v<core::TraceEvent>);
static_assert(std::is_trivially_copyable_v<core::MemorySample>);

// What the child sends back: ok flag, message, end time, counts, raw event and memory arrays.
struct Outcome {
  bool ok = false;
  std::string message;
  double end_s = 0, wall_s = 0;
  int64_t activities = 0;
  std::vector<core::TraceEvent> events;
  std::vector<core::MemorySample> memory;
};

Outcome run_here(const core::Plan& plan, const core::CostModel& cost, const Topology& topo,
                 const std::function<void()>& engine_ready = {}) {
  Outcome out;
  Executor ex(plan, cost, topo);
  core::Status s = ex.init();
  const auto t0 = std::chrono::steady_clock::now();
  if (s.ok()) s = run_on_simgrid(topo, ex, engine_ready);
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.ok = s.ok();
  out.message = s.ok() ? "" : s.message();
  if (!s.ok()) return out;
  out.end_s = ex.end_time_s();
  out.activities = ex.activities();
  out.events = ex.events();
  out.memory = ex.memory();
  return out;
}

template <class T>
void put(std::string& b, const T& v) {
  b.append(reinterpret_cast<const char*>(&v), sizeof v);
}
template <class T>
void put_vec(std::string& b, const std::vector<T>& v) {
  put(b, static_cast<uint64_t>(v.size()));
  b.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

std::string encode(const Outcome& o) {
  std::string b;
  put(b, static_cast<uint8_t>(o.ok));
  put(b, static_cast<uint64_t>(o.message.size()));
  b += o.message;
  put(b, o.end_s);
  put(b, o.wall_s);
  put(b, o.activities);
  put_vec(b, o.events);
  put_vec(b, o.memory);
  return b;
}

class Reader {
 public:
  explicit Reader(const std::string& b) : b_(b) {}
  template <class T>
  bool get(T& v) {
    if (pos_ + sizeof v > b_.size()) return false;
    std::memcpy(&v, b_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return true;
  }
  bool get_str(std::string& s) {
    uint64_t n = 0;
    if (!get(n) || pos_ + n > b_.size()) return false;
    s.assign(b_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  template <class T>
  bool get_vec(std::vector<T>& v) {
    uint64_t n = 0;
    if (!get(n) || pos_ + n * sizeof(T) > b_.size()) return false;
    v.resize(n);
    std::memcpy(static_cast<void*>(v.data()), b_.data() + pos_, n * sizeof(T));
    pos_ += n * sizeof(T);
    return true;
  }

 private:
  const std::string& b_;
  size_t pos_ = 0;
};

bool decode(const std::string& b, Outcome& o) {
  Reader r(b);
  uint8_t ok = 0;
  return r.get(ok) && (o.ok = ok != 0, true) && r.get_str(o.message) && r.get(o.end_s) && r.get(o.wall_s) &&
         r.get(o.activities) && r.get_vec(o.events) && r.get_vec(o.memory);
}

bool write_all(int fd, const std::string& b) {
  size_t off = 0;
  while (off < b.size()) {
    ssize_t n = ::write(fd, b.data() + off, b.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

// A child forked from a multi-threaded parent (the GUI's jobs) inherits every lock another thread held at that
// moment; SimGrid's start-up takes the process's atexit lock, so such a child can hang there for good. The child
// reports once its engine is up; one that does not within kReadyTimeoutMs is killed and the run forked again.
constexpr int kReadyTimeoutMs = 20000;
constexpr int kForkAttempts = 3;
constexpr char kReady = 'R';

enum class ChildWait { ready, stuck, gone };

ChildWait wait_ready(int fd) {
  struct pollfd p {fd, POLLIN, 0};
  for (;;) {
    const int n = ::poll(&p, 1, kReadyTimeoutMs);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) return ChildWait::stuck;
    char c = 0;
    ssize_t r = 0;
    while ((r = ::read(fd, &c, 1)) < 0 && errno == EINTR) {
    }
    return r == 1 && c == kReady ? ChildWait::ready : ChildWait::gone;
  }
}

core::Result<Outcome> run_isolated(const core::Plan& plan, const core::CostModel& cost, const Topology& topo,
                                   int64_t* rss_bytes) {
  for (int attempt = 1;; ++attempt) {
    int fds[2];
    if (::pipe(fds) != 0) return core::internal_error(std::string("simulation: pipe: ") + std::strerror(errno));
    std::fflush(nullptr);  // the child must not inherit (and flush again) buffered output
    const pid_t pid = ::fork();
    if (pid < 0) return core::internal_error(std::string("simulation: fork: ") + std::strerror(errno));
    if (pid == 0) {
      ::close(fds[0]);
      auto ready = [fd = fds[1]] { (void)!::write(fd, &kReady, 1); };
      const bool ok = write_all(fds[1], encode(run_here(plan, cost, topo, ready)));
      ::close(fds[1]);
      ::_exit(ok ? 0 : 1);  // no atexit handlers: they belong to the parent
    }
    ::close(fds[1]);
    const ChildWait w = wait_ready(fds[0]);
    if (w == ChildWait::stuck) {
      ::kill(pid, SIGKILL);
      ::close(fds[0]);
      int status = 0;
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      if (attempt < kForkAttempts) continue;
      return core::internal_error("simulation: the simulator process did not start (" + std::to_string(attempt) +
                                  " tries)");
    }
    std::string buf;
    char chunk[1 << 16];
    for (;;) {
      ssize_t n = ::read(fds[0], chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      buf.append(chunk, static_cast<size_t>(n));
    }
    ::close(fds[0]);
    int status = 0;
    struct rusage ru {};
    while (::wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {
    }
    *rss_bytes = static_cast<int64_t>(ru.ru_maxrss) * 1024;
    if (WIFSIGNALED(status))
      return core::internal_error("simulation: the simulator process died with signal " +
                                  std::to_string(WTERMSIG(status)));
    Outcome o;
    if (w != ChildWait::ready || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || !decode(buf, o))
      return core::internal_error("simulation: the simulator process returned no result");
    return o;
  }
}

}  // namespace

core::Result<SimResult> simulate(const core::Plan& plan, const core::CostModel& cost, const SimOptions& o) {
  if (o.nodes < 1 || o.gpus_per_node < 1)
    return core::bad_input("simulate: nodes and gpus_per_node must be at least 1");
  if (cost.peak_flops <= 0 || cost.hbm_Bps <= 0 || cost.pcie_h2d_Bps <= 0 || cost.pcie_d2h_Bps <= 0 ||
      cost.pcie_host_Bps <= 0 || cost.cpu_adam_params_per_s <= 0 || cost.dram_Bps <= 0 ||
      cost.cast_Bps <= 0)
    return core::bad_input("simulate: the hardware profile needs positive GPU peak, HBM, PCIe and CPU memory figures");
  TopologyShape shape;
  shape.nodes = o.nodes;
  shape.gpus_per_node = o.gpus_per_node;
  shape.local_ranks = std::max<int64_t>(1, std::min(o.gpus_per_node, plan.ranks));
  SimResult r;
  r.cost = cost;
  r.topology = make_topology(cost, shape);

  // Validate in this process so plan errors come back as values even when isolated.
  {
    Executor check(plan, cost, r.topology);
    ZS_TRY(check.init());
  }
  Outcome out;
  if (o.isolate) {
    auto x = run_isolated(plan, cost, r.topology, &r.peak_rss_bytes);
    if (!x) return x.error();
    out = std::move(*x);
  } else {
    out = run_here(plan, cost, r.topology);
    struct rusage ru {};
    ::getrusage(RUSAGE_SELF, &ru);
    r.peak_rss_bytes = static_cast<int64_t>(ru.ru_maxrss) * 1024;
  }
  if (!out.ok) return core::internal_error(out.message);

  core::Trace& t = r.trace;
  t.source = "simulate";
  t.schedule = core::to_string(plan.schedule);
  t.step_time_s = out.end_s;
  t.events = std::move(out.events);
  t.memory = std::move(out.memory);
  for (const auto& m : t.memory)
    for (size_t k = 0; k < 3; ++k) t.peak_bytes[k] = std::max(t.peak_bytes[k], m.bytes[k]);
  for (size_t k = 0; k < 3; ++k) t.overhead_bytes[k] = std::min(plan.overhead_bytes[k], t.peak_bytes[k]);
  t.provenance.versions.push_back({"simgrid", simgrid_version()});
  r.activities = out.activities;
  r.wall_s = out.wall_s;
  return r;
}

}  // namespace zs::sim
