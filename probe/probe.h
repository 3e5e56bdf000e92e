// Probe: measures this machine for the simulator (`zerosim probe`): DRAM triad and Adam-pattern bandwidth,
// CPU Adam params/s for 1..all threads, NVMe read/write GB/s through the Swapper over a small sweep of
// block sizes × queue depths (recommending the best aio block, as ds_nvme_tune does). The GPU figures (GpuResult)
// come from probe/cuda/gpu_probe.h, which the CLI calls in CUDA builds: this library is host-only.
// apply_probe() folds the figures into a hardware profile.
//   ProbeOptions o{.nvme_paths = {"/local_nvme"}, .progress = [](const std::string& s) { std::cerr << s; }};
//   Result<ProbeResult> r = run_probe(o);
//   core::Hardware h = apply_probe(*core::load_hardware("ci-2core"), *r);
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/hardware.h"
#include "core/status.h"
#include "exec/swapper.h"

namespace zs::probe {

struct ProbeOptions {
  std::vector<std::string> nvme_paths;  // striped like the swapper; empty = skip the NVMe part
  bool quick = false;   // small arrays and files: seconds, for tests (DRAM figures then may be cache-bound)
  bool gpu = false;     // --gpu asked for: run_probe only notes that it cannot (see GpuResult)
  int max_threads = 0;  // 0 = every available CPU
  std::function<void(const std::string&)> progress;  // one line per finished measurement (no newline)
};

struct DramResult {
  double triad_GBps = 0, adam_pattern_GBps = 0;
  double triad_one_thread_GBps = 0;  // one core's streaming rate (what a rank with OMP_NUM_THREADS=1 gets)
  int threads = 0;
  int64_t working_set_bytes = 0;  // of the Adam-pattern run (4 fp32 arrays)
};

struct AdamRate {
  int threads = 0;
  double params_per_s = 0;
};

struct CpuAdamResult {
  std::string kernel;
  std::vector<AdamRate> by_threads;
  double params_per_s = 0;  // best
  int threads = 0;          // where the best was reached
};

struct NvmeSample {
  int64_t block_size = 0;
  int queue_depth = 0;
  double read_GBps = 0, write_GBps = 0;            // the median swap's rate: what a training step sees
  double read_median_s = 0, write_median_s = 0;    // the median swap's time
  double read_peak_GBps = 0, write_peak_GBps = 0;  // the fastest swap's rate (cache-assisted, for reference)
};

struct NvmeResult {
  bool measured = false;
  std::vector<std::string> paths;
  bool direct = true;                 // O_DIRECT on every path
  std::vector<std::string> warnings;  // from the swapper (buffered fallback, mlock)
  int64_t capacity_bytes = 0;         // smallest path's file system
  int64_t file_bytes = 0;             // bytes per swap in the sweep
  int files = 0;                      // swaps out, then in, per repeat
  double settle_s = 0;                // pause between a repeat's writes and its reads
  std::vector<NvmeSample> sweep;
  NvmeSample best;  // the recommended aio block_size / queue_depth (max read + write)
  // One swap through the swapper at `best` takes latency + bytes / rate: the line through the median swap of
  // latency_bytes and that of file_bytes (latency: open, fallocate, submit, completion, checksum set-up).
  int64_t latency_bytes = 0;
  double read_latency_s = 0, write_latency_s = 0;
  double read_GBps = 0, write_GBps = 0;
  // The same line for swaps read back (and rewritten) at once, with no settle_s pause.
  double hot_read_latency_s = 0, hot_write_latency_s = 0, hot_read_GBps = 0, hot_write_GBps = 0;
};

// One timed GEMM of the GPU probe: a linear layer's forward (one GEMM) or backward (dW and dinp: two).
struct GpuGemmSample {
  std::string name;   // "qkv", "attn_out", "fc", "proj", "square"
  std::string dtype;  // "bf16", "fp16"
  bool backward = false;
  int64_t tokens = 0, in = 0, out = 0;  // matmul_forward / matmul_backward's N, IN, OUT
  double flops = 0;                     // 2·N·IN·OUT forward, twice that backward
  double seconds = 0;                   // median of the repeats, per call
  double tflops = 0;
};

// The GPU figures (probe/cuda/gpu_probe.h fills them; run_probe itself is host-only and leaves probed false).
// Zero = not measured.
struct GpuResult {
  bool probed = false;
  std::string note;    // why not probed ("no GPU: ..."), or what was left out (NCCL on one GPU)
  std::string device;  // cudaDeviceProp::name, e.g. "NVIDIA H200"
  int device_ordinal = 0, device_count = 0;
  // GEMMs: the linear layers of one GPT block (qkv, attn_out, fc, proj) at tokens × hidden × ffn, forward and
  // backward, with cuBLASLt as the engine runs them; the rate is Σ flops / Σ median time (FLOP-weighted).
  int64_t gemm_tokens = 0, gemm_hidden = 0, gemm_ffn = 0, gemm_square = 0;
  double gemm_bf16_tflops = 0, gemm_fp16_tflops = 0;
  double gemm_square_bf16_tflops = 0;  // one forward of square × square × square, bf16
  double gemm_peak_bf16_tflops = 0;    // the datasheet peak it was divided by (from the hardware profile)
  double gemm_efficiency = 0;          // gemm_bf16_tflops / gemm_peak_bf16_tflops; 0 = no peak to divide by
  std::vector<GpuGemmSample> gemms;
  double hbm_GBps = 0;  // device-to-device copy: bytes read + written / time
  int64_t hbm_bytes = 0;
  // PCIe: one copy of pcie_bytes each way, pinned (cudaHostAlloc) and pageable (malloc); then both directions at
  // once on two streams, pinned (each direction's bytes over the time from the common start to its own end).
  int64_t pcie_bytes = 0;
  double h2d_pinned_GBps = 0, d2h_pinned_GBps = 0, h2d_pageable_GBps = 0, d2h_pageable_GBps = 0;
  double h2d_duplex_GBps = 0, d2h_duplex_GBps = 0;
  double nccl_busbw_GBps = 0;  // all-reduce bus bandwidth over the node's GPUs; 0 = not measured
  double seconds = 0;
};

struct ProbeResult {
  int cpus = 0;
  int64_t numa_nodes = 1;  // NUMA nodes with memory (sysfs)
  double memory_GiB = 0;
  DramResult dram;
  CpuAdamResult cpu_adam;
  NvmeResult nvme;
  GpuResult gpu;
  bool quick = false;
  double seconds = 0;
};

core::Result<ProbeResult> run_probe(const ProbeOptions& o);

// How long the probe leaves swapped-out data before it reads it back for the settled figures (a training step's
// state is this old or older when it is read again; docs/SIM.md "NVMe data age").
inline constexpr double kNvmeSettleS = 0.5;

// One swap takes latency + bytes / rate: the line through the median swap times t1 at b1 bytes and t2 at b2 > b1.
// Medians that cross (a noisy disk): the large swap's rate stands and the latency is what is left of t1, ≥ 0.
struct SwapLine {
  double rate_Bps = 0, latency_s = 0;
};
SwapLine fit_swap_line(int64_t b1, double t1, int64_t b2, double t2);

// One NVMe sample through the Swapper, set up as the engine sets it up (zero_copy_swapper_options): per repeat,
// `files` tensors of `bytes` swapped out one after another, then, `settle_s` later, swapped in in the same order
// (a read never follows its own write at once, as in training); the median and the fastest swap of each direction.
// With reps ≥ 2 the first round's writes are left out: they also fallocate, which a training run pays once.
// Warnings of the swapper are appended to `warnings` when given.
core::Result<NvmeSample> measure_nvme(const std::vector<std::string>& paths, const exec::AioConfig& aio, int64_t bytes,
                                      int reps, bool checksums = true, std::vector<std::string>* warnings = nullptr,
                                      int files = 1, double settle_s = 0);

// The first swap after the path rested: per idle time (ascending), the median over `rounds` of a read of `bytes`
// after the path sat idle that long, less a read of another file of that size at once after it. Both files are
// written first and left to settle. Returns (idle s, extra s ≥ 0) per idle time, the extras made non-decreasing.
core::Result<std::vector<std::pair<double, double>>> measure_nvme_idle(const std::vector<std::string>& paths,
                                                                       const exec::AioConfig& aio, int64_t bytes,
                                                                       const std::vector<double>& idles_s, int rounds);

// `base` with cpu.cores / memory_GiB / memory_GBps (triad) and the nvme fields (when measured) overwritten,
// the measured block filled, and name/source saying where the figures came from. When r.gpu.probed: gpu.hbm_GBps
// (the measured rate ÷ the GPU type's default hbm_efficiency, so that the cost model's effective rate is the
// measured one), links.pcie_h2d/d2h_GBps (pinned; pcie_host_GBps too on a one-GPU node), measured
// gemm_efficiency (when in (0, 1]), pcie_*_pageable_GBps and nccl_busbw_GBps (when measured).
core::Hardware apply_probe(core::Hardware base, const ProbeResult& r);

}  // namespace zs::probe
