// The host device's memory (exec/host_device.h): capacity accounting as a GPU's, and freed device blocks kept for
// later allocations of the same size, as PyTorch's caching allocator keeps a GPU's.
#include <sys/resource.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <string>

#include "exec/host_device.h"

using namespace zs::exec;

namespace {

long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

}  // namespace

TEST_CASE("host device: a freed block serves the next allocation of its size without faulting pages in again",
          "[exec][host_device]") {
  // 64 MiB: past glibc's largest mmap threshold (32 MiB), so a block given back to the heap is unmapped at once and
  // its next allocation faults every page in again (4 KiB pages where THP is madvise-only: 16,384 faults a round).
  const int64_t n = int64_t{64} << 20;
  auto dev = make_host_device({.memory_bytes = 2 * n, .lock_pinned = false});
  {
    auto first = dev->allocate(n, "activations");
    REQUIRE(first.ok());
    std::memset(first->data(), 1, static_cast<size_t>(n));  // faulted in once
  }
  CHECK(dev->memory().in_use() == 0);
  const long before = minor_faults();
  for (int round = 0; round < 3; ++round) {
    auto b = dev->allocate(n, "activations");
    REQUIRE(b.ok());
    std::memset(b->data(), 2, static_cast<size_t>(n));
    CHECK(dev->memory().in_use() == n);
  }
  const long faults = minor_faults() - before;
  INFO("minor page faults over 3 rounds of 64 MiB: " << faults);
  CHECK(faults < 64);  // a cached block: none to speak of; given back, at least 32 a round even with 2 MiB pages
  CHECK(dev->memory().in_use() == 0);
}

TEST_CASE("host device: cached blocks do not lift the capacity, and other sizes get blocks of their own",
          "[exec][host_device]") {
  const int64_t cap = int64_t{4} << 20;
  auto dev = make_host_device({.memory_bytes = cap, .lock_pinned = false});
  {
    auto whole = dev->allocate(cap, "gathered params");
    REQUIRE(whole.ok());
  }
  // The freed block waits in the cache; the capacity is the account's and refuses a byte more, naming the sizes.
  auto over = dev->allocate(cap + 1, "gathered params");
  REQUIRE_FALSE(over.ok());
  CHECK(over.error().message.find("gathered params") != std::string::npos);
  auto a = dev->allocate(cap / 2, "bucket a");
  auto b = dev->allocate(cap / 2, "bucket b");
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->data() != b->data());
  // Two live blocks of one size are two blocks: writing one leaves the other alone.
  std::memset(a->data(), 0x11, static_cast<size_t>(cap / 2));
  std::memset(b->data(), 0x22, static_cast<size_t>(cap / 2));
  CHECK(static_cast<unsigned char*>(a->data())[cap / 2 - 1] == 0x11);
  CHECK(static_cast<unsigned char*>(b->data())[0] == 0x22);
  auto c = dev->allocate(1, "scalar");  // the account is full
  CHECK_FALSE(c.ok());
}
