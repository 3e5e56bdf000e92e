// DeepSpeed's own model-state estimators, reproduced to the byte: estimate_zero2_model_states_mem_needs_all_cold
// and estimate_zero3_model_states_mem_needs_all_cold (current code formulas, DEEPSPEED.md §1.1–1.2), quirks included.
//   auto rows = estimate_zero3_all_cold(P, L, /*gpus_per_node=*/8, /*nodes=*/1);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace zs::core {

struct EstimateRow {
  std::optional<std::string> offload_param;  // "cpu" | "none"; unset for ZeRO-2 rows
  std::string offload_optimizer;             // "cpu" | "none"
  std::optional<bool> zero_init;             // ZeRO-3 only
  int64_t per_cpu_bytes = 0;                 // DeepSpeed's "per CPU" column (per node)
  int64_t per_gpu_bytes = 0;
};

struct Estimate {
  int stage = 2;
  int64_t total_params = 0;
  int64_t largest_layer_params = 0;  // ZeRO-3 only
  int64_t gpus_per_node = 1, nodes = 1;
  double additional_buffer_factor = 1.5;
  std::vector<EstimateRow> rows;  // in DeepSpeed's print order
  std::vector<std::string> quirks;  // e.g. the total_gpus term in the ZeRO-2 offload CPU column
};

// ZeRO-2: rows offload_optimizer = cpu, none.
Estimate estimate_zero2_all_cold(int64_t total_params, int64_t gpus_per_node, int64_t nodes, double buffer_factor = 1.5);
// ZeRO-3: rows (cpu,cpu), (none,cpu), (none,none), each with zero_init 1 then 0.
Estimate estimate_zero3_all_cold(int64_t total_params, int64_t largest_layer_params, int64_t gpus_per_node,
                                 int64_t nodes, double buffer_factor = 1.5);

}  // namespace zs::core
