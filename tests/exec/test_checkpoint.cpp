// Checkpoint folders: round trip, pruning, fallback past a damaged or missing `latest`, and a child process killed
// with SIGKILL at random instants while it saves: the folder must always hold a loadable, self-consistent step.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>
#include <vector>

#include "exec/checkpoint.h"

using namespace zs::exec;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char t[] = "/tmp/zs_test_ckpt_XXXXXX";
    REQUIRE(::mkdtemp(t) != nullptr);
    path = t;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// Two tensors whose bytes are a function of the step, so a loaded checkpoint can be checked for consistency.
std::vector<CheckpointTensor> tensors_for(int64_t step, int64_t n) {
  auto fill = [step, n](uint32_t salt) {
    return [step, n, salt](void* dst) {
      auto* p = static_cast<uint32_t*>(dst);
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<uint32_t>(step * 2654435761u + salt + i * 40503u);
      return zs::core::Status{};
    };
  };
  return {{"a.weight", "fp32", n, 4 * n, fill(1)}, {"a.weight.exp_avg", "fp32", n, 4 * n, fill(2)}};
}

bool consistent(const Checkpoint& c, int64_t n) {
  const int64_t step = c.info().step;
  if (c.info().state.value("step_copy", int64_t{-1}) != step) return false;
  auto want = tensors_for(step, n);
  std::vector<uint32_t> got(static_cast<size_t>(n)), exp(static_cast<size_t>(n));
  for (auto& t : want) {
    if (!c.read(t.name, got.data(), t.bytes).ok()) return false;
    REQUIRE(t.fill(exp.data()).ok());
    if (got != exp) return false;
  }
  return true;
}

zs::core::Status save(const std::string& dir, int64_t step, int64_t n) {
  CheckpointInfo info;
  info.step = step;
  info.state["step_copy"] = step;
  return save_checkpoint(dir, info, tensors_for(step, n));
}

}  // namespace

TEST_CASE("checkpoint round trip, pruning, fallback", "[checkpoint]") {
  TempDir d;
  const int64_t n = 1000;
  for (int64_t s = 1; s <= 3; ++s) REQUIRE(save(d.path, s, n).ok());
  int folders = 0;
  for (const auto& e : fs::directory_iterator(d.path))
    if (e.path().filename().string().rfind("step-", 0) == 0) ++folders;
  CHECK(folders == 2);  // keep = 2
  auto c = open_checkpoint(d.path);
  REQUIRE(c.ok());
  CHECK(c->info().step == 3);
  CHECK(c->note().empty());
  CHECK(consistent(*c, n));
  std::vector<uint32_t> small(10);
  CHECK_FALSE(c->read("a.weight", small.data(), 40).ok());  // size mismatch is an error, not a partial read

  SECTION("a flipped byte in the newest step falls back to the previous one") {
    {
      std::fstream f(d.path + "/step-00000003/tensors.bin", std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(123);
      f.put('\x5a');
    }
    auto b = open_checkpoint(d.path);
    REQUIRE(b.ok());
    CHECK(b->info().step == 2);
    CHECK(b->note().find("checksum") != std::string::npos);
    CHECK(consistent(*b, n));
  }
  SECTION("a missing `latest` falls back to the newest intact folder") {
    fs::remove(d.path + "/latest");
    auto b = open_checkpoint(d.path);
    REQUIRE(b.ok());
    CHECK(b->info().step == 3);
  }
  SECTION("an empty folder is a clear error") {
    TempDir e;
    auto b = open_checkpoint(e.path);
    REQUIRE_FALSE(b.ok());
    CHECK(b.error().message.find("no loadable checkpoint") != std::string::npos);
  }
}

TEST_CASE("kill -9 during checkpoint saves leaves a loadable previous checkpoint", "[checkpoint]") {
  TempDir d;
  const int64_t n = 256 * 1024;  // 2 MiB per save: most of the child's time is spent inside save_checkpoint
  REQUIRE(save(d.path, 0, n).ok());
  std::mt19937 rng(12345);
  int64_t next_step = 1, mid_save = 0;
  for (int round = 0; round < 6; ++round) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      for (int64_t s = next_step;; ++s)
        if (!save(d.path, s, n).ok()) ::_exit(3);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(2000 + rng() % 40000));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    REQUIRE(WIFSIGNALED(status));
    for (const auto& e : fs::directory_iterator(d.path))
      if (e.path().filename().string().rfind(".tmp-", 0) == 0) ++mid_save;
    auto c = open_checkpoint(d.path);
    REQUIRE(c.ok());
    INFO("round " << round << ": loaded step " << c->info().step << " " << c->note());
    CHECK(c->info().step >= next_step - 1);
    CHECK(consistent(*c, n));
    next_step = c->info().step + 1;
  }
  // The kills really landed inside saves (a temp folder was left behind) at least once.
  CHECK(mid_save >= 1);
}
