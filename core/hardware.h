// Hardware: a machine profile (configs/hardware/*.json) — GPUs, CPU/DRAM, NVMe, links — with units in key
// names. Optional "measured" figures (written by `zerosim probe`) override documented defaults in the simulator.
//   Result<Hardware> h = load_hardware("dgx-a100-80gb");
//   double hbm = h->gpu.memory_bytes();
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace zs::core {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kGB = 1e9;

struct GpuSpec {
  std::string name;
  double memory_GiB = 0;
  double peak_tflops_fp16 = 0, peak_tflops_bf16 = 0, peak_tflops_fp32 = 0;
  double hbm_GBps = 0;
  int64_t memory_bytes() const { return static_cast<int64_t>(memory_GiB * kGiB); }
};

struct CpuSpec {
  std::string name;       // "AMD EPYC 7742" (optional: picks the CPU-type defaults, docs/SIM.md)
  int64_t sockets = 1;
  int64_t cores = 0;      // per node, all sockets
  double memory_GiB = 0;  // per node
  double memory_GBps = 0;
  // One core's streaming bandwidth (a single-threaded STREAM copy/triad): what a rank with one OpenMP thread moves.
  // Optional; 0: the CPU type's default.
  double core_memory_GBps = 0;
  // NUMA nodes per node (AMD's NPS setting, Intel's sub-NUMA clustering); 0: one per socket. Each holds
  // memory_GBps / numa_nodes of the channels.
  int64_t numa_nodes = 0;
  int64_t numa_node_count() const { return numa_nodes > 0 ? numa_nodes : sockets; }
  int64_t memory_bytes() const { return static_cast<int64_t>(memory_GiB * kGiB); }
};

struct NvmeSpec {
  int64_t drives = 0;  // per node; 0 = no NVMe
  double capacity_GB_each = 0;
  double read_GBps_each = 0, write_GBps_each = 0;
  int64_t capacity_bytes() const { return static_cast<int64_t>(drives * capacity_GB_each * kGB); }
};

struct LinkSpec {
  double pcie_h2d_GBps = 0, pcie_d2h_GBps = 0;  // per GPU, pinned
  double pcie_host_GBps = 0;                    // shared host uplink per node (all GPUs together)
  double nvlink_GBps = 0;                       // per GPU, per direction; 0 = none (PCIe peer traffic)
  double network_GBps_per_node = 0;
  double network_latency_us = 0;
};

// One aio configuration of the probe's NVMe sweep: the median swap's rates at that block size and queue depth.
// A hand-off from stream `from` to a sleeping stream `to` starts the work wake_us late (measured.stream_wake_pairs).
struct StreamWake {
  std::string from, to;
  double wake_us = 0;
};
// The first swap after the NVMe path sat idle for idle_ms takes extra_us more than a swap that follows another
// (`train --write-device-profile` measures it with swaps of 8 MiB or the run's largest, which take all of it).
struct NvmeIdleCost {
  double idle_ms = 0;
  double extra_us = 0;
};

// measured.module_time_scale's entry: a module role (core::ModuleRole's name) and its time factors.
struct ModuleTimeScale {
  std::string role;
  double forward = 1, backward = 1;
};

struct NvmeAioRate {
  int64_t block_size = 0, queue_depth = 0;
  double read_GBps = 0, write_GBps = 0;
};

// Figures measured on the machine (`zerosim probe`); every one optional. Files without them keep loading.
struct MeasuredSpec {
  std::optional<double> dram_triad_GBps;
  std::optional<double> dram_core_GBps;  // one thread's streaming rate (`zerosim probe`, 1 thread)
  std::optional<double> dram_adam_pattern_GBps;
  std::optional<double> cpu_adam_params_per_s;  // all threads
  std::optional<int64_t> cpu_adam_threads;
  // The optimizer's streaming CPU passes on CPU Adam's threads at one run's group size, bytes read and written per
  // second (`train --write-device-profile`, beside the run): the gradients' unscale (in place: fp32 read and write
  // back) and the fp32 → lp cast into another buffer (fp32 read, lp written). Two figures, as the passes differ
  // where it counts: the cast's stores go to lines that are not in the cache, which the CPU reads first (here: 44
  // GB/s for the cast, 65 GB/s for the unscale, docs/notes/engine-validation.md). Absent: the triad; cpu_cast_GBps absent:
  // cpu_pass_GBps (profiles written before the cast had a figure of its own).
  std::optional<double> cpu_pass_GBps;
  std::optional<double> cpu_cast_GBps;
  std::optional<double> nvme_read_GBps, nvme_write_GBps;              // per node, through the swapper
  std::optional<double> nvme_read_latency_us, nvme_write_latency_us;  // fixed cost of one swap through the swapper
  // The figures above are for data last written nvme_settle_s or more before (a training step's state); these
  // are for a tensor read or rewritten at once, which the host's or the drive's write cache still holds. The
  // simulator interpolates by the age of the data (docs/SIM.md, "NVMe data age"). Absent: one set of figures.
  std::optional<double> nvme_settle_s;
  std::optional<double> nvme_hot_read_GBps, nvme_hot_write_GBps, nvme_hot_read_latency_us, nvme_hot_write_latency_us;
  std::optional<int64_t> aio_block_size, aio_queue_depth;  // the aio settings nvme_read/write_GBps were fitted at
  // Every aio configuration the probe timed (empty: only the fitted one). The simulator scales the fitted rates by
  // the ds_config's row over the fitted one (core::apply_aio).
  std::vector<NvmeAioRate> nvme_aio_sweep;
  // What a swap costs on top when the path was idle before it (a virtual disk's back end or a drive's power state
  // waking: on this project's VM +0.1 ms after 20 ms idle, +1 ms after 0.4 s for 13 MB, docs/notes/engine-validation.md), by
  // idle time, ascending; the simulator interpolates in log(idle) and holds the last figure beyond it. Empty: none.
  std::vector<NvmeIdleCost> nvme_idle_wake;
  std::optional<double> gemm_efficiency;  // achieved / peak for training-shaped GEMMs
  // A module role's measured time over the cost model's (forward; backward after backward_time_ratio), where one
  // GEMM rate and one memory-bound bandwidth do not say what the device's kernels achieve per module: the host
  // device's reference kernels run a norm at 2x its bytes' time and an embedding gather at a tenth
  // (`train --write-device-profile` measures them; docs/SIM.md "module time scale"). Absent roles: 1.
  std::vector<ModuleTimeScale> module_time_scale;
  // A module's backward time over its forward time, measured on the device's kernels at the model's shapes
  // (`zerosim train --write-device-profile`). Absent: the FLOP count decides (backward = 2 x forward).
  std::optional<double> backward_time_ratio;
  // How long a stream that waits for work or for another stream's event polls before it sleeps, and how late work
  // starts on a stream that slept (a thread woken onto an idle core). The host device's streams are threads
  // (`train --write-device-profile` measures them); absent: a GPU's hardware queues, no wake-up cost.
  std::optional<double> stream_spin_us, stream_wake_latency_us;
  // How late CPU Adam's pool workers join a run after they slept (the pool idle longer than stream_spin_us): until
  // then the calling thread works alone. Absent: stream_wake_latency_us.
  std::optional<double> cpu_pool_wake_us;
  // How late work starts on a stream that slept, per pair: `from` is the stream whose op's end made the work ready,
  // `to` the sleeping one (stream names as in a trace). The host device's hand-offs differ by pair: on this
  // project's VM all-reduce → CPU Adam took 3-7 us in every step and compute → all-reduce 21-28 us
  // (docs/notes/engine-validation.md "Hand-offs by stream pair"). A pair not listed: stream_wake_latency_us.
  std::vector<StreamWake> stream_wake_pairs;
  std::optional<double> pcie_h2d_pageable_GBps, pcie_d2h_pageable_GBps;
  // The fixed cost of one H2D or D2H besides its bytes (the simulator's default: 10 us, cudaMemcpyAsync's issue
  // and DMA set-up). The host device's copies are memcpys, whose fixed cost is a call (`train
  // --write-device-profile` fits it).
  std::optional<double> pcie_latency_us;
  std::optional<double> nccl_busbw_GBps;
};

struct Hardware {
  std::string name;
  std::string source;  // where the figures come from (datasheet, measurement)
  std::string file;    // path it was loaded from
  int64_t nodes = 1;
  int64_t gpus_per_node = 1;
  GpuSpec gpu;
  CpuSpec cpu;
  NvmeSpec nvme;
  LinkSpec links;
  MeasuredSpec measured;
};

Result<Hardware> load_hardware_file(const std::string& path);
Result<Hardware> load_hardware(const std::string& name_or_path);
// The profile as JSON text in the file format (measured block only when something is set).
std::string hardware_to_json(const Hardware& h);

}  // namespace zs::core
