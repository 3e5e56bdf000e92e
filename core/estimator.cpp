#include "core/estimator.h"

#include <algorithm>

namespace zs::core {
namespace {

// Python's int() truncates toward zero; the formulas are float products of non-negative values.
int64_t py_int(double v) { return static_cast<int64_t>(v); }

}  // namespace

Estimate estimate_zero2_all_cold(int64_t total_params, int64_t gpus_per_node, int64_t nodes, double f) {
  Estimate e;
  e.stage = 2;
  e.total_params = total_params;
  e.gpus_per_node = gpus_per_node;
  e.nodes = nodes;
  e.additional_buffer_factor = f;
  const double P = static_cast<double>(total_params);
  const int64_t total_gpus = nodes * gpus_per_node;
  for (bool cpu_offload : {true, false}) {
    EstimateRow row;
    row.offload_optimizer = cpu_offload ? "cpu" : "none";
    double gpu_mem, cpu_mem;
    if (cpu_offload) {
      gpu_mem = 2 * P;
      cpu_mem = P * static_cast<double>(std::max<int64_t>(4 * total_gpus, 16)) * f;
    } else {
      gpu_mem = 2 * P + static_cast<double>(py_int(18 * P / static_cast<double>(total_gpus)));
      cpu_mem = P * 4 * static_cast<double>(gpus_per_node) * f;
    }
    row.per_cpu_bytes = py_int(cpu_mem);
    row.per_gpu_bytes = py_int(gpu_mem);
    e.rows.push_back(row);
  }
  if (4 * total_gpus > 16 && nodes > 1)
    e.quirks.push_back("offload_optimizer=cpu row: DeepSpeed multiplies by 4 x total_gpus (" + std::to_string(total_gpus) +
                       "), not GPUs per node, although the column is per node; the real per-node need is lower");
  e.quirks.push_back("GPU no-offload term is 2*P + 18*P/G since PR #5099; memory.rst still shows 4*P + 16*P/G");
  return e;
}

Estimate estimate_zero3_all_cold(int64_t total_params, int64_t largest_layer_params, int64_t gpus_per_node,
                                 int64_t nodes, double f) {
  Estimate e;
  e.stage = 3;
  e.total_params = total_params;
  e.largest_layer_params = largest_layer_params;
  e.gpus_per_node = gpus_per_node;
  e.nodes = nodes;
  e.additional_buffer_factor = f;
  const double P = static_cast<double>(total_params), L = static_cast<double>(largest_layer_params);
  const double gpn = static_cast<double>(gpus_per_node);
  const double total_gpus = static_cast<double>(nodes * gpus_per_node);
  const double gpus_factor = 1.0 / static_cast<double>(nodes);
  const double largest_layer_memory = 4 * L;
  struct Combo {
    bool cpu_offload, cpu_offload_params;
  };
  for (Combo c : {Combo{true, true}, Combo{true, false}, Combo{false, false}}) {
    for (bool zero_init : {true, false}) {
      double gpu_mem, cpu_mem;
      if (c.cpu_offload) {
        if (c.cpu_offload_params) {
          gpu_mem = largest_layer_memory;
          cpu_mem = zero_init ? P * 18 * gpus_factor * f : P * std::max(4 * gpn, 18 * gpus_factor) * f;
        } else {
          gpu_mem = largest_layer_memory + static_cast<double>(py_int(2 * P / total_gpus));
          cpu_mem = zero_init ? P * 16 * gpus_factor * f : P * std::max(4 * gpn, 16 * gpus_factor) * f;
        }
      } else {
        gpu_mem = largest_layer_memory + static_cast<double>(py_int(18 * P / total_gpus));
        cpu_mem = zero_init ? L * 4 * gpn * f : P * 4 * gpn * f;
      }
      EstimateRow row;
      row.offload_param = c.cpu_offload_params ? "cpu" : "none";
      row.offload_optimizer = c.cpu_offload ? "cpu" : "none";
      row.zero_init = zero_init;
      row.per_cpu_bytes = py_int(cpu_mem);
      row.per_gpu_bytes = py_int(gpu_mem);
      e.rows.push_back(row);
    }
  }
  e.quirks.push_back("model states only: no activations, buckets, CUDA context or NVMe swap buffers");
  return e;
}

}  // namespace zs::core
