// The GPU part of `zerosim probe --gpu`: cuBLASLt GEMM rates at a GPT block's shapes (as the engine runs them),
// HBM copy bandwidth, pinned / pageable / duplex PCIe copies, timed with CUDA events (median of repeats after warm-up).
//   auto g = probe_gpu({.peak_tflops_bf16 = hw.gpu.peak_tflops_bf16});   // Result: needs a GPU
//   probe_result.gpu = *g;                                                 // then apply_probe (probe/probe.h)
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "core/status.h"
#include "exec/kernels_ref.h"
#include "probe/probe.h"

namespace zs::probe {

struct GpuProbeOptions {
  int device = 0;  // CUDA ordinal
  // The GPT block whose linear layers are timed: [tokens, hidden] activations, MLP width ffn (GPT-2 MLP: fc, proj).
  int64_t tokens = 8192, hidden = 2048, ffn = 8192;
  int64_t square = 8192;  // plus one square × square × square GEMM
  exec::WeightLayout layout = exec::WeightLayout::out_in;
  // The datasheet peak from the hardware profile (gpu.peak_tflops_bf16): gemm_efficiency = achieved bf16 / peak.
  // peak_gpu_name is that profile's gpu.name: on a device of another GPU type (core::gpu_type_defaults; the name
  // itself for types it does not know) the peak does not apply and gemm_efficiency stays 0, as it does without a
  // peak. Empty: the peak is taken as given.
  double peak_tflops_bf16 = 0;
  std::string peak_gpu_name;
  int64_t hbm_bytes = int64_t{1} << 30;     // per device-to-device copy
  int64_t pcie_bytes = int64_t{256} << 20;  // per host↔device copy
  int warmup = 2, repeats = 7;
  // Seconds, for tests: tokens 2048, hidden 1024, ffn 4096, square 2048, 128 MiB HBM, 64 MiB PCIe, 1 + 3 repeats.
  bool quick = false;
  std::function<void(const std::string&)> progress;  // one line per finished measurement (no newline)
};

// What probe_gpu measures is what ProbeResult::gpu holds (probe/probe.h): one struct, no copy.
using GpuProbeResult = GpuResult;

// Without a usable GPU: ErrorKind::unsupported with cuda_available()'s reason. CUDA failures: ErrorKind::io.
core::Result<GpuProbeResult> probe_gpu(const GpuProbeOptions& o);

}  // namespace zs::probe
