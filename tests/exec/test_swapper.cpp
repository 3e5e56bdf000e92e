// The NVMe swapper on the real file system (/tmp is ext4 here: O_DIRECT + libaio), and every fault through
// FaultInjectionEnv: each must surface as an error naming the tensor and the file, never as wrong data.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "exec/checksum.h"
#include "exec/host_device.h"
#include "exec/pinned_buffer.h"
#include "exec/swapper.h"

using namespace zs::exec;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  std::string path;
  explicit TempDir(const char* tag = "swap") {
    std::string t = std::string("/tmp/zs_test_") + tag + "_XXXXXX";
    std::vector<char> buf(t.begin(), t.end());
    buf.push_back('\0');
    REQUIRE(::mkdtemp(buf.data()) != nullptr);
    path = buf.data();
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::vector<unsigned char> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<unsigned char> v(n);
  for (auto& b : v) b = static_cast<unsigned char>(rng());
  return v;
}

// Small blocks and buffers so a few hundred KiB already spans many blocks and chunks.
SwapperOptions small_options(std::vector<std::string> paths) {
  SwapperOptions o;
  o.paths = std::move(paths);
  o.aio.block_size = 64 << 10;
  o.aio.queue_depth = 4;
  o.buffer_bytes = 256 << 10;
  o.buffer_count = 3;
  return o;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

void round_trip_many(Swapper& sw, uint32_t seed) {
  const std::vector<int64_t> sizes = {
      0, 1, 7, 4095, 4096, 4097, 65536 + 3, (1 << 20) - 1, 1 << 20, 3 * (1 << 20) + 123};
  const std::vector<size_t> misalign = {0, 1, 3, 64, 4095};
  int k = 0;
  for (int64_t n : sizes) {
    for (size_t off : misalign) {
      const std::string name = "t" + std::to_string(k++) + "/weight.part";
      auto data = random_bytes(static_cast<size_t>(n) + off, seed + static_cast<uint32_t>(k));
      auto h = sw.swap_out(name, data.data() + off, n);
      REQUIRE(h.ok());
      std::vector<unsigned char> back(static_cast<size_t>(n) + 4096 + 8, 0xee);
      const size_t back_off = (off * 7 + 5) % 4096;          // a different misalignment on the way in
      auto r = sw.swap_in(name, back.data() + back_off, n);  // waits for the write first
      REQUIRE(r.ok());
      Status s = r->wait();
      INFO("size " << n << " src offset " << off << ": " << s.message());
      REQUIRE(s.ok());
      REQUIRE((n == 0 || std::memcmp(back.data() + back_off, data.data() + off, static_cast<size_t>(n)) == 0));
      REQUIRE(back[back_off + static_cast<size_t>(n)] == 0xee);  // nothing written past the end
      if (back_off > 0) REQUIRE(back[back_off - 1] == 0xee);
    }
  }
}

}  // namespace

TEST_CASE("crc32c: known vector, chaining, copy variant", "[exec][swapper]") {
  const char* s = "123456789";
  CHECK(crc32c(s, 9, 0) == 0xe3069283u);  // the CRC-32C check value
  CHECK(crc32c(s + 4, 5, crc32c(s, 4, 0)) == 0xe3069283u);
  char dst[9];
  CHECK(crc32c_copy(dst, s, 9, 0) == 0xe3069283u);
  CHECK(std::memcmp(dst, s, 9) == 0);
  auto big = random_bytes(100003, 5);
  std::vector<unsigned char> out(big.size());
  CHECK(crc32c_copy(out.data() + 0, big.data(), big.size(), 0) == crc32c(big.data(), big.size(), 0));
  // The swapper's 4-lane checksum: the copy variant agrees, copies exactly, and any single flipped bit shows.
  std::fill(out.begin(), out.end(), 0);
  const uint32_t lanes = lane_checksum(big.data(), big.size());
  CHECK(lane_checksum_copy(out.data(), big.data(), big.size()) == lanes);
  CHECK(out == big);
  for (size_t pos : {size_t{0}, size_t{7}, size_t{8}, size_t{31}, size_t{32}, size_t{50000}, big.size() - 1}) {
    big[pos] ^= 0x10;
    CHECK(lane_checksum(big.data(), big.size()) != lanes);
    big[pos] ^= 0x10;
  }
  CHECK(lane_checksum(big.data(), 5) == lane_checksum(out.data(), 5));
}

