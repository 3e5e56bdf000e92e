// Cost model: how long one op of a Plan takes on one resource when it runs alone — GEMMs at a shape-dependent
// efficiency, memory-bound work at HBM bandwidth, a launch overhead per kernel, CPU Adam, casts, link rates.
//   CostModel c = cost_model_for(hw, Precision::fp16);  apply_model_shapes(c, model, micro_batch * seq_len);
//   apply_aio(c, hw, strategy.aio);
//   double t = compute_time_s(c, op);   // the simulator adds contention on top (sim/, docs/SIM.md)
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/hardware.h"
#include "core/launch.h"
#include "core/model.h"
#include "core/plan.h"
#include "core/strategy.h"

namespace zs::core {

// Documented defaults for one GPU type (docs/SIM.md lists the sources). Matched by a substring of GpuSpec::name.
struct GpuTypeDefaults {
  const char* match;           // "V100", "A100", ... ("" = fallback)
  int64_t sms;                 // streaming multiprocessors: one GEMM tile per SM per wave
  int64_t tile_m, tile_n;      // cuBLAS's typical large-GEMM CTA tile
  double gemm_efficiency_max;  // achieved / peak for large well-shaped GEMMs (cuBLAS microbenchmarks)
  double hbm_efficiency;       // achieved / datasheet HBM bandwidth (STREAM-like copy kernels)
  double kernel_launch_s;      // GPU side per kernel: launch latency and the gap between dependent kernels
  // Attention core (QKᵀ, softmax, AV; forward + backward) achieved / peak, by implementation: the fused kernel
  // (flash_attention_2, and sdpa's flash backend) and eager's unfused matmul-softmax-matmul. 0: the block GEMMs'
  // efficiency (no published figure; the host device's own kernels).
  double attention_fused_efficiency, attention_eager_efficiency;
  // The framework's host time per kernel (PyTorch eager dispatch, autograd, launch; DeepSpeed's hooks run between
  // them) and whether an HF eager block's kernel counts apply. The host device's ops are zerosim's own kernels.
  double kernel_host_s;
  bool hf_eager;
};
const GpuTypeDefaults& gpu_type_defaults(const std::string& gpu_name);

// Every role's time scale 1 (CostModel's per-role factors before a measurement).
constexpr std::array<double, kModuleRoles> unit_scales() {
  std::array<double, kModuleRoles> a{};
  for (double& x : a) x = 1.0;
  return a;
}
// No stream pair's own wake-up (every entry −1).
constexpr std::array<std::array<double, kStreams>, kStreams> no_pairs() {
  std::array<std::array<double, kStreams>, kStreams> a{};
  for (auto& r : a)
    for (double& x : r) x = -1.0;
  return a;
}

// Every figure the simulator uses, in SI units. Built from the hardware profile; `measured` values override.
// `provenance` says, per figure, whether it is a datasheet value × default efficiency or a measurement.
struct CostModel {
  // GPU
  double peak_flops = 0;               // dense peak for the training dtype (tensor cores for fp16/bf16)
  double gemm_efficiency_max = 0.75;   // large GEMMs
  bool gemm_efficiency_fixed = false;  // measured: one efficiency for every shape (no tile model)
  int64_t sms = 80, tile_m = 128, tile_n = 128;
  double hbm_Bps = 0;  // effective (datasheet × hbm_efficiency)
  double kernel_launch_s = 5e-6;
  // Host time per kernel: an op takes max(its GPU time, kernels × kernel_host_s) — PyTorch launches ahead of the
  // GPU until the host is the slower side (small GEMMs, unfused elementwise kernels). 0: never host-bound.
  double kernel_host_s = 0;
  int64_t kernels_per_block_forward = 14;  // zerosim's engine; an HF eager block: eager_kernels_per_block
  // The attention core's efficiency for the run's attn_implementation (apply_launch); 0: the GEMMs' own.
  double attention_efficiency = 0;
  // Shape-dependent GEMM efficiency per op family, from apply_model_shapes (gemm_efficiency_max until then).
  double block_forward_efficiency = 0.75, block_backward_efficiency = 0.75, head_efficiency = 0.75;
  double block_forward_gemm_flops = 0;  // one block's forward GEMM FLOPs per micro-batch (kernel counts)
  // Measured backward ÷ forward time of a module (hardware measured.backward_time_ratio); 0: the FLOPs decide. When
  // set, a backward op costs its work at forward rates × ratio / 2 (its FLOPs and bytes are 2× the forward's).
  double backward_time_ratio = 0;
  // Per module role (ModuleRole's index): measured time over the formula's, launches included (hardware
  // measured.module_time_scale), for forward and recompute, and for backward after backward_time_ratio. 1: the
  // formula stands.
  std::array<double, kModuleRoles> forward_scale = unit_scales(), backward_scale = unit_scales();
  // Streams that sleep (measured.stream_spin_us / stream_wake_latency_us): an op whose stream has waited longer
  // than stream_spin_s for it (its dependencies, or the op before it) starts stream_wake_s late. 0: never.
  double stream_spin_s = 0, stream_wake_s = 0;
  // Per pair (measured.stream_wake_pairs), [from][to]: where ≥ 0, the wake-up of a hand-off from stream `from` (whose
  // op's end made the work ready) to the sleeping `to`, in place of stream_wake_s (stream_wake_for).
  std::array<std::array<double, kStreams>, kStreams> stream_wake_pair_s = no_pairs();
  // CPU Adam's threads (measured.cpu_adam_threads, else the cores). A CPU op that finds the pool idle for longer
  // than stream_spin_s finds its workers asleep: the caller works alone until they wake, cpu_pool_wake_s after that
  // op's start (measured.cpu_pool_wake_us, else stream_wake_s), and so may the ops after it.
  int64_t cpu_pool_threads = 1;
  double cpu_pool_wake_s = 0;
  // CPU (per node; all local ranks share it). The optimizer step's CPU passes stream memory on the threads the
  // launcher leaves the ranks (apply_launch; cost_model_for alone assumes every core busy): a pass moves its bytes
  // at min(threads running × one core's streaming rate, the DRAM ceiling).
  double cpu_core_Bps = 0;                // one core's streaming bandwidth (profile, measured, or CPU-type default)
  int64_t cpu_threads_per_rank = 0;       // OpenMP / intra-op threads of one rank (0: not resolved, every core)
  int64_t cpu_ranks_per_node = 1;
  int64_t cpu_threads_active = 0;         // min(ranks × threads, cores): the threads that run at once
  std::string cpu_threads_why;            // the launcher's rule, for the header and the provenance
  int64_t cpu_numa_nodes = 1, cpu_numa_home = 1;  // NUMA nodes; those holding the ranks' optimizer states
  double cpu_adam_core_params_per_s = 0;  // threads running × one thread's Adam rate
  double cpu_adam_dram_params_per_s = 0;  // DRAM bound: dram_adam_Bps / adam_bytes_per_param
  double cpu_adam_params_per_s = 0;       // min of the two, or measured (scaled to the threads running)
  double adam_bytes_per_param = 28;       // fp32 p r/w 8, g r 4, m r/w 8, v r/w 8 (DEEPSPEED.md §4)
  double dram_Bps = 0;                    // effective DRAM bandwidth for streaming host work (the unscale pass)
  double cast_Bps = 0;                    // the fp32 → lp host cast's bytes (read + written) per second
  double gpu_adam_bytes_per_param = 30;   // fused GPU Adam: the 28 above + lp param write 2
  // unscale_and_clip_grads before every optimizer step: grad.mul_(1 / combined_scale) over the fp32 gradients,
  // read and write 4 B each — DeepSpeed runs it even when the scale is 1 (a separate pass, on the CPU for CPU Adam).
  double unscale_bytes_per_param = 8;
  // PCIe (per GPU, per direction) and the shared host uplink (per node, per direction)
  double pcie_h2d_Bps = 0, pcie_d2h_Bps = 0, pcie_host_Bps = 0;
  double pcie_h2d_pageable_Bps = 0, pcie_d2h_pageable_Bps = 0;
  double pcie_latency_s = 10e-6;  // cudaMemcpyAsync issue + DMA setup; measured.pcie_latency_us overrides
  // NVMe (per node, all drives, through the async I/O path)
  double nvme_read_Bps = 0, nvme_write_Bps = 0;
  // Fixed cost per transfer (one swap), each direction; measured: nvme_read/write_latency_us.
  double nvme_read_latency_s = 50e-6, nvme_write_latency_s = 50e-6;
  // Data age (measured.nvme_settle_s and the hot figures): the figures above are for data last written
  // nvme_settle_s or more before; data younger than that is still in a write cache (nvme_swap_time_s).
  // nvme_settle_s = 0: no hot figures, every swap costs the above.
  double nvme_settle_s = 0;
  double nvme_hot_read_Bps = 0, nvme_hot_write_Bps = 0, nvme_hot_read_latency_s = 0, nvme_hot_write_latency_s = 0;
  // The first swap after the NVMe path was idle (measured.nvme_idle_wake): (idle s, extra s), idle ascending.
  // Empty: a swap costs the same however long the path rested.
  std::vector<std::pair<double, double>> nvme_idle_wake;
  // Interconnect: NVLink/NVSwitch per GPU per direction; NIC per node per direction
  double nvlink_Bps = 0, nvlink_latency_s = 1e-6;
  double nic_Bps = 0, nic_latency_s = 2e-6;
  std::vector<std::pair<std::string, std::string>> provenance;  // figure → "datasheet 900 GB/s × 0.85" | "measured"
};

// Defaults for `hw` (GPU type table, efficiencies) with hw.measured applied. `dtype` picks the peak FLOP rate.
// The CPU rates assume every core of the node busy; apply_launch narrows them to the run's threads.
CostModel cost_model_for(const Hardware& hw, Precision dtype);

// The CPU rates for the threads `launch` leaves each of `ranks_per_node` ranks (launch.h's rule): Adam, the
// unscale pass and the host casts at min(threads running × per-thread rate, DRAM ceiling). A measured rate (the
// probe's threads) scales linearly to fewer threads and stays as measured at as many or more.
void apply_launch(CostModel& c, const Hardware& hw, const LaunchSettings& launch, int64_t ranks_per_node);

// Everything a simulation of this run prices: cost_model_for, the model's GEMM shapes at micro batch × sequence,
// the ds_config's aio settings and the launch. The one recipe `simulate`, the GUI and the benchmarks share.
CostModel cost_model_for_run(const Hardware& hw, const ModelSpec& m, const Strategy& s);

// The ds_config's aio block_size and queue_depth against the probe's sweep (measured.nvme_aio_sweep): the
// measured NVMe rates were fitted at measured.aio_block_size / aio_queue_depth, and `aio`'s row scales them by its
// median rates over the fitted row's. No sweep, or no row for `aio`: the rates stay, and the provenance says so.
void apply_aio(CostModel& c, const Hardware& hw, const AioConfig& aio);

// One NVMe swap alone: latency + bytes / rate, at the figures for data last written `age_s` before: the hot
// figures at age 0, the settled ones from nvme_settle_s on, linear in between.
double nvme_swap_time_s(const CostModel& c, bool read, int64_t bytes, double age_s);
// The fastest any swap can be (the lower latency and higher rate of the two sets): the simulator's NVMe links, to
// which it adds the rest of nvme_swap_time_s as a delay.
double nvme_link_Bps(const CostModel& c, bool read);
// What a swap costs on top when the NVMe path was idle for `idle_s` before it: nvme_idle_wake interpolated in
// log(idle), from 0 at no idle up to the first point in proportion, the last point's figure beyond it.
double nvme_idle_extra_s(const CostModel& c, double idle_s);

// The wake-up of work handed from stream `from` to the sleeping stream `to`: the pair's own figure where the
// profile has one, else stream_wake_s.
double stream_wake_for(const CostModel& c, Stream from, Stream to);
// What a CPU op of `work_s` (its work on the pool's cpu_pool_threads threads, compute_time_s) takes on top when the
// pool's sleeping workers join `asleep_s` after its start: until then the caller works alone, T threads' work at 1.
// The simulator prices a sleeping pool with it, and the host device's profile takes it off the run's CPU ops.
double cpu_pool_wake_extra_s(const CostModel& c, double work_s, double asleep_s);
double nvme_link_latency_s(const CostModel& c, bool read);

// Kernels one transformer block's forward launches in HF transformers run eagerly (its modeling code read op by
// op: norms, rotary, activation, residuals, dropout, the projections, the attention core by implementation).
int64_t eager_kernels_per_block(const ModelSpec& m, AttnImplementation attn);

// GEMM efficiency (achieved/peak) for C[m,n] = A[m,k]·B[k,n]: wave quantisation of tile_m×tile_n tiles over the
// SMs, a short-k penalty, and the HBM roofline for skinny shapes. The fixed measured value when one is set.
double gemm_efficiency(const CostModel& c, int64_t m, int64_t n, int64_t k);

// Fills the per-family efficiencies from the model's GEMM shapes at `tokens` = micro_batch × seq_len
// (FLOP-weighted over QKV, out-proj, MLP; backward = dgrad + wgrad shapes; head = the vocabulary GEMM).
void apply_model_shapes(CostModel& c, const ModelSpec& m, int64_t tokens);

// A CPU optimizer op's two passes alone on the node's CPU: DeepSpeed's unscale_and_clip_grads over the fp32
// gradients (unscale_bytes_per_param at dram_Bps) and the CPU Adam kernel (at cpu_adam_params_per_s).
struct CpuStepPasses {
  double unscale_s = 0, adam_s = 0;
};
CpuStepPasses cpu_step_passes(const CostModel& c, int64_t elements);

// Time alone on its resource for ops that execute (not transfers or collectives):
// forward/backward/recompute on the GPU, adam_gpu (GPU), adam_cpu and cast_cpu (whole-node CPU). 0 for others.
double compute_time_s(const CostModel& c, const Op& op);
// Kernels an op launches (launch overhead = kernels × kernel_launch_s).
int64_t kernel_count(const CostModel& c, const Op& op);

}  // namespace zs::core
