// --bind-cores-to-rank's core sets (exec/affinity.h): disjoint and covering when the node has enough CPUs, one
// shared core each when oversubscribed.
#include <catch2/catch.hpp>
#include <set>

#include "exec/affinity.h"

using zs::exec::cores_for_rank;

TEST_CASE("cores_for_rank: disjoint sets that cover the node") {
  for (int cpus : {2, 8, 13})
    for (int ranks = 1; ranks <= cpus; ++ranks) {
      std::set<int> seen;
      size_t total = 0;
      for (int r = 0; r < ranks; ++r) {
        const auto c = cores_for_rank(r, ranks, cpus);
        REQUIRE(!c.empty());
        CHECK(c.size() >= static_cast<size_t>(cpus / ranks));
        CHECK(c.size() <= static_cast<size_t>(cpus / ranks + 1));
        total += c.size();
        seen.insert(c.begin(), c.end());
      }
      CHECK(total == static_cast<size_t>(cpus));        // disjoint ...
      CHECK(seen.size() == static_cast<size_t>(cpus));  // ... and covering
    }
  CHECK(cores_for_rank(2, 3, 8) == std::vector<int>{6, 7});
  CHECK(cores_for_rank(0, 3, 8) == std::vector<int>{0, 1, 2});
}

TEST_CASE("cores_for_rank: more ranks than CPUs share one core each, round-robin") {
  CHECK(cores_for_rank(0, 4, 2) == std::vector<int>{0});
  CHECK(cores_for_rank(1, 4, 2) == std::vector<int>{1});
  CHECK(cores_for_rank(2, 4, 2) == std::vector<int>{0});
  CHECK(cores_for_rank(3, 4, 2) == std::vector<int>{1});
}
