// parameter_summary (model.h): a model's size as a header line states it.
#include <cstdio>
#include <string>

#include "core/model.h"

namespace zs::core {

std::string parameter_summary(const ModelSpec& m) {
  char buf[160];
  const auto billions = [](int64_t n) { return static_cast<double>(n) / 1e9; };
  std::snprintf(buf, sizeof buf, "%.2fB params", billions(parameter_count(m)));
  std::string t = buf;
  if (m.moe.enabled()) {
    std::snprintf(buf, sizeof buf, ", %.2fB active (top-%lld of %lld experts)", billions(active_parameter_count(m)),
                  static_cast<long long>(m.moe.top_k), static_cast<long long>(m.moe.experts));
    t += buf;
  }
  const AdapterSpec& a = m.adapter;
  if (a.lora_enabled()) {
    const std::string base =
        a.quant.enabled() ? " on " + to_string(a.quant.kind) + " " + std::to_string(a.quant.bits()) + "-bit" : "";
    std::snprintf(buf, sizeof buf, ", %.3fB trainable (LoRA r %lld%s)", billions(trainable_parameter_count(m)),
                  static_cast<long long>(a.lora.r), base.c_str());
    t += buf;
  }
  return t;
}

}  // namespace zs::core
