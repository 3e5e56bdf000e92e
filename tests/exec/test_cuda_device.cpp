// The CUDA device (allocation and capacity, the fenced block caches, streams with their worker threads, events
// across streams and between host and device work, errors, launch timing) and the NCCL communicator on one rank. The
// first test is the visible one: on a machine without a GPU it reports why the [.gpu] tests cannot run (CTest shows
// it as skipped); with a GPU it checks the device is found.
// Ordering tests make the work they wait for slow (a chain of cudaMemsetAsync ending in the value checked) or hold
// it behind a host task the test releases, so a missing wait would read stale bytes rather than pass by luck.
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "exec/cuda/cuda_check.h"
#include "exec/cuda/cuda_device.h"
#include "exec/cuda/gemm.h"
#include "exec/cuda/nccl_communicator.h"
#include "tests/exec/cuda_test_util.h"

using namespace zs::exec;
using namespace zs::exec::test;

namespace {

cudaStream_t cs(void* st) { return static_cast<cudaStream_t>(st); }

// `times` memsets of p with 1, 2, ... and a last one with `value`: slow device work whose result is known.
Status slow_fill(void* p, int64_t bytes, int times, uint8_t value, void* st) {
  for (int i = 0; i < times; ++i)
    if (Status s = ZS_CUDA_STATUS(cudaMemsetAsync(p, (i + 1) & 0xff, static_cast<size_t>(bytes), cs(st))); !s.ok())
      return s;
  return ZS_CUDA_STATUS(cudaMemsetAsync(p, value, static_cast<size_t>(bytes), cs(st)));
}

// How many of the buffer's bytes differ from v.
int64_t mismatches(const Buffer& b, uint8_t v) {
  const auto* p = b.as<const uint8_t>();
  int64_t bad = 0;
  for (int64_t i = 0; i < b.bytes(); ++i) bad += p[i] != v;
  return bad;
}

// A host task that blocks its stream until release(): work waiting for it cannot start before the test says so.
// Released on destruction too, so a failed REQUIRE does not leave the device's destructor waiting for it.
struct Gate {
  std::shared_ptr<std::atomic<bool>> open = std::make_shared<std::atomic<bool>>(false);
  Gate() = default;
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;
  ~Gate() { release(); }
  Event hold(Device& d, Stream& s) {
    return d.enqueue(s, {}, [open = open] {
      while (!open->load()) std::this_thread::sleep_for(std::chrono::microseconds(100));
      return Status{};
    });
  }
  void release() { *open = true; }
};

}  // namespace

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

TEST_CASE("cuda device orders device work across streams with events", "[.gpu][cuda][device]") {
  require_gpu();
  auto dev = make_cuda_device({});
  REQUIRE(dev.ok());
  Device& d = **dev;
  MemoryAccount host("cpu", 1LL << 30);
  const int64_t n = 256LL << 20;
  auto a_buf = d.allocate(n, "a");
  auto b_buf = d.allocate(n, "b");
  auto out = d.allocate_host(n, true, "out", host);
  REQUIRE((a_buf.ok() && b_buf.ok() && out.ok()));
  std::memset(out->data(), 0, n);
  cuda_ok(cudaMemset(b_buf->data(), 0, n));
  cuda_ok(cudaDeviceSynchronize());
  Stream* a = *d.stream("a");
  Stream* b = *d.stream("b");
  CHECK(*d.stream("a") == a);  // one stream per name
  CHECK(a->native_handle() != b->native_handle());
  Event ea = d.launch(*a, {}, [&](void* st) {
    if (Status s = slow_fill(a_buf->data(), n, 20, 0x5A, st); !s.ok()) return s;
    return ZS_CUDA_STATUS(cudaMemcpyAsync(b_buf->data(), a_buf->data(), n, cudaMemcpyDefault, cs(st)));
  });
  Event eb = d.launch(*b, {ea}, [&](void* st) {
    return ZS_CUDA_STATUS(cudaMemcpyAsync(out->data(), b_buf->data(), n, cudaMemcpyDefault, cs(st)));
  });
  REQUIRE(eb.wait().ok());  // the GPU part included: the host may read the result now
  CHECK(ea.done());
  CHECK(mismatches(*out, 0x5A) == 0);
  REQUIRE(d.synchronize().ok());
}

