// The CUDA device (allocation and capacity, streams, events, copies, host work and its errors) and the NCCL
// communicator on one rank. The first test is the visible one: on a machine without a GPU it reports why the
// [.gpu] tests cannot run (CTest shows it as skipped); with a GPU it checks the device is found.
#include <atomic>
#include <chrono>
#include <cstring>

#include "exec/cuda/cuda_device.h"
#include "exec/cuda/gemm.h"
#include "exec/cuda/nccl_communicator.h"
#include "tests/exec/cuda_test_util.h"

using namespace zs::exec;
using namespace zs::exec::test;

TEST_CASE("CUDA tests skip with the reason when no GPU is present", "[cuda]") {
  const CudaAvailability a = cuda_available();
  auto dev = make_cuda_device({});
  if (!a.usable) {
    WARN("skipping the GPU tests: " << a.reason);
    CHECK(!a.reason.empty());
    REQUIRE(!dev.ok());  // the device refuses to start, and says why
    CHECK(dev.error().message.find(a.reason) != std::string::npos);
    // cuBLASLt and NCCL set-up fail as values naming the CUDA or cuBLAS error, not as crashes.
    auto gemm = CublasLtGemm::create();
    REQUIRE(!gemm.ok());
    INFO(gemm.error().message);
    CHECK((gemm.error().message.rfind("CUDA error", 0) == 0 || gemm.error().message.rfind("cuBLASLt error", 0) == 0));
    auto comm = make_nccl_communicator({}, NcclUniqueIdBytes{});
    REQUIRE(!comm.ok());
    INFO(comm.error().message);
    CHECK(comm.error().message.rfind("CUDA error", 0) == 0);
    CHECK(comm.error().message.find("cudaSetDevice") != std::string::npos);
    return;
  }
  CHECK(a.device_count >= 1);
  REQUIRE(dev.ok());
  CHECK((*dev)->info().kind == "cuda");
  CHECK((*dev)->info().memory_bytes > 0);
  SUCCEED("GPU present: run test_exec_cuda \"[.gpu]\" for the kernel, device and NCCL tests");
}

TEST_CASE("cuda device accounts allocations against its capacity", "[.gpu][cuda][device]") {
  require_gpu();
  auto dev = make_cuda_device({.memory_bytes = 64LL << 20});
  REQUIRE(dev.ok());
  Device& d = **dev;
  CHECK(d.memory().capacity() == 64LL << 20);
  {
    auto a = d.allocate(40LL << 20, "weights");
    REQUIRE(a.ok());
    CHECK(d.memory().in_use() == 40LL << 20);
    auto b = d.allocate(30LL << 20, "activations");
    REQUIRE(!b.ok());
    CHECK(b.error().message.find("out of memory allocating") != std::string::npos);
    CHECK(b.error().message.find("activations") != std::string::npos);
    CHECK(d.memory().in_use() == 40LL << 20);  // the failed allocation changed nothing
  }
  CHECK(d.memory().in_use() == 0);
  CHECK(d.memory().peak() == 40LL << 20);
  // A profile bigger than the GPU is clamped to what is free, with a warning.
  auto big = make_cuda_device({.memory_bytes = 1LL << 50});
  REQUIRE(big.ok());
  CHECK((*big)->memory().capacity() < (1LL << 50));
  REQUIRE((*big)->warnings().size() == 1);
  CHECK((*big)->warnings()[0].find("clamped") != std::string::npos);
}

TEST_CASE("cuda device copies in stream order across streams with events", "[.gpu][cuda][device]") {
  require_gpu();
  auto dev = make_cuda_device({});
  REQUIRE(dev.ok());
  Device& d = **dev;
  MemoryAccount host("cpu", 1LL << 30);
  const int64_t n = 1 << 20;
  auto src = d.allocate_host(n * 4, true, "src", host);
  auto dst = d.allocate_host(n * 4, true, "dst", host);
  auto buf = d.allocate(n * 4, "buf");
  REQUIRE((src.ok() && dst.ok() && buf.ok()));
  CHECK(host.in_use() == 2 * n * 4);
  for (int64_t i = 0; i < n; ++i) src->as<float>()[i] = static_cast<float>(i) * 0.5f;
  Stream* up = *d.stream("h2d");
  Stream* down = *d.stream("d2h");
  CHECK(up->native_handle() != nullptr);
  CHECK(*d.stream("h2d") == up);  // one stream per name
  CHECK(up->native_handle() != down->native_handle());
  Event e1 = d.copy(*up, {}, buf->data(), src->data(), n * 4, CopyKind::h2d);
  Event e2 = d.copy(*down, {e1}, dst->data(), buf->data(), n * 4, CopyKind::d2h);
  std::atomic<int> ran{0};
  Event e3 = d.enqueue(*down, {e2}, [&] {
    ran = dst->as<float>()[n - 1] == static_cast<float>(n - 1) * 0.5f ? 1 : 2;  // host work sees the copy
    return Status{};
  });
  REQUIRE(e3.wait().ok());
  CHECK(e1.done());
  CHECK(ran.load() == 1);
  REQUIRE(d.synchronize().ok());
  CHECK(std::memcmp(src->data(), dst->data(), n * 4) == 0);
}