TEST_CASE("swap_out → swap_in round trips are bit-exact at many sizes and alignments", "[exec][swapper]") {
  TempDir d;
  SECTION("one path, defaults of the aio knobs") {
    auto sw = Swapper::create(small_options({d.path}));
    REQUIRE(sw.ok());
    CHECK((*sw)->warnings().empty());
    round_trip_many(**sw, 1);
  }
  SECTION("intra_op_parallelism 3, single_submit, sequential events") {
    auto o = small_options({d.path});
    o.aio.intra_op_parallelism = 3;
    o.aio.single_submit = true;
    o.aio.overlap_events = false;
    auto sw = Swapper::create(o);
    REQUIRE(sw.ok());
    round_trip_many(**sw, 2);
  }
  SECTION("striped over three paths") {
    TempDir d2("b"), d3("c");
    auto sw = Swapper::create(small_options({d.path, d2.path + "/", d3.path}));
    REQUIRE(sw.ok());
    round_trip_many(**sw, 3);
    // A 3 MiB tensor uses all three paths; stripe unit 64 KiB → 49 units: 17, 16, 16 of them.
    const int64_t n = 3 * (1 << 20) + 123;
    auto data = random_bytes(static_cast<size_t>(n), 9);
    REQUIRE((*sw)->swap_out("striped", data.data(), n)->wait().ok());
    auto files = (*sw)->files_of("striped");
    REQUIRE(files.size() == 3);
    CHECK(fs::file_size(files[0]) == 17 * 65536 - (65536 - 4096));  // last unit is 4 KiB (padded 123 B)
    CHECK(fs::file_size(files[1]) == 16 * 65536);
    CHECK(fs::file_size(files[2]) == 16 * 65536);
    // Swapping out a smaller version removes the stripe it no longer uses.
    REQUIRE((*sw)->swap_out("striped", data.data(), 70000)->wait().ok());
    CHECK((*sw)->files_of("striped").size() == 2);
    CHECK(!fs::exists(files[2]));
    std::vector<unsigned char> back(70000);
    REQUIRE((*sw)->swap_in("striped", back.data(), 70000)->wait().ok());
    CHECK(std::memcmp(back.data(), data.data(), 70000) == 0);
  }
  SECTION("checksums off, memory not locked, buffered I/O") {
    auto o = small_options({d.path});
    o.checksums = false;
    o.lock_memory = false;
    o.direct = false;
    auto sw = Swapper::create(o);
    REQUIRE(sw.ok());
    round_trip_many(**sw, 4);
  }
}

TEST_CASE("zero-copy: borrowed aligned sources and aligned destinations", "[exec][swapper]") {
  TempDir d;
  FaultInjectionEnv env;
  auto sw = Swapper::create(small_options({d.path}), &env);
  REQUIRE(sw.ok());
  const size_t cap = 2 << 20;
  auto* src = static_cast<unsigned char*>(std::aligned_alloc(4096, cap + 4096));  // + room for src + 1
  auto* dst = static_cast<unsigned char*>(std::aligned_alloc(4096, cap + 4096));
  auto rnd = random_bytes(cap, 31);
  std::memcpy(src, rnd.data(), cap);
  int64_t k = 0;
  for (int64_t n :
       {int64_t{4096}, int64_t{256 << 10}, int64_t{(1 << 20) + 4096}, int64_t{(1 << 20) + 5}, int64_t{2 << 20}}) {
    const std::string name = "z" + std::to_string(k++);
    const int64_t before = (*sw)->stats().zero_copy_chunks;
    REQUIRE((*sw)->swap_out(name, src, n, SourceUse::borrow)->wait().ok());
    std::memset(dst, 0xcd, cap + 4096);
    REQUIRE((*sw)->swap_in(name, dst, n)->wait().ok());
    INFO("size " << n);
    CHECK(std::memcmp(dst, src, static_cast<size_t>(n)) == 0);
    CHECK(dst[n] == 0xcd);  // the ragged tail went through the pool, nothing written past the end
    CHECK((*sw)->stats().zero_copy_chunks > before);
    // A misaligned borrowed source falls back to copying and still round-trips.
    REQUIRE((*sw)->swap_out(name, src + 1, n, SourceUse::borrow)->wait().ok());
    REQUIRE((*sw)->swap_in(name, dst + 4096, n)->wait().ok());
    CHECK(std::memcmp(dst + 4096, src + 1, static_cast<size_t>(n)) == 0);
  }
  // Corruption is caught on an in-place read too.
  REQUIRE((*sw)->swap_out("zc", src, 1 << 20, SourceUse::borrow)->wait().ok());
  env.add({Fault::corrupt_read, "zc", 2, 1});
  const std::string msg = (*sw)->swap_in("zc", dst, 1 << 20)->wait().message();
  CHECK(contains(msg, "checksum mismatch"));
  CHECK(contains(msg, "zc.swp"));
  CHECK((*sw)->stats().buffers_in_use == 0);
  std::free(src);
  std::free(dst);
}

