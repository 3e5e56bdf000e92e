// Summary: what a simulated step means — step time, phases, throughput, TFLOPS and MFU, utilisation per
// resource, exposed (not overlapped) time per link, the bottleneck in words, and the bandwidth each tier would
// need for a target GPU efficiency (docs/SIM.md "Summary").
//   Summary s = summarize(plan, sim, {.samples_per_step = 512, .target_efficiency = 0.9});
//   std::cout << s.bottleneck << "\n";   // "CPU Adam: 41% of the step, exposed"
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/plan.h"
#include "sim/simulator.h"

namespace zs::sim {

struct SummaryOptions {
  int64_t samples_per_step = 0;    // global batch (train_batch_size)
  double target_efficiency = 0.9;  // GPU compute time / step time to size the tiers for
};

// One resource of the representative node.
struct ResourceUse {
  std::string name;        // "gpu0", "pcie_h2d0", "host_down", "nvme_read", "cpu"
  std::string kind;        // to_string(ResourceKind)
  double capacity = 0;     // links: bytes/s; executors: 1
  double bytes = 0;        // links: bytes moved in the step
  double busy_s = 0;       // links: bytes / capacity; executors: seconds of exclusive work
  double utilization = 0;  // busy_s / step time
};

// Rank 0's time in one category of non-compute work, and how much of it the GPU was not computing.
struct Exposure {
  std::string key;       // "cpu_adam", "pcie_h2d", "pcie_d2h", "nvme_read", "nvme_write", "collectives", "cpu_cast"
  std::string label;     // "CPU Adam"
  double active_s = 0;   // union of its ops' intervals
  double exposed_s = 0;  // part of that with the GPU idle
};

// Bandwidth a tier needs so that the step takes GPU compute time ÷ target efficiency, per GPU. summarize()
// gives the bound with full overlap (bytes ÷ target step time: necessary, rarely sufficient);
// simulate_requirements() (requirements.h) finds it by re-simulating with the tier scaled.
struct Requirement {
  std::string key;  // "nvme_read", "pcie_h2d", "network", "cpu_adam" (DRAM traffic of CPU Adam), ...
  std::string label;
  double bytes_per_gpu = 0;  // per step
  double need_GBps_per_gpu = 0;
  double has_GBps_per_gpu = 0;  // the GPU's share of the resource
  bool short_ = false;          // need > has
  bool simulated = false;       // found by re-simulation (else the full-overlap bound)
  bool reachable = true;        // simulated: the target is reachable by scaling this tier alone (up to 64x)
  double best_efficiency = 0;   // simulated and unreachable: the efficiency at 64x
};

struct Summary {
  double step_time_s = 0;
  double forward_s = 0, backward_s = 0, optimizer_s = 0;  // partition the step (docs/SIM.md)
  double tokens_per_s = 0, samples_per_s = 0;
  double model_tflops_per_gpu = 0;     // model FLOPs (no recompute) per GPU per second
  double hardware_tflops_per_gpu = 0;  // GEMM FLOPs executed (recompute included)
  double mfu = 0;                      // model FLOPs / peak
  double gpu_compute_s = 0;            // rank 0's GPU busy time
  double gpu_efficiency = 0;           // gpu_compute_s / step
  std::vector<ResourceUse> resources;
  std::vector<std::pair<std::string, double>> utilization;  // by resource kind (per-GPU kinds averaged)
  std::vector<Exposure> exposed;
  std::string bottleneck_key;  // "gpu_compute" or an Exposure key
  std::string bottleneck;      // in words
  double target_efficiency = 0;
  std::vector<Requirement> required;
  std::array<int64_t, 3> peak_bytes{};  // simulated timeline (rank 0 GPU, node CPU/NVMe)
  std::vector<std::string> warnings;    // e.g. the simulated timeline overflows a tier the plan said fits
};

Summary summarize(const core::Plan& plan, const SimResult& sim, const SummaryOptions& o);

// "41%", "3.2 GB/s" style helpers shared by the CLI's text output.
std::string summary_text(const Summary& s);

}  // namespace zs::sim
