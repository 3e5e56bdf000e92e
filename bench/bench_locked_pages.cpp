// Zero-copy swaps (the engine's way: SourceUse::borrow, checksums on) from buffers laid out five ways, at the sizes
// a swapped tensor has: a huge-page mapping unlocked, page-locked to the byte (mlock of the bytes asked for, which
// splits the last 2 MiB page and the mapping), page-locked in whole 2 MiB pages (PinnedBuffer and the host
// device since this benchmark), and 4 KiB pages (aligned_alloc) unlocked and locked. Each round writes three
// tensors per layout and reads them back after a settle, layouts interleaved, so the disk's drift spreads over all.
// The machine's limit is the best layout in the same run: each row prints its ratio to the fastest.
//   bench_locked_pages [--path DIR] [--bytes N] [--rounds R] [--settle-ms MS]
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "exec/host_buffer.h"
#include "exec/swapper.h"

using namespace zs::exec;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count() * 1e3; }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t k = v.size();
  return k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
}

enum class Layout { huge_unlocked, huge_locked_bytes, huge_locked_pages, small_unlocked, small_locked };

struct Buf {
  unsigned char* p = nullptr;
  size_t bytes = 0;
  Layout layout{};
};

}  // namespace

int main(int argc, char** argv) {
  std::string dir = "/tmp";
  int64_t n = 13'040'000;  // `small`'s optimizer state (tests/data/engine/small.json, one group)
  int rounds = 10;
  int settle_ms = 300;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--path")
      dir = argv[i + 1];
    else if (a == "--bytes")
      n = std::atoll(argv[i + 1]);
    else if (a == "--rounds")
      rounds = std::atoi(argv[i + 1]);
    else if (a == "--settle-ms")
      settle_ms = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: bench_locked_pages [--path DIR] [--bytes N] [--rounds R] [--settle-ms MS]\n");
      return 2;
    }
  }
  if (n <= 0 || rounds <= 0) {
    std::fprintf(stderr, "bench_locked_pages: --bytes and --rounds must be positive\n");
    return 2;
  }
  AioConfig aio;  // DeepSpeed's aio defaults: 1 MiB blocks, queue depth 8
  aio.block_size = 1 << 20;
  aio.queue_depth = 8;
  auto sw = Swapper::create(zero_copy_swapper_options({dir}, aio));
  if (!sw) {
    std::fprintf(stderr, "bench_locked_pages: %s\n", sw.error().message.c_str());
    return 1;
  }
  const size_t rounded = static_cast<size_t>((n + 4095) / 4096 * 4096);
  const char* names[] = {"2M pages, unlocked", "2M pages, mlock to the byte", "2M pages, mlock whole pages",
                         "4K pages, unlocked", "4K pages, mlock"};
  constexpr int L = 5, T = 3;
  std::vector<Buf> bufs;
  bool lock_failed = false;
  for (int l = 0; l < L; ++l)
    for (int t = 0; t < T; ++t) {
      Buf b;
      b.layout = static_cast<Layout>(l);
      b.bytes = rounded;
      const bool huge = l <= 2;
      b.p = static_cast<unsigned char*>(huge ? map_huge(rounded) : std::aligned_alloc(4096, rounded));
      if (!b.p) return 1;
      for (size_t k = 0; k < rounded; k += 8) {
        const uint64_t x = static_cast<uint64_t>(k + 8 * static_cast<size_t>(t)) * 0x9E3779B97F4A7C15ull;
        std::memcpy(b.p + k, &x, std::min<size_t>(8, rounded - k));
      }
      int rc = 0;
      if (b.layout == Layout::huge_locked_bytes || b.layout == Layout::small_locked) rc = ::mlock(b.p, rounded);
      if (b.layout == Layout::huge_locked_pages) rc = lock_huge(b.p, rounded);
      if (rc != 0) lock_failed = true;
      bufs.push_back(b);
    }
  std::printf(
      "bench_locked_pages: %s, %lld B per tensor, %d rounds of %d tensors per layout, reads %d ms after their "
      "writes\n",
      dir.c_str(), static_cast<long long>(n), rounds, T, settle_ms);
  if (lock_failed) std::printf("warning: mlock refused (raise `ulimit -l`): the locked rows are not locked\n");
  std::vector<double> rd[L], wr[L];
  const std::string tag = "bench_locked_" + std::to_string(::getpid()) + "_";
  for (int r = 0; r < rounds; ++r)
    for (int l = 0; l < L; ++l) {
      for (int t = 0; t < T; ++t) {
        const auto t0 = Clock::now();
        auto h = (*sw)->swap_out(tag + std::to_string(t), bufs[static_cast<size_t>(l * T + t)].p, n, SourceUse::borrow);
        Status st = h ? h->wait() : Status(h.error());
        if (!st.ok()) {
          std::fprintf(stderr, "swap_out failed: %s\n", st.message().c_str());
          return 1;
        }
        wr[l].push_back(ms_since(t0));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(settle_ms));
      for (int t = 0; t < T; ++t) {
        const auto t0 = Clock::now();
        auto h = (*sw)->swap_in(tag + std::to_string(t), bufs[static_cast<size_t>(l * T + t)].p, n);
        Status st = h ? h->wait() : Status(h.error());
        if (!st.ok()) {
          std::fprintf(stderr, "swap_in failed: %s\n", st.message().c_str());
          return 1;
        }
        rd[l].push_back(ms_since(t0));
      }
    }
  double best_r = 1e30, best_w = 1e30;
  for (int l = 0; l < L; ++l) {
    best_r = std::min(best_r, median(rd[l]));
    best_w = std::min(best_w, median(wr[l]));
  }
  std::printf("\n%-30s %10s %10s %12s %12s\n", "buffer", "read ms", "write ms", "read/best", "write/best");
  for (int l = 0; l < L; ++l)
    std::printf("%-30s %10.3f %10.3f %11.2fx %11.2fx\n", names[l], median(rd[l]), median(wr[l]), median(rd[l]) / best_r,
                median(wr[l]) / best_w);
  std::printf("(medians of %d swaps; the best layout's median is the machine's limit in this run)\n", rounds * T);
  for (auto& b : bufs) {
    if (b.layout <= Layout::huge_locked_pages) {
      if (b.layout != Layout::huge_unlocked) unlock_huge(b.p, b.bytes);
      unmap_huge(b.p, b.bytes);
    } else {
      if (b.layout == Layout::small_locked) ::munlock(b.p, b.bytes);
      std::free(b.p);
    }
  }
  return 0;
}