TEST_CASE("many concurrent tensors and a bounded pool: back-pressure, no loss", "[exec][swapper]") {
  TempDir d;
  auto o = small_options({d.path});
  o.buffer_count = 2;
  auto sw = Swapper::create(o);
  REQUIRE(sw.ok());
  const int T = 12;
  const int64_t n = 4 * (256 << 10) + 777;  // 5 chunks each
  std::vector<std::vector<unsigned char>> data;
  std::vector<SwapHandle> handles;
  for (int i = 0; i < T; ++i) {
    data.push_back(random_bytes(static_cast<size_t>(n), 100u + static_cast<uint32_t>(i)));
    auto h = (*sw)->swap_out("layer" + std::to_string(i), data.back().data(), n);
    REQUIRE(h.ok());
    handles.push_back(*h);
  }
  REQUIRE((*sw)->wait_all().ok());
  for (auto& h : handles) CHECK(h.ready());
  auto st = (*sw)->stats();
  CHECK(st.peak_buffers_in_use <= 2);
  CHECK(st.pool_waits > 0);  // callers blocked instead of allocating more
  CHECK(st.buffers_in_use == 0);
  CHECK(st.bytes_written == T * (n + 4096 - n % 4096));
  std::vector<std::vector<unsigned char>> back(T, std::vector<unsigned char>(static_cast<size_t>(n)));
  handles.clear();
  for (int i = 0; i < T; ++i) {
    auto h = (*sw)->swap_in("layer" + std::to_string(i), back[static_cast<size_t>(i)].data(), n);
    REQUIRE(h.ok());
    handles.push_back(*h);
  }
  for (int i = T - 1; i >= 0; --i) REQUIRE(handles[static_cast<size_t>(i)].wait().ok());
  for (int i = 0; i < T; ++i) REQUIRE(back[static_cast<size_t>(i)] == data[static_cast<size_t>(i)]);
  CHECK((*sw)->stats().peak_buffers_in_use <= 2);
}

TEST_CASE("bad paths fail at create with the path named", "[exec][swapper]") {
  TempDir d;
  SECTION("missing") {
    auto sw = Swapper::create(small_options({d.path + "/does/not/exist"}));
    REQUIRE(!sw.ok());
    CHECK(contains(sw.error().message, d.path + "/does/not/exist"));
    CHECK(contains(sw.error().message, "No such file or directory"));
  }
  SECTION("a file, not a directory") {
    const std::string f = d.path + "/plain";
    {
      std::FILE* fp = std::fopen(f.c_str(), "w");
      std::fclose(fp);
    }
    auto sw = Swapper::create(small_options({f}));
    REQUIRE(!sw.ok());
    CHECK(contains(sw.error().message, "not a directory"));
  }
  SECTION("unwritable (injected EACCES: the tests run as root, which ignores mode bits)") {
    FaultInjectionEnv env;
    env.add({Fault::open_denied, d.path, 0, -1});
    auto sw = Swapper::create(small_options({d.path}), &env);
    REQUIRE(!sw.ok());
    CHECK(contains(sw.error().message, d.path));
    CHECK(contains(sw.error().message, "Permission denied"));
  }
  SECTION("bad aio knobs") {
    auto o = small_options({d.path});
    o.aio.block_size = 1000;
    auto sw = Swapper::create(o);
    REQUIRE(!sw.ok());
    CHECK(contains(sw.error().message, "aio.block_size 1000"));
  }
}

