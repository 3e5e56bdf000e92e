// The verdict words (FITS / TIGHT / DOES NOT FIT) and the hardware limits of a memory report (memory.h).
#include "core/memory.h"

namespace zs::core {

Verdict verdict(bool fits, const std::array<int64_t, 3>& required, const std::array<int64_t, 3>& capacity) {
  if (!fits) return Verdict::does_not_fit;
  for (size_t i = 0; i < required.size(); ++i) {
    if (required[i] <= 0 || capacity[i] <= 0) continue;
    if (static_cast<double>(capacity[i] - required[i]) < kTightHeadroomFraction * static_cast<double>(capacity[i]))
      return Verdict::tight;
  }
  return Verdict::fits;
}

Verdict verdict(const MemoryReport& r) {
  std::array<int64_t, 3> required{}, capacity{};
  for (Tier t : kTiers) {
    required[static_cast<size_t>(t)] = r.tier(t).required_bytes;
    capacity[static_cast<size_t>(t)] = r.tier(t).capacity_bytes;
  }
  return verdict(r.fits, required, capacity);
}

std::string to_string(Verdict v) {
  switch (v) {
    case Verdict::fits:
      return "fits";
    case Verdict::tight:
      return "tight";
    case Verdict::does_not_fit:
      return "does_not_fit";
  }
  return "?";
}

std::string verdict_word(Verdict v) {
  switch (v) {
    case Verdict::fits:
      return "FITS";
    case Verdict::tight:
      return "TIGHT";
    case Verdict::does_not_fit:
      return "DOES NOT FIT";
  }
  return "?";
}

std::vector<Limit> memory_limits(const MemoryReport& r) {
  std::vector<Limit> out;
  for (Tier t : kTiers) {
    const auto& tr = r.tier(t);
    if (tr.required_bytes == 0 || tr.fits()) continue;
    const std::string what = t == Tier::gpu   ? "GPU memory per GPU"
                             : t == Tier::cpu ? "CPU DRAM per node"
                                              : "NVMe per node";
    out.push_back(
        {t, tr.required_bytes, tr.capacity_bytes,
         "needs " + format_bytes(tr.required_bytes) + " " + what + ", has " + format_bytes(tr.capacity_bytes)});
  }
  return out;
}

}  // namespace zs::core