TEST_CASE("cuda device host work errors surface in events and synchronize", "[.gpu][cuda][device]") {
  require_gpu();
  auto dev = make_cuda_device({});
  REQUIRE(dev.ok());
  Device& d = **dev;
  Stream* a = *d.stream("a");
  Stream* b = *d.stream("b");
  Event bad = d.enqueue(*a, {}, [] { return Status(zs::core::io_error("swap-in of h.3 failed")); });
  std::atomic<bool> dependent_ran{false};
  Event skipped = d.enqueue(*b, {bad}, [&] {
    dependent_ran = true;
    return Status{};
  });
  Status s1 = skipped.wait();
  REQUIRE(!s1.ok());
  CHECK(s1.message() == "swap-in of h.3 failed");  // the dependency's error travels on
  CHECK(!dependent_ran.load());
  Status s = d.synchronize();
  REQUIRE(!s.ok());
  CHECK(s.message() == "swap-in of h.3 failed");
  CHECK(d.synchronize().ok());  // reported once
  Event ok = d.enqueue(*a, {}, [] { return Status{}; });
  CHECK(ok.wait().ok());
}

TEST_CASE("NCCL collectives on one rank follow the in-place conventions", "[.gpu][cuda][nccl]") {
  require_gpu();
  auto comm = make_nccl_communicator({.rank = 0, .world = 1, .comm = {.timeout_s = 30}},
                                     [](NcclUniqueIdBytes&) { return Status{}; });  // one rank: nothing to send
  INFO((comm ? std::string("ok") : comm.error().message));
  REQUIRE(comm.ok());
  Communicator& c = **comm;
  CHECK(c.name() == "nccl");
  CHECK(c.world() == 1);
  const int64_t n = 1000;
  std::vector<float> h(n);
  for (int64_t i = 0; i < n; ++i) h[i] = static_cast<float>(i) - 300.0f;
  DevBuf<float> buf(h), other(n);
  REQUIRE(c.all_gather(buf.get(), buf.get(), n, DType::fp32, {.op_name = "gather (in place)"}).ok());
  CHECK(buf.download() == h);
  REQUIRE(c.reduce_scatter(other.get(), buf.get(), n, DType::fp32, ReduceOp::sum, {.op_name = "rs"}).ok());
  CHECK(other.download() == h);
  REQUIRE(c.all_reduce(buf.get(), n, DType::fp32, ReduceOp::avg, {.op_name = "ar avg"}).ok());
  CHECK(buf.download() == h);  // the average over one rank divides by 1
  double partials[3] = {1.5, -2.0, 1e300};
  REQUIRE(c.all_reduce_f64(partials, 3, ReduceOp::sum, {.op_name = "norm"}).ok());  // host doubles, staged
  CHECK(partials[0] == 1.5);
  CHECK(partials[2] == 1e300);
  REQUIRE(c.broadcast(buf.get(), n * 4, 0, {.op_name = "bcast"}).ok());
  CHECK(buf.download() == h);
  CHECK(c.barrier({.op_name = "end"}).ok());
  // A bad root is NCCL's error, reported with the op and rank, not a crash.
  Status bad = c.broadcast(buf.get(), n * 4, 3, {.op_name = "bad root"});
  REQUIRE(!bad.ok());
  CHECK(bad.message().find("broadcast 'bad root' on rank 0 of 1") != std::string::npos);
}

// Rank 1 never joins: rank 0's init must fail at the deadline with the op and rank named, not hang. Its own tag:
// gpu-check.sh runs it separately under a timeout of its own.
TEST_CASE("NCCL init with a missing rank fails at the deadline naming the rank", "[.gpu][cuda][nccl-timeout]") {
  require_gpu();
  auto id = nccl_unique_id();
  REQUIRE(id.ok());
  const auto t0 = std::chrono::steady_clock::now();
  auto comm = make_nccl_communicator({.rank = 0, .world = 2, .comm = {.timeout_s = 3}}, *id);
  const double waited_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(!comm.ok());
  INFO(comm.error().message);
  CHECK(comm.error().message.find("on rank 0 of 2") != std::string::npos);
  CHECK(comm.error().message.find("not complete after 3 s") != std::string::npos);
  CHECK(waited_s >= 2.5);
  CHECK(waited_s < 30);
}