TEST_CASE("zero-copy reads into destinations aligned as the file system's O_DIRECT needs", "[exec][swapper]") {
  TempDir d;
  // The real env: statx's alignment is a power of two up to a page (1 without O_DIRECT).
  auto caps = default_io_env()->probe_dir(d.path);
  REQUIRE(caps.ok());
  const int64_t a = caps->memory_alignment;
  CHECK(a >= 1);
  CHECK(a <= 4096);
  CHECK((a & (a - 1)) == 0);
  if (!caps->direct) CHECK(a == 1);
  // A gradient run's place in its group's buffer: 1 KiB past a page. Zero-copy where the file system allows
  // 512-byte alignment, through the pool where it asks for a page; the bytes arrive either way.
  const int64_t n = (1 << 20) + 4096 * 3;  // whole chunks and pages, no ragged tail
  auto* src = static_cast<unsigned char*>(std::aligned_alloc(4096, static_cast<size_t>(n)));
  auto* dst = static_cast<unsigned char*>(std::aligned_alloc(4096, static_cast<size_t>(n) + 8192));
  auto rnd = random_bytes(static_cast<size_t>(n), 77);
  std::memcpy(src, rnd.data(), static_cast<size_t>(n));
  for (int64_t align : {int64_t{512}, int64_t{4096}}) {
    FaultInjectionEnv env;
    env.set_memory_alignment(align);
    auto sw = Swapper::create(small_options({d.path}), &env);
    REQUIRE(sw.ok());
    REQUIRE((*sw)->swap_out("run", src, n, SourceUse::borrow)->wait().ok());
    const int64_t before = (*sw)->stats().zero_copy_chunks;
    std::memset(dst, 0xcd, static_cast<size_t>(n) + 8192);
    REQUIRE((*sw)->swap_in("run", dst + 1024, n)->wait().ok());
    INFO("alignment " << align);
    CHECK(std::memcmp(dst + 1024, src, static_cast<size_t>(n)) == 0);
    CHECK(dst[1023] == 0xcd);
    CHECK(dst[1024 + n] == 0xcd);
    // Without O_DIRECT (tmpfs before Linux 6.6) any alignment is read in place.
    const int64_t all = (n + (*sw)->options().buffer_bytes - 1) / (*sw)->options().buffer_bytes;
    CHECK((*sw)->stats().zero_copy_chunks - before == (align == 4096 && caps->direct ? 0 : all));
  }
  std::free(src);
  std::free(dst);
}

TEST_CASE("no O_DIRECT (tmpfs before Linux 6.6): buffered I/O with a warning", "[exec][swapper]") {
  TempDir d;
  FaultInjectionEnv env;
  env.add({Fault::no_direct, d.path, 0, -1});
  auto sw = Swapper::create(small_options({d.path}), &env);
  REQUIRE(sw.ok());
  REQUIRE((*sw)->warnings().size() == 1);
  CHECK(contains((*sw)->warnings()[0], "does not support O_DIRECT"));
  round_trip_many(**sw, 7);
}

namespace {

struct FaultCase {
  Fault fault;
  bool on_write;      // fault hits swap_out (else swap_in)
  const char* words;  // what the message must say
};

}  // namespace