TEST_CASE("cuda device host work waits for device work of other streams and of its own", "[.gpu][cuda][device]") {
  require_gpu();
  auto dev = make_cuda_device({});
  REQUIRE(dev.ok());
  Device& d = **dev;
  MemoryAccount host("cpu", 1LL << 30);
  const int64_t n = 64LL << 20;
  auto x = d.allocate(n, "x");
  auto y = d.allocate(n, "y");
  auto hx = d.allocate_host(n, true, "hx", host);
  auto hy = d.allocate_host(n, true, "hy", host);
  REQUIRE((x.ok() && y.ok() && hx.ok() && hy.ok()));
  std::memset(hx->data(), 0, n);
  std::memset(hy->data(), 0, n);
  Stream* other = *d.stream("other");
  Stream* own = *d.stream("own");
  Event ex = d.launch(*other, {}, [&](void* st) {
    if (Status s = slow_fill(x->data(), n, 40, 0x11, st); !s.ok()) return s;
    return ZS_CUDA_STATUS(cudaMemcpyAsync(hx->data(), x->data(), n, cudaMemcpyDefault, cs(st)));
  });
  (void)d.launch(*own, {}, [&](void* st) {
    if (Status s = slow_fill(y->data(), n, 40, 0x22, st); !s.ok()) return s;
    return ZS_CUDA_STATUS(cudaMemcpyAsync(hy->data(), y->data(), n, cudaMemcpyDefault, cs(st)));
  });
  int64_t bad_x = -1, bad_y = -1;
  Event h = d.enqueue(*own, {ex}, [&] {  // waits for `ex` explicitly, for the own stream's launch by stream order
    bad_x = mismatches(*hx, 0x11);
    bad_y = mismatches(*hy, 0x22);
    return Status{};
  });
  REQUIRE(h.wait().ok());
  CHECK(bad_x == 0);
  CHECK(bad_y == 0);
  REQUIRE(d.synchronize().ok());
}

TEST_CASE("cuda device work waits for host work", "[.gpu][cuda][device]") {
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
  std::memset(src->data(), 0, n * 4);
  std::memset(dst->data(), 0, n * 4);
  Stream* cpu = *d.stream("cpu");
  Stream* gpu = *d.stream("gpu");
  Event wrote = d.enqueue(*cpu, {}, [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a late writer: the copy must not run ahead
    for (int64_t i = 0; i < n; ++i) src->as<float>()[i] = static_cast<float>(i) * 0.5f;
    return Status{};
  });
  Event up = d.copy(*gpu, {wrote}, buf->data(), src->data(), n * 4, CopyKind::h2d);
  Event down = d.copy(*gpu, {up}, dst->data(), buf->data(), n * 4, CopyKind::d2h);
  REQUIRE(down.wait().ok());
  CHECK(dst->as<float>()[0] == 0.0f);
  CHECK(dst->as<float>()[n - 1] == static_cast<float>(n - 1) * 0.5f);
  CHECK(std::memcmp(src->data(), dst->data(), n * 4) == 0);
  REQUIRE(d.synchronize().ok());
}

TEST_CASE("cuda device launches with sync_waits see the waited-for device work on the host", "[.gpu][cuda][device]") {
  require_gpu();
  auto dev = make_cuda_device({});
  REQUIRE(dev.ok());
  Device& d = **dev;
  MemoryAccount host("cpu", 1LL << 20);
  const int64_t n = 64LL << 20;
  auto big = d.allocate(n, "big");
  auto flag_dev = d.allocate(4, "flag");
  auto seven = d.allocate_host(4, true, "seven", host);
  auto flag = d.allocate_host(4, true, "flag", host);
  REQUIRE((big.ok() && flag_dev.ok() && seven.ok() && flag.ok()));
  *seven->as<int32_t>() = 7;
  *flag->as<int32_t>() = 0;
  Stream* a = *d.stream("a");
  Stream* b = *d.stream("b");
  Event ea = d.launch(*a, {}, [&](void* st) {
    if (Status s = slow_fill(big->data(), n, 100, 0, st); !s.ok()) return s;  // ~ms of work before the flag
    if (Status s = ZS_CUDA_STATUS(cudaMemcpyAsync(flag_dev->data(), seven->data(), 4, cudaMemcpyDefault, cs(st)));
        !s.ok())
      return s;
    return ZS_CUDA_STATUS(cudaMemcpyAsync(flag->data(), flag_dev->data(), 4, cudaMemcpyDefault, cs(st)));
  });
  int32_t seen = -1;
  LaunchOptions o;
  o.sync_waits = true;
  Event eb = d.launch(
      *b, {ea},
      [&](void*) {
        seen = *flag->as<volatile int32_t>();  // what the launch would read on the host (a norm's partial sums)
        return Status{};
      },
      o);
  REQUIRE(eb.wait().ok());
  CHECK(seen == 7);
  REQUIRE(d.synchronize().ok());
}

