#include "core/cost_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

namespace zs::core {
namespace {

// Sources and reasoning per row: docs/SIM.md "GPU-type defaults".
constexpr GpuTypeDefaults kGpuTypes[] = {
    {"V100", 80, 128, 128, 0.78, 0.85, 5e-6},  {"A100", 108, 128, 256, 0.82, 0.88, 4e-6},
    {"H100", 132, 128, 256, 0.72, 0.88, 4e-6}, {"H200", 132, 128, 256, 0.72, 0.88, 4e-6},
    {"4090", 128, 128, 128, 0.80, 0.90, 4e-6}, {"A6000", 84, 128, 128, 0.80, 0.90, 4e-6},
    {"", 80, 128, 128, 0.70, 0.85, 5e-6},
};

// Host-side defaults (docs/SIM.md "CPU, PCIe, NVMe, network defaults").
constexpr double kCpuAdamParamsPerCoreS = 0.3e9;  // per-core streaming ~8-12 GB/s ÷ 28 B/param
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

}  // namespace

const GpuTypeDefaults& gpu_type_defaults(const std::string& gpu_name) {
  for (const auto& d : kGpuTypes)
    if (*d.match && gpu_name.find(d.match) != std::string::npos) return d;
  return kGpuTypes[std::size(kGpuTypes) - 1];
}

CostModel cost_model_for(const Hardware& hw, Precision dtype) {
  CostModel c;
  const GpuTypeDefaults& d = gpu_type_defaults(hw.gpu.name);
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
  c.hbm_Bps = gb(hw.gpu.hbm_GBps) * d.hbm_efficiency;
  prov.push_back({"hbm", fmt("datasheet %.0f GB/s x %.2f", hw.gpu.hbm_GBps, d.hbm_efficiency)});

  // CPU Adam: min(cores × per-core rate, DRAM bandwidth ÷ 28 B/param), unless measured.
  c.cpu_adam_core_params_per_s = static_cast<double>(std::max<int64_t>(hw.cpu.cores, 1)) * kCpuAdamParamsPerCoreS;
  c.cpu_pool_threads = std::max<int64_t>(1, hw.measured.cpu_adam_threads.value_or(hw.cpu.cores));
  const double dram_adam_Bps = hw.measured.dram_adam_pattern_GBps ? gb(*hw.measured.dram_adam_pattern_GBps)
                                                                  : gb(hw.cpu.memory_GBps) * kDramAdamEfficiency;
  c.cpu_adam_dram_params_per_s = dram_adam_Bps / c.adam_bytes_per_param;
  if (hw.measured.cpu_adam_params_per_s) {
    c.cpu_adam_params_per_s = *hw.measured.cpu_adam_params_per_s;
    prov.push_back({"cpu_adam", fmt("measured %.3g params/s", c.cpu_adam_params_per_s)});
  } else {
    c.cpu_adam_params_per_s = std::min(c.cpu_adam_core_params_per_s, c.cpu_adam_dram_params_per_s);
    prov.push_back({"cpu_adam", fmt("min(cores x 0.3e9, DRAM %.1f GB/s / 28 B) = %.3g params/s", dram_adam_Bps / kGB,
                                    c.cpu_adam_params_per_s)});
  }
  c.dram_Bps =
      hw.measured.dram_triad_GBps ? gb(*hw.measured.dram_triad_GBps) : gb(hw.cpu.memory_GBps) * kDramStreamEfficiency;
  if (hw.measured.cpu_pass_GBps) {
    c.dram_Bps = gb(*hw.measured.cpu_pass_GBps);
    prov.push_back({"cpu_passes",
                    fmt("measured %.1f GB/s (the unscale pass at the run's group size)", *hw.measured.cpu_pass_GBps)});
  }
  c.cast_Bps = c.dram_Bps;
  if (hw.measured.cpu_cast_GBps) {
    c.cast_Bps = gb(*hw.measured.cpu_cast_GBps);
    prov.push_back({"cpu_cast",
                    fmt("measured %.1f GB/s (the fp32 -> lp cast at the run's group size)", *hw.measured.cpu_cast_GBps)});
  }

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

double compute_time_s(const CostModel& c, const Op& op) {
  switch (op.kind) {
    case OpKind::forward:
    case OpKind::recompute:
    case OpKind::backward: {
      const double eff = op.layer < 0                  ? c.head_efficiency
                         : op.kind == OpKind::backward ? c.block_backward_efficiency
                                                       : c.block_forward_efficiency;
      double work = 0;
      if (op.gemm_flops > 0) work += op.gemm_flops / (c.peak_flops * eff);
      if (op.mem_bound_bytes > 0) work += static_cast<double>(op.mem_bound_bytes) / c.hbm_Bps;
      if (op.kind == OpKind::backward && c.backward_time_ratio > 0) work *= c.backward_time_ratio / 2.0;
      const auto r = static_cast<size_t>(op.role);
      const double scale = op.kind == OpKind::backward ? c.backward_scale[r] : c.forward_scale[r];
      return scale * (static_cast<double>(kernel_count(c, op)) * c.kernel_launch_s + work);
    }
    case OpKind::adam_gpu: {
      const double bytes = op.mem_bound_bytes > 0 ? static_cast<double>(op.mem_bound_bytes)
                                                  : static_cast<double>(op.elements) *
                                                        (c.gpu_adam_bytes_per_param + c.unscale_bytes_per_param);
      return bytes / c.hbm_Bps + c.kernel_launch_s;
    }
    case OpKind::adam_cpu:
      return static_cast<double>(op.elements) / c.cpu_adam_params_per_s +
             static_cast<double>(op.elements) * c.unscale_bytes_per_param / c.dram_Bps;
    case OpKind::cast_cpu:
      return static_cast<double>(op.bytes) / c.cast_Bps;
    default:
      return 0.0;
  }
}

}  // namespace zs::core