TEST_CASE("every injected fault gives a clear error naming tensor and file", "[exec][swapper][faults]") {
  const std::vector<FaultCase> cases = {
      {Fault::open_missing, false, "No such file or directory"},
      {Fault::open_denied, true, "Permission denied"},
      {Fault::allocate_enospc, true, "No space left on device"},
      {Fault::write_enospc, true, "No space left on device"},
      {Fault::write_eio, true, "Input/output error"},
      {Fault::short_write, true, "short write"},
      {Fault::read_eio, false, "Input/output error"},
      {Fault::short_read, false, "short read"},
      {Fault::corrupt_read, false, "checksum mismatch"},
  };
  const int64_t n = 700000;  // 3 chunks of 256 KiB
  const auto data = random_bytes(static_cast<size_t>(n), 42);
  for (const auto& fc : cases) {
    DYNAMIC_SECTION(to_string(fc.fault)) {
      TempDir d;
      FaultInjectionEnv env;
      auto sw = Swapper::create(small_options({d.path}), &env);
      REQUIRE(sw.ok());
      const std::string name = "blocks.7.mlp.exp_avg";
      const std::string file = d.path + "/" + name + ".swp";
      // Fire on the second matching operation, so the fault lands mid-tensor (open_missing: the second open
      // is the read's; open_denied and allocate_enospc: the first write-open / fallocate).
      const bool first = fc.fault == Fault::open_denied || fc.fault == Fault::allocate_enospc;
      env.add({fc.fault, name, first ? 0 : 1, 1});
      std::string msg;
      if (fc.on_write) {
        auto h = (*sw)->swap_out(name, data.data(), n);
        msg = h.ok() ? h->wait().message() : h.error().message;
      } else {
        REQUIRE((*sw)->swap_out(name, data.data(), n)->wait().ok());
        std::vector<unsigned char> back(static_cast<size_t>(n));
        auto h = (*sw)->swap_in(name, back.data(), n);
        msg = h.ok() ? h->wait().message() : h.error().message;
      }
      CHECK(env.fired(fc.fault) == 1);
      INFO("message: " << msg);
      CHECK(contains(msg, "'" + name + "'"));
      CHECK(contains(msg, file));
      CHECK(contains(msg, fc.words));
      CHECK((*sw)->stats().buffers_in_use == 0);  // nothing leaked on the error path
      if (fc.on_write) {
        // The failed write is remembered: reading it back is refused, not served stale or half-written.
        std::vector<unsigned char> back(static_cast<size_t>(n));
        auto r = (*sw)->swap_in(name, back.data(), n);
        REQUIRE(!r.ok());
        CHECK(contains(r.error().message, "no valid copy on disk"));
        // A retry without the fault succeeds and round-trips.
        REQUIRE((*sw)->swap_out(name, data.data(), n)->wait().ok());
        REQUIRE((*sw)->swap_in(name, back.data(), n)->wait().ok());
        CHECK(back == data);
      } else {
        // The file itself is fine: a retry reads it correctly.
        std::vector<unsigned char> back(static_cast<size_t>(n));
        REQUIRE((*sw)->swap_in(name, back.data(), n)->wait().ok());
        CHECK(back == data);
      }
    }
  }
}

TEST_CASE("files changed behind our back are detected", "[exec][swapper][faults]") {
  TempDir d;
  auto sw = Swapper::create(small_options({d.path}));
  REQUIRE(sw.ok());
  const int64_t n = 600000;
  auto data = random_bytes(static_cast<size_t>(n), 77);
  const std::string name = "w";
  REQUIRE((*sw)->swap_out(name, data.data(), n)->wait().ok());
  const std::string file = (*sw)->files_of(name).at(0);
  std::vector<unsigned char> back(static_cast<size_t>(n));

  SECTION("a byte overwritten") {
    int fd = ::open(file.c_str(), O_WRONLY);
    REQUIRE(fd >= 0);
    const unsigned char x = data[300000] ^ 1;
    REQUIRE(::pwrite(fd, &x, 1, 300000) == 1);
    ::close(fd);
    auto h = (*sw)->swap_in(name, back.data(), n);
    REQUIRE(h.ok());
    const std::string msg = h->wait().message();
    INFO(msg);
    CHECK(contains(msg, "checksum mismatch in bytes [262144, 524288)"));
    CHECK(contains(msg, file));
    CHECK(contains(msg, "'w'"));
  }
  SECTION("truncated") {
    REQUIRE(::truncate(file.c_str(), 8192) == 0);
    auto h = (*sw)->swap_in(name, back.data(), n);
    REQUIRE(!h.ok());
    CHECK(contains(h.error().message, file + " is 8192 bytes, expected 602112"));
    CHECK(contains(h.error().message, "truncated"));
  }
  SECTION("deleted") {
    fs::remove(file);
    auto h = (*sw)->swap_in(name, back.data(), n);
    REQUIRE(!h.ok());
    CHECK(contains(h.error().message, file));
    CHECK(contains(h.error().message, "No such file or directory"));
  }
  SECTION("wrong size asked") {
    auto h = (*sw)->swap_in(name, back.data(), n - 1);
    REQUIRE(!h.ok());
    CHECK(contains(h.error().message, "asked for 599999 bytes, it has 600000"));
  }
  SECTION("unknown tensor") {
    auto h = (*sw)->swap_in("nope", back.data(), n);
    REQUIRE(!h.ok());
    CHECK(contains(h.error().message, "'nope'"));
  }
}

TEST_CASE("files are removed with the swapper unless kept", "[exec][swapper]") {
  TempDir d;
  std::string file;
  {
    auto sw = Swapper::create(small_options({d.path}));
    REQUIRE(sw.ok());
    auto data = random_bytes(5000, 1);
    REQUIRE((*sw)->swap_out("x y", data.data(), 5000)->wait().ok());
    file = (*sw)->files_of("x y").at(0);
    CHECK(file == d.path + "/x%20y.swp");
    CHECK(fs::file_size(file) == 8192);
  }
  CHECK(!fs::exists(file));
}