TEST_CASE("cuda device launch errors reach events, dependents and synchronize once", "[.gpu][cuda][device]") {
  require_gpu();
  auto dev = make_cuda_device({});
  REQUIRE(dev.ok());
  Device& d = **dev;
  Stream* a = *d.stream("a");
  Stream* b = *d.stream("b");
  auto buf = d.allocate(1 << 20, "buf");
  REQUIRE(buf.ok());
  Event bad = d.launch(*a, {}, [&](void* st) -> Status {
    if (Status s = ZS_CUDA_STATUS(cudaMemsetAsync(buf->data(), 0, 1 << 20, cs(st))); !s.ok()) return s;
    return zs::core::io_error("gelu launch failed");
  });
  std::atomic<bool> dependent_ran{false}, host_ran{false};
  Event skipped = d.launch(*b, {bad}, [&](void*) {
    dependent_ran = true;
    return Status{};
  });
  Event skipped_host = d.enqueue(*b, {skipped}, [&] {
    host_ran = true;
    return Status{};
  });
  Status s0 = bad.wait();
  REQUIRE(!s0.ok());
  CHECK(s0.message() == "gelu launch failed");
  Status s1 = skipped.wait();
  REQUIRE(!s1.ok());
  CHECK(s1.message() == "gelu launch failed");  // the dependency's error travels on
  Status s2 = skipped_host.wait();
  REQUIRE(!s2.ok());
  CHECK(s2.message() == "gelu launch failed");
  CHECK(!dependent_ran.load());
  CHECK(!host_ran.load());
  Status s = d.synchronize();
  REQUIRE(!s.ok());
  CHECK(s.message() == "gelu launch failed");
  CHECK(d.synchronize().ok());  // reported once
  Event ok = d.launch(*b, {}, [&](void* st) { return ZS_CUDA_STATUS(cudaMemsetAsync(buf->data(), 1, 16, cs(st))); });
  CHECK(ok.wait().ok());
  CHECK(d.synchronize().ok());
}

TEST_CASE("cuda device reuses a freed block only after the work issued before the free", "[.gpu][cuda][device]") {
  require_gpu();
  auto dev = make_cuda_device({});
  REQUIRE(dev.ok());
  Device& d = **dev;
  MemoryAccount host("cpu", 1LL << 30);
  const int64_t n = 64LL << 20;
  Stream* a = *d.stream("a");
  Stream* b = *d.stream("b");
  Stream* h = *d.stream("gate");
  auto check = d.allocate_host(n, true, "check", host);
  REQUIRE(check.ok());
  Gate gate;
  Event held = gate.hold(d, *h);
  void* old_ptr = nullptr;
  {
    auto old = d.allocate(n, "old");
    REQUIRE(old.ok());
    old_ptr = old->data();
    // Issued now, run only once the gate opens: still to come when the Buffer dies below.
    (void)d.launch(*a, {held}, [p = old_ptr, n](void* st) { return slow_fill(p, n, 50, 0xEE, st); });
  }
  CHECK(d.memory().in_use() == 0);  // the accounting is given back at once; the memory waits for its fence
  auto fresh = d.allocate(n, "fresh");
  REQUIRE(fresh.ok());
  CHECK(fresh->data() != old_ptr);  // the fence has not passed: reusing the block would alias the pending writes
  Event wrote =
      d.launch(*b, {}, [&](void* st) { return ZS_CUDA_STATUS(cudaMemsetAsync(fresh->data(), 0xAB, n, cs(st))); });
  REQUIRE(wrote.wait().ok());
  gate.release();
  REQUIRE(d.synchronize().ok());
  Event read = d.copy(*b, {}, check->data(), fresh->data(), n, CopyKind::d2h);
  REQUIRE(read.wait().ok());
  CHECK(mismatches(*check, 0xAB) == 0);  // the old block's 50 writes landed elsewhere
  // After synchronize() the fence has passed: the same size gets a cached block back.
  void* fresh_ptr = fresh->data();
  fresh = Buffer();
  REQUIRE(d.synchronize().ok());
  auto again = d.allocate(n, "again");
  REQUIRE(again.ok());
  CHECK((again->data() == old_ptr || again->data() == fresh_ptr));
  CHECK(d.memory().in_use() == n);
  // A Buffer whose last owner is a launch's closure dies on the stream's worker thread, fenced the same way.
  {
    auto owned = d.allocate(n, "owned");
    REQUIRE(owned.ok());
    auto sp = std::make_shared<Buffer>(std::move(*owned));
    (void)d.launch(*a, {},
                   [sp](void* st) { return ZS_CUDA_STATUS(cudaMemsetAsync(sp->data(), 0, sp->bytes(), cs(st))); });
  }
  REQUIRE(d.synchronize().ok());
  CHECK(d.memory().in_use() == n);
}

