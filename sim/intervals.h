// Intervals of simulated time [start, end): the union of a set, its length, and how much of one set another
// covers — what the summary and the breakdown measure exposure with.
//   auto busy = merged({{0, 1}, {0.5, 2}});   // {{0, 2}}
#pragma once

#include <algorithm>
#include <utility>
#include <vector>

namespace zs::sim {

using Interval = std::pair<double, double>;

// The union as sorted, disjoint intervals (empty ones dropped).
inline std::vector<Interval> merged(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const auto& iv : v) {
    if (iv.second <= iv.first) continue;
    if (!out.empty() && iv.first <= out.back().second)
      out.back().second = std::max(out.back().second, iv.second);
    else
      out.push_back(iv);
  }
  return out;
}

inline double length(const std::vector<Interval>& m) {
  double s = 0;
  for (const auto& iv : m) s += iv.second - iv.first;
  return s;
}

// |a ∩ b| for merged lists.
inline double overlap(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  double s = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const double lo = std::max(a[i].first, b[j].first), hi = std::min(a[i].second, b[j].second);
    if (hi > lo) s += hi - lo;
    if (a[i].second < b[j].second)
      ++i;
    else
      ++j;
  }
  return s;
}

}  // namespace zs::sim
