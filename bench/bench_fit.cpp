// `zerosim fit` latency for the 100B model, process start included (goal < 20 ms a call).
// The machine's own limit in the same run: starting /bin/true, and the in-process memory model alone.
//   build/bin/bench_fit [runs]          (finds zerosim next to itself)
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "core/hardware.h"
#include "core/memory.h"
#include "core/model.h"
#include "core/strategy.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

// Runs argv with stdout/stderr to /dev/null; returns seconds, or -1 if it failed to start or exited > 1.
double run_once(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  auto t0 = Clock::now();
  pid_t pid;
  if (posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ) != 0) return -1;
  int status = 0;
  waitpid(pid, &status, 0);
  auto t1 = Clock::now();
  posix_spawn_file_actions_destroy(&fa);
  if (!WIFEXITED(status) || WEXITSTATUS(status) > 1) return -1;
  return std::chrono::duration<double>(t1 - t0).count();
}

struct Stats {
  double mean, p50, p90;
};
Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  return {sum / v.size(), v[v.size() / 2], v[v.size() * 9 / 10]};
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::max(5, std::atoi(argv[1])) : 50;
  namespace fs = std::filesystem;
  const std::string zerosim = (fs::read_symlink("/proc/self/exe").parent_path() / "zerosim").string();
  const std::vector<std::string> fit = {zerosim, "fit", "--model", "gpt-100b", "--hardware", "dgx2", "--gpus-per-node",
                                        "1", "--ds-config", "zero3-offload-nvme", "--json"};
  const std::vector<std::string> truth = {"/bin/true"};

  std::vector<double> t_fit, t_true;
  for (int i = 0; i < 3; ++i) run_once(fit);  // warm the page cache
  for (int i = 0; i < runs; ++i) {
    double a = run_once(fit), b = run_once(truth);
    if (a < 0 || b < 0) {
      std::fprintf(stderr, "bench_fit: a run failed to start or errored (%s)\n", zerosim.c_str());
      return 2;
    }
    t_fit.push_back(a);
    t_true.push_back(b);
  }
  // In-process: the memory model and fixes alone, without process start and file parsing.
  auto m = zs::core::load_model("gpt-100b");
  auto h = zs::core::load_hardware("dgx2");
  zs::core::RunSettings run;
  run.gpus_per_node = 1;
  run.seq_len = zs::core::default_seq_len(*m);
  run.hidden = m->hidden;
  auto s = zs::core::load_strategy("zero3-offload-nvme", run);
  if (!m || !h || !s) return 2;
  std::vector<double> t_model;
  for (int i = 0; i < runs; ++i) {
    auto t0 = Clock::now();
    auto r = zs::core::memory_model(*m, *h, *s);
    auto fixes = zs::core::suggest_fixes(*m, *h, *s);
    auto t1 = Clock::now();
    if (r.tier(zs::core::Tier::gpu).required_bytes <= 0 || fixes.size() > 1000) return 3;
    t_model.push_back(std::chrono::duration<double>(t1 - t0).count());
  }
  Stats f = stats(t_fit), t = stats(t_true), mm = stats(t_model);
  std::printf("bench_fit: %d runs of `zerosim fit --model gpt-100b --hardware dgx2 --gpus-per-node 1 "
              "--ds-config zero3-offload-nvme --json`\n", runs);
  std::printf("  zerosim fit (process)   mean %7.2f ms  p50 %7.2f ms  p90 %7.2f ms   goal < 20 ms: %s\n", f.mean * 1e3,
              f.p50 * 1e3, f.p90 * 1e3, f.p50 < 0.020 ? "met" : "NOT met");
  std::printf("  /bin/true (limit)       mean %7.2f ms  p50 %7.2f ms  p90 %7.2f ms\n", t.mean * 1e3, t.p50 * 1e3,
              t.p90 * 1e3);
  std::printf("  memory model + fixes    mean %7.3f ms  p50 %7.3f ms (in process)\n", mm.mean * 1e3, mm.p50 * 1e3);
  std::printf("  ratio fit / process-start limit (p50): %.1fx\n", f.p50 / t.p50);
  return 0;
}
