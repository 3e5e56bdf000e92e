// Report: what this build and machine support, like DeepSpeed's ds_report — SIMD flags and the CPU Adam
// kernel picked, libaio and O_DIRECT on the nvme paths, page-locking limits, and which optional parts
// (CUDA, NCCL, MPI, SimGrid, Qt) this binary was built with ("not built" when absent).
//   for (auto& item : build_report({"/local_nvme"})) std::cout << item.name << ": " << item.value << "\n";
#pragma once

#include <string>
#include <vector>

namespace zs::probe {

struct ReportItem {
  std::string section;  // "cpu", "memory", "nvme", "build"
  std::string name;
  std::string value;
  bool ok = true;  // false: missing or not usable (shown as a warning)
};

std::vector<ReportItem> build_report(const std::vector<std::string>& nvme_paths);

}  // namespace zs::probe