TEST_CASE("an io queue's reap(0) polls: it returns what has completed and never blocks", "[exec][swapper]") {
  TempDir d("reap");
  IoEnv* env = default_io_env();
  auto q = env->make_queue(4);
  REQUIRE(q.ok());
  std::vector<IoCompletion> out(4);
  auto none = (*q)->reap(0, out);  // nothing in flight: would hang forever if it blocked for one
  REQUIRE(none.ok());
  CHECK(*none == 0);
  auto fd = env->open(d.path + "/f", Access::write, /*direct=*/false);
  REQUIRE(fd.ok());
  auto data = random_bytes(8192, 7);
  REQUIRE((*q)->submit(std::vector<IoRequest>{{*fd, true, 0, data.data(), 8192, 42}}).ok());
  int got = 0;
  for (int spins = 0; got == 0 && spins < 10'000'000; ++spins) {
    auto r = (*q)->reap(0, out);
    REQUIRE(r.ok());
    got = *r;
  }
  REQUIRE(got == 1);
  CHECK(out[0].tag == 42);
  CHECK(out[0].result == 8192);
  env->close(*fd);
}

namespace {
// The mapping of this process that holds `p` (/proc/self/smaps): its range and how much of it is page-locked.
struct Vma {
  uintptr_t start = 0, end = 0;
  int64_t locked_kb = -1;
};
Vma vma_of(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  std::ifstream f("/proc/self/smaps");
  std::string line;
  Vma v;
  bool in = false;
  while (std::getline(f, line)) {
    uintptr_t s = 0, e = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &s, &e) == 2) {  // a mapping's first line; its fields follow
      in = s <= a && a < e;
      if (in) v = {s, e, -1};
      continue;
    }
    if (in && line.rfind("Locked:", 0) == 0) {
      v.locked_kb = std::stoll(line.substr(7));
      return v;
    }
  }
  return v;
}
}  // namespace

// AddressSanitizer intercepts mlock and munlock with no-ops that return 0: nothing is locked in an ASan build.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kMlockLocks = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kMlockLocks = false;
#else
constexpr bool kMlockLocks = true;
#endif
#else
constexpr bool kMlockLocks = true;
#endif

TEST_CASE("page-locked buffers lock whole 2 MiB pages: the mapping is not split where the lock ends",
          "[exec][swapper]") {
  if (!kMlockLocks) WARN("AddressSanitizer build: mlock is a no-op here, only the mappings are checked");
  // Locking only the bytes asked for splits the last huge page and the mapping; O_DIRECT from such a buffer ran
  // 1.16x as long at 13 MB and 4.3x at 1 MB on this project's VM (bench_locked_pages, bench/RESULTS.md).
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  auto b = PinnedBuffer::allocate(1'000'000, /*lock=*/true);
  REQUIRE(b.ok());
  if (!b->locked()) {
    WARN("mlock refused here, nothing to check: " << b->lock_error());
    return;
  }
  const auto a = reinterpret_cast<uintptr_t>(b->data());
  const Vma v = vma_of(b->data());
  INFO("mapping " << std::hex << v.start << "-" << v.end << " buffer at " << a);
  CHECK(v.end >= a + kHuge);  // one mapping through the whole 2 MiB page
  if (kMlockLocks) CHECK(v.locked_kb == static_cast<int64_t>((v.end - v.start) >> 10));

  // The host device's pinned buffers (the engine's swap buffers): 3 MB in a 4 MiB mapping, all of it locked.
  auto dev = make_host_device({.memory_bytes = 1 << 20, .lock_pinned = true});
  MemoryAccount cpu("cpu", int64_t{1} << 30);
  auto h = dev->allocate_host(3'000'000, true, "swap buffer", cpu);
  REQUIRE(h.ok());
  if (!dev->warnings().empty()) {
    WARN("host device: " << dev->warnings()[0]);
    return;
  }
  const auto ha = reinterpret_cast<uintptr_t>(h->data());
  const Vma hv = vma_of(h->data());
  INFO("mapping " << std::hex << hv.start << "-" << hv.end << " buffer at " << ha);
  CHECK(hv.end >= ha + 2 * kHuge);
  if (kMlockLocks) CHECK(hv.locked_kb == static_cast<int64_t>((hv.end - hv.start) >> 10));
}
