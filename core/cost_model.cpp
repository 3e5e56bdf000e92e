#include "core/cost_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

namespace zs::core {
namespace {

// Sources and reasoning per row: docs/SIM.md "GPU-type defaults".
// Attention: FlashAttention's published forward + backward benchmark (causal, head dim 128, sequence 2k-8k):
// A100 FlashAttention-2 155-182 TFLOPS of 312, PyTorch eager 32-34; H100 FA2 265-308 of 989, eager 57-63.
// Host time: an HF eager training step's host time per kernel, 15 us (eager vs CUDA-graph step of the same model).
constexpr double kHostPerKernelS = 15e-6;
constexpr int64_t kAttentionBenchmarkHeadDim = 128;  // the head dim of the attention figures below
constexpr GpuTypeDefaults kGpuTypes[] = {
    {"V100", 80, 128, 128, 0.78, 0.85, 5e-6, 0, 0, kHostPerKernelS, true},
    {"A100", 108, 128, 256, 0.82, 0.88, 4e-6, 0.54, 0.105, kHostPerKernelS, true},
    {"H100", 132, 128, 256, 0.72, 0.88, 4e-6, 0.29, 0.061, kHostPerKernelS, true},
    {"H200", 132, 128, 256, 0.72, 0.88, 4e-6, 0.29, 0.061, kHostPerKernelS, true},
    {"GH200", 132, 128, 256, 0.72, 0.88, 4e-6, 0.29, 0.061, kHostPerKernelS, true},
    {"4090", 128, 128, 128, 0.80, 0.90, 4e-6, 0, 0, kHostPerKernelS, true},
    {"A6000", 84, 128, 128, 0.80, 0.90, 4e-6, 0, 0, kHostPerKernelS, true},
    {"host", 80, 128, 128, 0.70, 0.85, 5e-6, 0, 0, 0, false},  // zerosim's host device: its own kernels
    {"", 80, 128, 128, 0.70, 0.85, 5e-6, 0, 0, kHostPerKernelS, true},
};
// Eager attention over the fused kernel on the GPU that has both figures (A100: 33 / 168 TFLOPS), for GPU types
// with no eager figure of their own.
constexpr double kEagerOverFusedAttention = 0.105 / 0.54;

// Host-side defaults (docs/SIM.md "CPU, PCIe, NVMe, network defaults").
constexpr double kDramAdamEfficiency = 0.65;      // 7 concurrent streams (p, g, m, v) vs datasheet
constexpr double kDramStreamEfficiency = 0.75;    // STREAM triad vs datasheet on 2-socket Xeons
constexpr double kPageableFraction = 0.5;         // pageable copies stage through a driver bounce buffer
constexpr double kNvmeReadEfficiency = 0.8;       // DeepNVMe ds_io/fio vs drive rating
constexpr double kNvmeWriteEfficiency = 0.8;
constexpr double kNvlinkEfficiency = 0.8;    // nccl-tests busbw vs NVLink/NVSwitch per-direction rate
constexpr double kNicEfficiency = 0.85;      // nccl-tests busbw vs InfiniBand line rate
constexpr double kNcclStepOverheadS = 3e-6;  // NCCL network proxy per ring step, over the wire latency

double gb(double GBps) { return GBps * kGB; }

std::string fmt(const char* f, double a, double b = 0) {
  char buf[160];
  std::snprintf(buf, sizeof buf, f, a, b);
  return buf;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// One core's streaming bandwidth by CPU type, for profiles that state none (docs/SIM.md "CPU-type defaults" gives
// each row's source: a single-threaded STREAM / read-bandwidth measurement of that core family). One core cannot
// fill the channels: its outstanding misses ÷ memory latency bound it. Matched by a substring of CpuSpec::name.
struct CpuTypeDefaults {
  const char* match;
  double core_stream_GBps;
};
constexpr CpuTypeDefaults kCpuTypes[] = {
    {"EPYC 7742", 28.0},  // STREAM with one thread on a DGX A100 (2x EPYC 7742): 28 GB/s
    {"EPYC 7", 31.0},     // Zen 3 (Milan): ~31 GB/s single-threaded; the other EPYC 7xx2/7xx3 parts
    {"EPYC 9", 31.0},     // Zen 4 (Genoa): no published figure at hand; Milan's
    {"", 12.0},           // Xeon Skylake-SP: 12 GB/s single-threaded STREAM triad; every other CPU
};

double core_stream_Bps(const Hardware& hw) {
  if (hw.measured.dram_core_GBps) return gb(*hw.measured.dram_core_GBps);
  if (hw.cpu.core_memory_GBps > 0) return gb(hw.cpu.core_memory_GBps);
  for (const auto& d : kCpuTypes)
    if (*d.match && hw.cpu.name.find(d.match) != std::string::npos) return gb(d.core_stream_GBps);
  return gb(kCpuTypes[std::size(kCpuTypes) - 1].core_stream_GBps);
}

// A rate the probe measured on `measured_threads` threads, for `threads` running: its share below, as measured at
// or above (the probe's threads saturated what they could).
double scaled_to_threads(double measured, int64_t measured_threads, int64_t threads) {
  if (measured_threads <= 0 || threads >= measured_threads) return measured;
  return measured * static_cast<double>(threads) / static_cast<double>(measured_threads);
}

// CPU Adam, the unscale pass and the host casts for c.cpu_threads_active threads: min(threads × one core's
// streaming rate, the DRAM ceiling of the NUMA nodes that hold the states) per pass, unless measured (then
// scaled to the threads; a probe's figure is taken as the ceiling it met).
void set_cpu_rates(CostModel& c, const Hardware& hw) {
  const MeasuredSpec& ms = hw.measured;
  const int64_t threads = std::max<int64_t>(1, c.cpu_threads_active);
  const int64_t probe_threads = ms.cpu_adam_threads.value_or(hw.cpu.cores);
  const double thread_Bps = static_cast<double>(threads) * c.cpu_core_Bps;
  // The share of the channels that hold the ranks' optimizer states: a rank's main thread allocates and first
  // touches them (pinned buffers, torch.zeros_like for Adam's m and v), so Linux places them on the NUMA node that
  // thread runs on. The ranks' states sit on min(ranks, NUMA nodes) nodes.
  c.cpu_numa_nodes = std::max<int64_t>(1, hw.cpu.numa_node_count());
  c.cpu_numa_home = std::min(std::max<int64_t>(1, c.cpu_ranks_per_node), c.cpu_numa_nodes);
  const double home = static_cast<double>(c.cpu_numa_home) / static_cast<double>(c.cpu_numa_nodes);
  auto& prov = c.provenance;
  std::erase_if(prov, [](const auto& p) { return p.first == "cpu_adam" || p.first == "cpu_passes" || p.first == "cpu_cast"; });
  const double dram_adam_Bps = ms.dram_adam_pattern_GBps ? gb(*ms.dram_adam_pattern_GBps)
                                                         : gb(hw.cpu.memory_GBps) * home * kDramAdamEfficiency;
  c.cpu_adam_core_params_per_s = thread_Bps / c.adam_bytes_per_param;
  c.cpu_adam_dram_params_per_s = dram_adam_Bps / c.adam_bytes_per_param;
  if (ms.cpu_adam_params_per_s) {
    c.cpu_adam_params_per_s = scaled_to_threads(*ms.cpu_adam_params_per_s, probe_threads, threads);
    prov.push_back({"cpu_adam", fmt("measured %.3g params/s", *ms.cpu_adam_params_per_s) +
                                    fmt(" on %.0f threads", static_cast<double>(probe_threads)) +
                                    fmt(", %.3g params/s on the run's threads", c.cpu_adam_params_per_s)});
  } else {
    c.cpu_adam_params_per_s = std::min(c.cpu_adam_core_params_per_s, c.cpu_adam_dram_params_per_s);
    prov.push_back({"cpu_adam", fmt("min(%.0f threads", static_cast<double>(threads)) +
                                    fmt(" x %.1f GB/s, DRAM %.1f GB/s) / 28 B", c.cpu_core_Bps / kGB, dram_adam_Bps / kGB) +
                                    fmt(" = %.3g params/s", c.cpu_adam_params_per_s)});
  }
  const double dram_stream_Bps =
      ms.dram_triad_GBps ? gb(*ms.dram_triad_GBps) : gb(hw.cpu.memory_GBps) * home * kDramStreamEfficiency;
  c.dram_Bps = std::min(thread_Bps, dram_stream_Bps);
  if (ms.cpu_pass_GBps) {
    c.dram_Bps = scaled_to_threads(gb(*ms.cpu_pass_GBps), probe_threads, threads);
    prov.push_back({"cpu_passes",
                    fmt("measured %.1f GB/s (the unscale pass at the run's group size)", *ms.cpu_pass_GBps)});
  } else {
    prov.push_back({"cpu_passes", fmt("min(%.0f threads", static_cast<double>(threads)) +
                                      fmt(" x %.1f GB/s, DRAM %.1f GB/s)", c.cpu_core_Bps / kGB, dram_stream_Bps / kGB) +
                                      fmt(" = %.1f GB/s for the unscale and the casts", c.dram_Bps / kGB)});
  }
  c.cast_Bps = c.dram_Bps;
  if (ms.cpu_cast_GBps) {
    c.cast_Bps = scaled_to_threads(gb(*ms.cpu_cast_GBps), probe_threads, threads);
    prov.push_back(
        {"cpu_cast", fmt("measured %.1f GB/s (the fp32 -> lp cast at the run's group size)", *ms.cpu_cast_GBps)});
  }
}

}  // namespace

const GpuTypeDefaults& gpu_type_defaults(const std::string& gpu_name) {
  for (const auto& d : kGpuTypes)
    if (*d.match && gpu_name.find(d.match) != std::string::npos) return d;
  return kGpuTypes[std::size(kGpuTypes) - 1];
}

namespace {

// The GPU's GEMM rate and efficiency, and the measured backward ratio and per-role time scales.
void set_gpu_compute(CostModel& c, const Hardware& hw, const GpuTypeDefaults& d, Precision dtype) {
  auto& prov = c.provenance;
  double tflops = dtype == Precision::fp32   ? hw.gpu.peak_tflops_fp32
                  : dtype == Precision::bf16 ? hw.gpu.peak_tflops_bf16
                                             : hw.gpu.peak_tflops_fp16;
  if (tflops <= 0) tflops = hw.gpu.peak_tflops_fp32;  // e.g. bf16 on V100: no tensor-core bf16, runs at fp32 rate
  c.peak_flops = tflops * 1e12;
  prov.push_back({"peak_flops", fmt("datasheet %.1f TFLOPS", tflops) + " " + to_string(dtype)});

  c.sms = d.sms;
  c.tile_m = d.tile_m;
  c.tile_n = d.tile_n;
  c.kernel_launch_s = d.kernel_launch_s;
  c.kernel_host_s = d.kernel_host_s;
  if (hw.measured.gemm_efficiency) {
    c.gemm_efficiency_max = *hw.measured.gemm_efficiency;
    c.gemm_efficiency_fixed = true;
    prov.push_back({"gemm_efficiency", fmt("measured %.3f (every shape)", c.gemm_efficiency_max)});
  } else {
    c.gemm_efficiency_max = d.gemm_efficiency_max;
    prov.push_back(
        {"gemm_efficiency", fmt("default %.2f for large GEMMs, tile/wave model below", d.gemm_efficiency_max)});
  }
  c.block_forward_efficiency = c.block_backward_efficiency = c.head_efficiency = c.gemm_efficiency_max;
  if (hw.measured.backward_time_ratio) {
    c.backward_time_ratio = *hw.measured.backward_time_ratio;
    prov.push_back({"backward", fmt("measured backward / forward time %.3f (the FLOPs say 2)", c.backward_time_ratio)});
  }
  if (!hw.measured.module_time_scale.empty()) {
    std::string t = "measured time / formula's, forward and backward:";
    for (const auto& x : hw.measured.module_time_scale) {
      const auto r = static_cast<size_t>(module_role_from(x.role));
      c.forward_scale[r] = x.forward;
      c.backward_scale[r] = x.backward;
      t += " " + x.role + fmt(" %.2f", x.forward) + fmt(" / %.2f,", x.backward);
    }
    t.pop_back();
    prov.push_back({"module_time_scale", t});
  }
}

// How late work starts on a stream (or CPU Adam's pool) that slept: measured for the host device, whose streams
// are threads; a GPU's hardware queues have none.
void set_stream_wakes(CostModel& c, const Hardware& hw) {
  auto& prov = c.provenance;
  if (hw.measured.stream_wake_latency_us && *hw.measured.stream_wake_latency_us > 0) {
    c.stream_wake_s = *hw.measured.stream_wake_latency_us * 1e-6;
    c.stream_spin_s = hw.measured.stream_spin_us.value_or(0) * 1e-6;
    prov.push_back({"stream_wake", fmt("measured: a stream idle over %.0f us starts work %.1f us late",
                                       c.stream_spin_s * 1e6, c.stream_wake_s * 1e6)});
    c.cpu_pool_wake_s = c.stream_wake_s;
    if (!hw.measured.stream_wake_pairs.empty()) {
      std::string t = "measured per stream pair:";
      for (const auto& w : hw.measured.stream_wake_pairs)
        for (int f = 0; f < kStreams; ++f)
          for (int k = 0; k < kStreams; ++k)
            if (w.from == to_string(static_cast<Stream>(f)) && w.to == to_string(static_cast<Stream>(k))) {
              c.stream_wake_pair_s[static_cast<size_t>(f)][static_cast<size_t>(k)] = w.wake_us * 1e-6;
              t += " " + w.from + " -> " + w.to + fmt(" %.1f us,", w.wake_us);
            }
      t.pop_back();
      prov.push_back({"stream_wake_pairs", t});
    }
    if (hw.measured.cpu_pool_wake_us) {
      c.cpu_pool_wake_s = *hw.measured.cpu_pool_wake_us * 1e-6;
      prov.push_back({"cpu_pool_wake", fmt("measured: CPU Adam's pool idle over %.0f us has its workers join %.1f us "
                                           "late",
                                           c.stream_spin_s * 1e6, c.cpu_pool_wake_s * 1e6)});
    }
  }
}

void set_pcie_rates(CostModel& c, const Hardware& hw) {
  auto& prov = c.provenance;
  c.pcie_h2d_Bps = gb(hw.links.pcie_h2d_GBps);
  c.pcie_d2h_Bps = gb(hw.links.pcie_d2h_GBps);
  c.pcie_host_Bps = gb(hw.links.pcie_host_GBps > 0 ? hw.links.pcie_host_GBps
                                                   : hw.links.pcie_h2d_GBps * static_cast<double>(hw.gpus_per_node));
  c.pcie_h2d_pageable_Bps =
      hw.measured.pcie_h2d_pageable_GBps ? gb(*hw.measured.pcie_h2d_pageable_GBps) : c.pcie_h2d_Bps * kPageableFraction;
  c.pcie_d2h_pageable_Bps =
      hw.measured.pcie_d2h_pageable_GBps ? gb(*hw.measured.pcie_d2h_pageable_GBps) : c.pcie_d2h_Bps * kPageableFraction;
  if (hw.measured.pcie_latency_us) c.pcie_latency_s = *hw.measured.pcie_latency_us * 1e-6;
  prov.push_back(
      {"pcie",
       fmt("profile %.1f GB/s pinned per GPU, %.1f GB/s host uplink", hw.links.pcie_h2d_GBps, c.pcie_host_Bps / kGB) +
           fmt(hw.measured.pcie_latency_us ? "; %.2f us per copy (measured)"
                                           : "; %.0f us per copy (cudaMemcpyAsync issue + DMA set-up)",
               c.pcie_latency_s * 1e6)});
}

// NVMe rates and latencies: measured (cold and, with nvme_settle_s, hot) or the drives' rating derated.
void set_nvme_rates(CostModel& c, const Hardware& hw) {
  auto& prov = c.provenance;
  const auto drives = static_cast<double>(hw.nvme.drives);
  c.nvme_read_Bps = hw.measured.nvme_read_GBps ? gb(*hw.measured.nvme_read_GBps)
                                               : gb(hw.nvme.read_GBps_each) * drives * kNvmeReadEfficiency;
  c.nvme_write_Bps = hw.measured.nvme_write_GBps ? gb(*hw.measured.nvme_write_GBps)
                                                 : gb(hw.nvme.write_GBps_each) * drives * kNvmeWriteEfficiency;
  prov.push_back({"nvme", hw.measured.nvme_read_GBps ? std::string("measured")
                                                     : fmt("rated %.1f GB/s read per node x %.2f",
                                                           hw.nvme.read_GBps_each * drives, kNvmeReadEfficiency)});
  if (hw.measured.nvme_read_latency_us) c.nvme_read_latency_s = *hw.measured.nvme_read_latency_us * 1e-6;
  if (hw.measured.nvme_write_latency_us) c.nvme_write_latency_s = *hw.measured.nvme_write_latency_us * 1e-6;
  if (hw.measured.nvme_settle_s && hw.measured.nvme_hot_read_GBps && hw.measured.nvme_hot_write_GBps &&
      hw.measured.nvme_hot_read_latency_us && hw.measured.nvme_hot_write_latency_us) {
    c.nvme_settle_s = *hw.measured.nvme_settle_s;
    c.nvme_hot_read_Bps = gb(*hw.measured.nvme_hot_read_GBps);
    c.nvme_hot_write_Bps = gb(*hw.measured.nvme_hot_write_GBps);
    c.nvme_hot_read_latency_s = *hw.measured.nvme_hot_read_latency_us * 1e-6;
    c.nvme_hot_write_latency_s = *hw.measured.nvme_hot_write_latency_us * 1e-6;
    prov.push_back(
        {"nvme_age", fmt("measured: data written just before swaps at %.0f us read", c.nvme_hot_read_latency_s * 1e6) +
                         fmt(" + %.2f GB/s", c.nvme_hot_read_Bps / kGB) +
                         fmt(", settled after %.2f s", c.nvme_settle_s)});
  }
  if (!hw.measured.nvme_idle_wake.empty()) {
    std::string t = "measured: the first swap after an idle path takes";
    for (const auto& w : hw.measured.nvme_idle_wake) {
      c.nvme_idle_wake.emplace_back(w.idle_ms * 1e-3, w.extra_us * 1e-6);
      t += fmt(" +%.0f us", w.extra_us) + fmt(" after %g ms,", w.idle_ms);
    }
    t.pop_back();
    prov.push_back({"nvme_idle_wake", t});
  }
  prov.push_back({"nvme_latency", std::string(hw.measured.nvme_read_latency_us ? "measured" : "default") +
                                      fmt(" %.0f us read", c.nvme_read_latency_s * 1e6) +
                                      fmt(", %.0f us write per swap", c.nvme_write_latency_s * 1e6)});
}

}  // namespace

CostModel cost_model_for(const Hardware& hw, Precision dtype) {
  CostModel c;
  const GpuTypeDefaults& d = gpu_type_defaults(hw.gpu.name);
  auto& prov = c.provenance;
  set_gpu_compute(c, hw, d, dtype);
  set_stream_wakes(c, hw);
  c.hbm_Bps = gb(hw.gpu.hbm_GBps) * d.hbm_efficiency;
  prov.push_back({"hbm", fmt("datasheet %.0f GB/s x %.2f", hw.gpu.hbm_GBps, d.hbm_efficiency)});

  c.cpu_core_Bps = core_stream_Bps(hw);
  c.cpu_ranks_per_node = 1;
  c.cpu_threads_active = std::max<int64_t>(hw.cpu.cores, 1);
  set_cpu_rates(c, hw);
  c.cpu_pool_threads = std::max<int64_t>(1, hw.measured.cpu_adam_threads.value_or(hw.cpu.cores));
  set_pcie_rates(c, hw);
  set_nvme_rates(c, hw);
  if (hw.measured.nccl_busbw_GBps) {
    c.nvlink_Bps = gb(*hw.measured.nccl_busbw_GBps);
    prov.push_back({"nvlink", "measured NCCL bus bandwidth"});
  } else {
    c.nvlink_Bps = gb(hw.links.nvlink_GBps) * kNvlinkEfficiency;
  }
  c.nic_Bps = gb(hw.links.network_GBps_per_node) * kNicEfficiency;
  c.nic_latency_s = hw.links.network_latency_us * 1e-6 + kNcclStepOverheadS;
  return c;
}

double gemm_efficiency(const CostModel& c, int64_t m, int64_t n, int64_t k) {
  if (m <= 0 || n <= 0 || k <= 0) return c.gemm_efficiency_max;
  if (c.gemm_efficiency_fixed) return c.gemm_efficiency_max;
  const int64_t tiles_m = ceil_div(m, c.tile_m), tiles_n = ceil_div(n, c.tile_n), tiles = tiles_m * tiles_n;
  const int64_t waves = ceil_div(tiles, std::max<int64_t>(c.sms, 1));
  // Work done / work issued: partial edge tiles and the idle SMs of the last wave.
  const double tile_eff = static_cast<double>(m) * static_cast<double>(n) /
                          (static_cast<double>(tiles_m * c.tile_m) * static_cast<double>(tiles_n * c.tile_n));
  const double wave_eff = static_cast<double>(tiles) / static_cast<double>(waves * c.sms);
  const double k_eff = static_cast<double>(k) / static_cast<double>(k + 64);  // prologue/epilogue per tile
  const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const double t_compute = flops / (c.peak_flops * c.gemm_efficiency_max * tile_eff * wave_eff * k_eff);
  const double bytes = 2.0 * (static_cast<double>(m) * k + static_cast<double>(k) * n + static_cast<double>(m) * n);
  const double t_memory = c.hbm_Bps > 0 ? bytes / c.hbm_Bps : 0.0;
  return flops / c.peak_flops / std::max(t_compute, t_memory);
}

double nvme_swap_time_s(const CostModel& c, bool read, int64_t bytes, double age_s) {
  const double b = static_cast<double>(bytes);
  const double cold =
      read ? c.nvme_read_latency_s + b / c.nvme_read_Bps : c.nvme_write_latency_s + b / c.nvme_write_Bps;
  if (c.nvme_settle_s <= 0) return cold;
  const double hot = read ? c.nvme_hot_read_latency_s + b / c.nvme_hot_read_Bps
                          : c.nvme_hot_write_latency_s + b / c.nvme_hot_write_Bps;
  const double f = std::clamp(age_s / c.nvme_settle_s, 0.0, 1.0);
  return hot + f * (cold - hot);
}

double nvme_link_Bps(const CostModel& c, bool read) {
  const double cold = read ? c.nvme_read_Bps : c.nvme_write_Bps;
  return c.nvme_settle_s > 0 ? std::max(cold, read ? c.nvme_hot_read_Bps : c.nvme_hot_write_Bps) : cold;
}

double nvme_idle_extra_s(const CostModel& c, double idle_s) {
  const auto& w = c.nvme_idle_wake;
  if (w.empty() || idle_s <= 0) return 0;
  if (idle_s <= w.front().first) return w.front().second * idle_s / w.front().first;
  for (size_t i = 1; i < w.size(); ++i)
    if (idle_s <= w[i].first) {
      const double f = std::log(idle_s / w[i - 1].first) / std::log(w[i].first / w[i - 1].first);
      return w[i - 1].second + f * (w[i].second - w[i - 1].second);
    }
  return w.back().second;
}

double stream_wake_for(const CostModel& c, Stream from, Stream to) {
  const double w = c.stream_wake_pair_s[static_cast<size_t>(from)][static_cast<size_t>(to)];
  return w >= 0 ? w : c.stream_wake_s;
}

double cpu_pool_wake_extra_s(const CostModel& c, double work_s, double asleep_s) {
  const double T = static_cast<double>(c.cpu_pool_threads);
  return std::min(std::max(0.0, asleep_s), work_s * T) * (T - 1) / T;
}

double nvme_link_latency_s(const CostModel& c, bool read) {
  const double cold = read ? c.nvme_read_latency_s : c.nvme_write_latency_s;
  return c.nvme_settle_s > 0 ? std::min(cold, read ? c.nvme_hot_read_latency_s : c.nvme_hot_write_latency_s) : cold;
}

void apply_aio(CostModel& c, const Hardware& hw, const AioConfig& aio) {
  const MeasuredSpec& ms = hw.measured;
  if (!ms.nvme_read_GBps || !ms.nvme_write_GBps || ms.nvme_aio_sweep.empty() || !ms.aio_block_size ||
      !ms.aio_queue_depth)
    return;
  auto row = [&](int64_t bs, int64_t qd) -> const NvmeAioRate* {
    for (const auto& r : ms.nvme_aio_sweep)
      if (r.block_size == bs && r.queue_depth == qd) return &r;
    return nullptr;
  };
  const NvmeAioRate* fitted = row(*ms.aio_block_size, *ms.aio_queue_depth);
  const NvmeAioRate* want = row(aio.block_size, aio.queue_depth);
  const std::string cfg =
      "aio block_size " + std::to_string(aio.block_size) + ", queue_depth " + std::to_string(aio.queue_depth);
  if (!fitted || !want) {
    c.provenance.push_back({"nvme_aio", "ds_config " + cfg + " was not probed; rates of block_size " +
                                            std::to_string(*ms.aio_block_size) + ", queue_depth " +
                                            std::to_string(*ms.aio_queue_depth)});
    return;
  }
  c.nvme_read_Bps *= want->read_GBps / fitted->read_GBps;
  c.nvme_write_Bps *= want->write_GBps / fitted->write_GBps;
  c.nvme_hot_read_Bps *= want->read_GBps / fitted->read_GBps;
  c.nvme_hot_write_Bps *= want->write_GBps / fitted->write_GBps;
  c.provenance.push_back(
      {"nvme_aio", "ds_config " + cfg +
                       fmt(": measured %.2f GB/s read, %.2f GB/s write (", want->read_GBps, want->write_GBps) +
                       fmt("x %.3f, ", want->read_GBps / fitted->read_GBps) +
                       fmt("x %.3f of the probe's best)", want->write_GBps / fitted->write_GBps)});
}

void apply_model_shapes(CostModel& c, const ModelSpec& m, int64_t tokens) {
  if (tokens <= 0 || m.hidden <= 0) return;
  const int64_t h = m.hidden, hd = m.head_dim > 0 ? m.head_dim : h / std::max<int64_t>(m.heads, 1);
  const int64_t attn = m.heads * hd, kv = (m.kv_heads > 0 ? m.kv_heads : m.heads) * hd;
  struct Linear {
    int64_t in, out;
  };
  std::vector<Linear> lin = {{h, attn + 2 * kv}, {attn, h}};
  if (m.activation == Activation::swiglu) {
    lin.push_back({h, m.ffn_hidden});
    lin.push_back({h, m.ffn_hidden});
  } else {
    lin.push_back({h, m.ffn_hidden});
  }
  lin.push_back({m.ffn_hidden, h});
  // FLOP-weighted harmonic mean: total flops / total time at peak.
  auto combine = [&](const std::vector<std::array<int64_t, 3>>& shapes) {
    double flops = 0, t = 0;
    for (const auto& s : shapes) {
      const double f = 2.0 * static_cast<double>(s[0]) * static_cast<double>(s[1]) * static_cast<double>(s[2]);
      flops += f;
      t += f / gemm_efficiency(c, s[0], s[1], s[2]);
    }
    return t > 0 ? flops / t : c.gemm_efficiency_max;
  };
  std::vector<std::array<int64_t, 3>> fwd, bwd;
  c.block_forward_gemm_flops = 0;
  for (const auto& l : lin) {
    fwd.push_back({tokens, l.out, l.in});
    bwd.push_back({tokens, l.in, l.out});  // dgrad
    bwd.push_back({l.in, l.out, tokens});  // wgrad
    c.block_forward_gemm_flops +=
        2.0 * static_cast<double>(tokens) * static_cast<double>(l.in) * static_cast<double>(l.out);
  }
  c.block_forward_efficiency = combine(fwd);
  c.block_backward_efficiency = combine(bwd);
  c.head_efficiency = combine({{tokens, m.vocab, h}, {tokens, h, m.vocab}, {h, m.vocab, tokens}});
  c.provenance.push_back(
      {"gemm_shapes",
       fmt("%.0f tokens per micro-batch: block forward %.3f", static_cast<double>(tokens), c.block_forward_efficiency) +
           fmt(", backward %.3f, head %.3f", c.block_backward_efficiency, c.head_efficiency)});
}

int64_t kernel_count(const CostModel& c, const Op& op) {
  switch (op.kind) {
    case OpKind::forward:
    case OpKind::recompute:
    case OpKind::backward: {
      const bool bwd = op.kind == OpKind::backward;
      if (op.layer < 0) return bwd ? 8 : 4;  // embedding / final norm / head / loss
      if (c.block_forward_gemm_flops <= 0 || op.gemm_flops <= 0) return 1;
      return std::max<int64_t>(1, std::llround(static_cast<double>(c.kernels_per_block_forward) * op.gemm_flops /
                                               c.block_forward_gemm_flops));
    }
    case OpKind::adam_gpu:
      return 1;  // multi-tensor apply
    default:
      return 0;
  }
}

int64_t eager_kernels_per_block(const ModelSpec& m, AttnImplementation attn) {
  // HF's modeling code read op by op. Projections: one fused QKV (GPT-2 c_attn; query_key_value of gpt_neox,
  // falcon, bloom; phi3 qkv_proj) or three; DeepSeek's latent attention q_a, q_b (or q_proj), kv_a, kv_b and their
  // two RMSNorms; the output projection. HF's eager norms: LayerNorm is one kernel; an RMSNorm casts, squares,
  // means, adds eps, rsqrt, multiplies, casts back and scales (8); block_norms of them (gemma2/3 sandwich: 4; a
  // parallel block's one or two), and q_norm, k_norm (qwen3, gemma3). Rotary on Q and K: two multiplies,
  // rotate_half's neg and cat, an add (5 each; partial rotary alike; MLA then cats the rope part onto Q and K). Two
  // residual adds (a parallel block's attn + mlp + x too); with dropout (GPT-2, OPT) two residual dropouts and
  // eager's attention dropout. Attention: one fused kernel and a contiguous() of its output (+ ALiBi's bias into
  // the mask); eager: matmul, scale, mask, softmax, matmul (bloom's baddbmm takes the bias and scale, then casts).
  const Arch a = m.arch;
  const bool eager = attn == AttnImplementation::eager;
  const int64_t norm = m.norm == Norm::rmsnorm ? 8 : 1;
  const bool fused_qkv = a == Arch::gpt || a == Arch::gpt_neox || a == Arch::falcon || a == Arch::bloom ||
                         a == Arch::phi3;
  int64_t k = 1;  // output projection
  if (m.mla.enabled())
    k += (m.mla.q_lora_rank > 0 ? 2 + norm : 1) + 2 + norm;
  else
    k += fused_qkv ? 1 : 3;
  k += m.block_norms * norm + (m.qk_norm ? 2 * norm : 0);
  if (m.position == Position::rope) k += 2 * 5 + (m.mla.enabled() ? 2 : 0);
  k += 2 + (m.dropout ? 2 + (eager ? 1 : 0) : 0);
  k += eager ? 5 : 2 + (m.position == Position::alibi ? 1 : 0);
  if (!m.moe.enabled()) {
    // MLP: gate, up, down (phi3's fused gate_up_proj: two GEMMs), SiLU and the gate product; or fc, proj and the
    // GELU: tanh GELU as written (GPT-2 NewGELU, gptj gelu_new, bloom_gelu_forward) is 8 kernels, nn.GELU or ReLU
    // one (gpt_neox, falcon, opt).
    if (m.activation == Activation::swiglu) return k + (a == Arch::phi3 ? 2 : 3) + 2;
    const bool tanh_as_written = a == Arch::gpt || a == Arch::llama || a == Arch::gptj || a == Arch::bloom;
    return k + 2 + (tanh_as_written ? 8 : 1);
  }
  // A MoE layer's block, eager as HF writes it (modeling_mixtral.py MixtralSparseMoeBlock, qwen2_moe alike): router
  // GEMM, softmax, top-k, sum, divide, cast, the zeroed output, one_hot, the experts-hit sum, compare and nonzero
  // (11); DeepSeek-V3's grouped sigmoid router (router_bias; DeepseekV3TopkRouter, DeepseekV3MoE.moe) 23: fp32
  // casts, sigmoid, bias add, group top-2, sum, group top-k, zeros, scatter, mask expand, not, masked_fill, top-k,
  // gather, normalise (3), scale, the fp32 output and one_hot. Then a Python loop over the experts hit (a training
  // batch hits every expert) of 10: where, the rows' and their weights' gathers, gate, up, act, product, down, the
  // weight multiply, index_add; DeepSeek casts the fp32 sum back (1). The shared expert's five and its add;
  // Qwen2-MoE's sigmoid gate: GEMM, sigmoid, multiply.
  const MoeSpec& x = m.moe;
  k += x.router_bias ? 23 + 1 : 11;
  k += 10 * x.experts;
  if (x.shared_experts * x.expert_ffn + x.shared_ffn > 0) k += 5 + 1;
  if (x.shared_expert_gate) k += 3;
  return k;
}

CpuStepPasses cpu_step_passes(const CostModel& c, int64_t elements) {
  const auto n = static_cast<double>(elements);
  return {n * c.unscale_bytes_per_param / c.dram_Bps, n / c.cpu_adam_params_per_s};
}

double compute_time_s(const CostModel& c, const Op& op) {
  switch (op.kind) {
    case OpKind::forward:
    case OpKind::recompute:
    case OpKind::backward: {
      const double eff = op.layer < 0                  ? c.head_efficiency
                         : op.kind == OpKind::backward ? c.block_backward_efficiency
                                                       : c.block_forward_efficiency;
      const double attention_eff = c.attention_efficiency > 0 ? c.attention_efficiency : eff;
      const double gemm = std::max(0.0, op.gemm_flops - op.attention_flops);
      double work = 0;
      if (gemm > 0) work += gemm / (c.peak_flops * eff);
      if (op.attention_flops > 0) work += op.attention_flops / (c.peak_flops * attention_eff);
      if (op.mem_bound_bytes > 0) work += static_cast<double>(op.mem_bound_bytes) / c.hbm_Bps;
      if (op.kind == OpKind::backward && c.backward_time_ratio > 0) work *= c.backward_time_ratio / 2.0;
      const auto r = static_cast<size_t>(op.role);
      const double scale = op.kind == OpKind::backward ? c.backward_scale[r] : c.forward_scale[r];
      const auto kernels = static_cast<double>(kernel_count(c, op));
      return scale * std::max(kernels * c.kernel_launch_s + work, kernels * c.kernel_host_s);
    }
    case OpKind::adam_gpu: {
      const double bytes = op.mem_bound_bytes > 0 ? static_cast<double>(op.mem_bound_bytes)
                                                  : static_cast<double>(op.elements) *
                                                        (c.gpu_adam_bytes_per_param + c.unscale_bytes_per_param);
      return bytes / c.hbm_Bps + c.kernel_launch_s;
    }
    case OpKind::adam_cpu: {
      const CpuStepPasses p = cpu_step_passes(c, op.elements);
      return p.unscale_s + p.adam_s;
    }
    case OpKind::cast_cpu:
      return static_cast<double>(op.bytes) / c.cast_Bps;
    default:
      return 0.0;
  }
}

void apply_launch(CostModel& c, const Hardware& hw, const LaunchSettings& launch, int64_t ranks_per_node) {
  const CpuThreads t = resolve_cpu_threads(launch, hw.cpu.cores, ranks_per_node);
  c.cpu_threads_per_rank = t.per_rank;
  c.cpu_ranks_per_node = t.ranks_per_node;
  c.cpu_threads_active = t.node_active;
  c.cpu_threads_why = t.why;
  c.cpu_pool_threads = t.per_rank;
  set_cpu_rates(c, hw);
  const GpuTypeDefaults& d = gpu_type_defaults(hw.gpu.name);
  if (launch.attn_implementation == AttnImplementation::eager)
    c.attention_efficiency = d.attention_eager_efficiency > 0
                                 ? d.attention_eager_efficiency
                                 : (d.attention_fused_efficiency > 0 ? d.attention_fused_efficiency
                                                                     : c.block_forward_efficiency) *
                                       kEagerOverFusedAttention;
  else
    c.attention_efficiency = d.attention_fused_efficiency;
  if (c.attention_efficiency > 0)
    c.provenance.push_back({"attention", to_string(launch.attn_implementation) +
                                             fmt(": the attention core at %.3f of peak", c.attention_efficiency)});
  c.provenance.push_back({"cpu_threads", t.why + fmt(": %.0f threads per rank, %.0f running on the node",
                                                       static_cast<double>(t.per_rank),
                                                       static_cast<double>(t.node_active))});
}

CostModel cost_model_for_run(const Hardware& hw, const ModelSpec& m, const Strategy& s) {
  CostModel c = cost_model_for(hw, s.model_dtype());
  apply_model_shapes(c, m, s.micro_batch_per_gpu * s.run.seq_len);
  apply_aio(c, hw, s.aio);
  apply_launch(c, hw, s.run.launch, std::min(s.run.gpus_per_node, std::max<int64_t>(1, s.run.world())));
  const int64_t head_dim = m.head_dim > 0 ? m.head_dim : m.hidden / std::max<int64_t>(1, m.heads);
  if (s.run.launch.attn_implementation == AttnImplementation::eager && c.attention_efficiency > 0 &&
      head_dim < kAttentionBenchmarkHeadDim) {
    // Eager attention is bound by its [b, a, s, s] score traffic, the same per score whatever the head dim, while
    // its FLOPs per score are 4 × head_dim: below the benchmark's head dim its efficiency falls in proportion.
    c.attention_efficiency *= static_cast<double>(head_dim) / static_cast<double>(kAttentionBenchmarkHeadDim);
    c.provenance.push_back({"attention_head_dim", fmt("eager at head dim %.0f: x %.3f of the head-dim-128 figure",
                                                      static_cast<double>(head_dim),
                                                      static_cast<double>(head_dim) / kAttentionBenchmarkHeadDim)});
  }
  if (gpu_type_defaults(hw.gpu.name).hf_eager) {
    c.kernels_per_block_forward = eager_kernels_per_block(m, s.run.launch.attn_implementation);
    c.provenance.push_back({"kernels", fmt("HF eager: %.0f kernels per block forward", static_cast<double>(
                                                                                           c.kernels_per_block_forward)) +
                                           fmt(", %.0f us host time per kernel", c.kernel_host_s * 1e6)});
  }
  return c;
}

}  // namespace zs::core