TEST_CASE("cuda device times launches on the GPU against the host clock", "[.gpu][cuda][device]") {
  require_gpu();
  auto dev = make_cuda_device({});
  REQUIRE(dev.ok());
  Device& d = **dev;
  const int64_t n = 64LL << 20;
  auto buf = d.allocate(n, "buf");
  REQUIRE(buf.ok());
  Stream* s = *d.stream("compute");
  double s1 = -1, e1 = -1, s2 = -1, e2 = -1;
  const auto epoch = std::chrono::steady_clock::now();
  LaunchOptions o1, o2;
  o1.start_s = &s1;
  o1.end_s = &e1;
  o1.epoch = epoch;
  o2.start_s = &s2;
  o2.end_s = &e2;
  o2.epoch = epoch;
  auto fill1 = [&](void* st) { return slow_fill(buf->data(), n, 50, 1, st); };
  auto fill2 = [&](void* st) { return slow_fill(buf->data(), n, 50, 2, st); };
  (void)d.launch(*s, {}, fill1, o1);
  (void)d.launch(*s, {}, fill2, o2);
  REQUIRE(d.synchronize().ok());
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch).count();
  INFO("start1 " << s1 << " end1 " << e1 << " start2 " << s2 << " end2 " << e2 << " wall " << wall_s);
  CHECK(0 <= s1);
  CHECK(s1 < e1);  // 51 memsets of 64 MiB take a measurable time
  CHECK(e1 <= s2);
  CHECK(s2 < e2);
  CHECK(e2 - s1 < wall_s + 1e-3);
  CHECK(e2 < wall_s + 1e-3);
}

TEST_CASE("cuda device reuses pinned host blocks and accounts them", "[.gpu][cuda][device]") {
  require_gpu();
  auto dev = make_cuda_device({});
  REQUIRE(dev.ok());
  Device& d = **dev;
  MemoryAccount host("cpu", 16LL << 20);
  const int64_t n = 1 << 20;
  void* first = nullptr;
  {
    auto p = d.allocate_host(n, true, "p", host);
    REQUIRE(p.ok());
    first = p->data();
    CHECK(host.in_use() == n);
    auto q = d.allocate_host(n + 1, false, "q", host);  // pageable, freed at once
    REQUIRE(q.ok());
    CHECK(host.in_use() == 2 * n + 1);
    CHECK(host.by_name().at("q") == n + 1);
  }
  CHECK(host.in_use() == 0);
  REQUIRE(d.synchronize().ok());
  auto again = d.allocate_host(n, true, "again", host);
  REQUIRE(again.ok());
  CHECK(again->data() == first);  // the cached block: no cudaHostAlloc / cudaFreeHost during a step
  auto other = d.allocate_host(2 * n, true, "other", host);
  REQUIRE(other.ok());
  CHECK(other->data() != first);
  CHECK(host.in_use() == 3 * n);
  auto too_big = d.allocate_host(16LL << 20, true, "too big", host);
  REQUIRE(!too_big.ok());
  CHECK(too_big.error().message.find("out of memory allocating") != std::string::npos);
  CHECK(host.in_use() == 3 * n);
  // A block freed while work that uses it is still to run is not handed out again.
  Stream* h = *d.stream("gate");
  Stream* s = *d.stream("copy");
  auto dbuf = d.allocate(n, "dbuf");
  REQUIRE(dbuf.ok());
  Gate gate;
  Event held = gate.hold(d, *h);
  void* busy = again->data();
  (void)d.copy(*s, {held}, dbuf->data(), busy, n, CopyKind::h2d);
  again = Buffer();
  auto next = d.allocate_host(n, true, "next", host);
  REQUIRE(next.ok());
  CHECK(next->data() != busy);
  gate.release();
  REQUIRE(d.synchronize().ok());
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
