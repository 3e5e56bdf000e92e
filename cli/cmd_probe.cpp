// `zerosim probe`: measure this machine (DRAM, CPU Adam, NVMe through the swapper; GPU when built with CUDA),
// print the figures (or JSON), and with -o write a hardware profile that `fit` and `simulate` accept.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "core/hardware.h"
#include "core/json_reader.h"
#include "probe/probe.h"
#include "cli/cuda_module.h"

namespace zs::cli {
namespace {

struct ProbeFlags {
  std::vector<std::string> nvme_paths;
  bool no_nvme = false;
  bool gpu = false;
  bool json = false;
  bool quick = false;
  int threads = 0;
  std::string out;
  std::string base = "ci-2core";
};

core::Json to_json(const probe::ProbeResult& r) {
  core::Json j;
  j["cpu"] = {{"cores", r.cpus}, {"numa_nodes", r.numa_nodes}, {"memory_GiB", r.memory_GiB}};
  j["dram"] = {{"triad_GBps", r.dram.triad_GBps},
               {"triad_one_thread_GBps", r.dram.triad_one_thread_GBps},
               {"adam_pattern_GBps", r.dram.adam_pattern_GBps},
               {"threads", r.dram.threads},
               {"working_set_bytes", r.dram.working_set_bytes}};
  core::Json by = core::Json::array();
  for (const auto& a : r.cpu_adam.by_threads) by.push_back({{"threads", a.threads}, {"params_per_s", a.params_per_s}});
  j["cpu_adam"] = {{"params_per_s", r.cpu_adam.params_per_s},
                   {"threads", r.cpu_adam.threads},
                   {"kernel", r.cpu_adam.kernel},
                   {"by_threads", by}};
  if (r.nvme.measured) {
    core::Json sweep = core::Json::array();
    for (const auto& s : r.nvme.sweep)
      sweep.push_back({{"block_size", s.block_size},
                       {"queue_depth", s.queue_depth},
                       {"read_GBps", s.read_GBps},
                       {"write_GBps", s.write_GBps},
                       {"read_peak_GBps", s.read_peak_GBps},
                       {"write_peak_GBps", s.write_peak_GBps}});
    j["nvme"] = {{"read_GBps", r.nvme.read_GBps},
                 {"write_GBps", r.nvme.write_GBps},
                 {"block_size", r.nvme.best.block_size},
                 {"queue_depth", r.nvme.best.queue_depth},
                 {"paths", r.nvme.paths},
                 {"direct", r.nvme.direct},
                 {"file_bytes", r.nvme.file_bytes},
                 {"files", r.nvme.files},
                 {"settle_s", r.nvme.settle_s},
                 {"hot_read_GBps", r.nvme.hot_read_GBps},
                 {"hot_write_GBps", r.nvme.hot_write_GBps},
                 {"hot_read_latency_us", r.nvme.hot_read_latency_s * 1e6},
                 {"hot_write_latency_us", r.nvme.hot_write_latency_s * 1e6},
                 {"read_latency_us", r.nvme.read_latency_s * 1e6},
                 {"write_latency_us", r.nvme.write_latency_s * 1e6},
                 {"latency_bytes", r.nvme.latency_bytes},
                 {"warnings", r.nvme.warnings},
                 {"sweep", sweep}};
  } else {
    j["nvme"] = nullptr;
  }
  const probe::GpuResult& g = r.gpu;
  j["gpu"] = {{"probed", g.probed}, {"note", g.note}};
  if (g.probed) {
    core::Json gemms = core::Json::array();
    for (const auto& x : g.gemms)
      gemms.push_back({{"name", x.name},
                       {"dtype", x.dtype},
                       {"pass", x.backward ? "backward" : "forward"},
                       {"tokens", x.tokens},
                       {"in", x.in},
                       {"out", x.out},
                       {"flops", x.flops},
                       {"seconds", x.seconds},
                       {"tflops", x.tflops}});
    j["gpu"].update({{"device", g.device},
                     {"device_ordinal", g.device_ordinal},
                     {"device_count", g.device_count},
                     {"gemm_tokens", g.gemm_tokens},
                     {"gemm_hidden", g.gemm_hidden},
                     {"gemm_ffn", g.gemm_ffn},
                     {"gemm_square", g.gemm_square},
                     {"gemm_bf16_tflops", g.gemm_bf16_tflops},
                     {"gemm_fp16_tflops", g.gemm_fp16_tflops},
                     {"gemm_square_bf16_tflops", g.gemm_square_bf16_tflops},
                     {"gemm_peak_bf16_tflops", g.gemm_peak_bf16_tflops},
                     {"gemm_efficiency", g.gemm_efficiency},
                     {"hbm_GBps", g.hbm_GBps},
                     {"hbm_bytes", g.hbm_bytes},
                     {"pcie_bytes", g.pcie_bytes},
                     {"h2d_pinned_GBps", g.h2d_pinned_GBps},
                     {"d2h_pinned_GBps", g.d2h_pinned_GBps},
                     {"h2d_pageable_GBps", g.h2d_pageable_GBps},
                     {"d2h_pageable_GBps", g.d2h_pageable_GBps},
                     {"h2d_duplex_GBps", g.h2d_duplex_GBps},
                     {"d2h_duplex_GBps", g.d2h_duplex_GBps},
                     {"nccl_busbw_GBps", g.nccl_busbw_GBps > 0 ? core::Json(g.nccl_busbw_GBps) : core::Json()},
                     {"seconds", g.seconds},
                     {"gemms", gemms}});
  }
  j["seconds"] = r.seconds;
  return j;
}

void print_text(const probe::ProbeResult& r) {
  std::printf("cpu       %d cpus, %.1f GiB, %lld NUMA node(s)\n", r.cpus, r.memory_GiB,
              static_cast<long long>(r.numa_nodes));
  std::printf("dram      triad %.1f GB/s, Adam pattern %.1f GB/s (%d threads); triad %.1f GB/s on one thread\n",
              r.dram.triad_GBps, r.dram.adam_pattern_GBps, r.dram.threads, r.dram.triad_one_thread_GBps);
  for (const auto& a : r.cpu_adam.by_threads)
    std::printf("cpu_adam  %2d thread%s %.3g params/s = %.1f GB/s at 28 B/param (%s)\n", a.threads,
                a.threads > 1 ? "s:" : ": ", a.params_per_s, a.params_per_s * 28 / 1e9, r.cpu_adam.kernel.c_str());
  if (r.nvme.measured) {
    for (const auto& s : r.nvme.sweep)
      std::printf("nvme      block %8lld qd %3d: read %.2f GB/s, write %.2f GB/s (median; fastest %.2f, %.2f)\n",
                  static_cast<long long>(s.block_size), s.queue_depth, s.read_GBps, s.write_GBps, s.read_peak_GBps,
                  s.write_peak_GBps);
    std::printf("recommended aio: {\"block_size\": %lld, \"queue_depth\": %d}  (read %.2f GB/s, write %.2f GB/s)\n",
                static_cast<long long>(r.nvme.best.block_size), r.nvme.best.queue_depth, r.nvme.best.read_GBps,
                r.nvme.best.write_GBps);
    std::printf(
        "nvme      one swap: read %.0f us + bytes at %.2f GB/s, write %.0f us + bytes at %.2f GB/s (fit through "
        "the median %lld- and %lld-byte swaps)\n",
        r.nvme.read_latency_s * 1e6, r.nvme.read_GBps, r.nvme.write_latency_s * 1e6, r.nvme.write_GBps,
        static_cast<long long>(r.nvme.latency_bytes), static_cast<long long>(r.nvme.file_bytes));
    std::printf(
        "nvme      that is for data %.2f s old or more; read back at once: read %.0f us + bytes at %.2f GB/s, "
        "write %.0f us + bytes at %.2f GB/s\n",
        r.nvme.settle_s, r.nvme.hot_read_latency_s * 1e6, r.nvme.hot_read_GBps, r.nvme.hot_write_latency_s * 1e6,
        r.nvme.hot_write_GBps);
    for (const auto& w : r.nvme.warnings) std::printf("warning: %s\n", w.c_str());
  } else {
    std::printf("nvme      not measured\n");
  }
  const probe::GpuResult& g = r.gpu;
  if (g.probed) {
    std::printf("gpu       %s (device %d of %d)\n", g.device.c_str(), g.device_ordinal, g.device_count);
    std::printf(
        "gpu       GEMM bf16 %.1f TFLOPS, fp16 %.1f TFLOPS: a GPT block's linear layers forward + backward "
        "(tokens %lld, hidden %lld, ffn %lld)\n",
        g.gemm_bf16_tflops, g.gemm_fp16_tflops, static_cast<long long>(g.gemm_tokens),
        static_cast<long long>(g.gemm_hidden), static_cast<long long>(g.gemm_ffn));
    if (g.gemm_efficiency > 0)
      std::printf("gpu       GEMM efficiency %.3f of the datasheet %.0f TFLOPS bf16\n", g.gemm_efficiency,
                  g.gemm_peak_bf16_tflops);
    std::printf("gpu       GEMM bf16 %lld^3 %.1f TFLOPS\n", static_cast<long long>(g.gemm_square),
                g.gemm_square_bf16_tflops);
    std::printf("gpu       HBM copy %.0f GB/s (read + written, %lld MiB)\n", g.hbm_GBps,
                static_cast<long long>(g.hbm_bytes >> 20));
    std::printf(
        "gpu       PCIe pinned H2D %.1f GB/s, D2H %.1f GB/s; pageable H2D %.1f GB/s, D2H %.1f GB/s (%lld MiB)\n",
        g.h2d_pinned_GBps, g.d2h_pinned_GBps, g.h2d_pageable_GBps, g.d2h_pageable_GBps,
        static_cast<long long>(g.pcie_bytes >> 20));
    std::printf("gpu       PCIe pinned both ways at once: H2D %.1f GB/s, D2H %.1f GB/s\n", g.h2d_duplex_GBps,
                g.d2h_duplex_GBps);
    if (g.nccl_busbw_GBps > 0) std::printf("gpu       NCCL all-reduce bus bandwidth %.1f GB/s\n", g.nccl_busbw_GBps);
  }
  if (!g.note.empty()) std::printf("gpu       %s\n", g.note.c_str());
}

}  // namespace

void add_probe(CLI::App& app, int& exit_code) {
  auto f = std::make_shared<ProbeFlags>();
  auto* sub = app.add_subcommand("probe", "measure this machine: DRAM, CPU Adam, NVMe (and GPU) for the simulator");
  sub->add_option("--nvme-path", f->nvme_paths,
                  "directory on the drive to measure (repeat to stripe over several); default: the temp directory");
  sub->add_flag("--no-nvme", f->no_nvme, "skip the NVMe measurement");
  sub->add_flag("--gpu", f->gpu, "also probe the GPU (needs a CUDA build and a device)");
  sub->add_flag("--json", f->json, "print the figures as JSON on stdout");
  sub->add_option("-o,--output", f->out, "write a hardware profile with the measured figures to FILE");
  sub->add_option("--base,--hardware", f->base,
                  "hardware profile (name or file) the -o profile starts from; with --gpu, its datasheet peak")
      ->capture_default_str();
  sub->add_flag("--quick", f->quick, "small arrays and files: a few seconds (DRAM figures may then be cache-bound)");
  sub->add_option("--threads", f->threads, "at most this many threads (default: all CPUs)");
  sub->callback([f, &exit_code] {
    // run_probe is host-only: the GPU is probed here (the CUDA module), with the base's peak.
    std::string no_module;
    const CudaModule* cuda = f->gpu ? load_cuda_module(&no_module) : nullptr;
    const bool cuda_gpu = cuda != nullptr;
    std::optional<core::Hardware> base;
    if (!f->out.empty() || cuda_gpu) {  // fail on a bad base before spending time measuring
      auto h = core::load_hardware(f->base);
      if (!h) {
        std::cerr << "zerosim probe: --base: " << h.error().message << "\n";
        exit_code = 2;
        return;
      }
      base = *h;
    }
    probe::ProbeOptions o;
    o.quick = f->quick;
    o.gpu = f->gpu && !cuda_gpu;
    o.max_threads = f->threads;
    if (!f->no_nvme) {
      o.nvme_paths = f->nvme_paths;
      if (o.nvme_paths.empty()) o.nvme_paths.push_back(std::filesystem::temp_directory_path().string());
    }
    o.progress = [](const std::string& s) { std::cerr << "probe: " << s << std::endl; };
    auto r = probe::run_probe(o);
    if (!r) {
      std::cerr << "zerosim probe: " << r.error().message << "\n";
      exit_code = r.error().kind == core::ErrorKind::bad_input ? 2 : 3;
      return;
    }
    if (f->gpu && !cuda_gpu) {
      r->gpu.note = "no GPU probe: " + no_module + "; GPU probes skipped";
      o.progress("gpu: " + r->gpu.note);
    }
    if (cuda_gpu) {
      if (const exec::CudaAvailability a = cuda->available(); !a.usable) {
        r->gpu.note = a.reason + "; GPU probes skipped";  // as without CUDA: the host figures still stand
        o.progress("gpu: " + r->gpu.note);
      } else {
        probe::GpuProbeOptions go;
        go.quick = f->quick;
        go.peak_tflops_bf16 = base->gpu.peak_tflops_bf16;
        go.peak_gpu_name = base->gpu.name;
        go.progress = o.progress;
        auto g = cuda->probe_gpu(go);
        if (!g) {
          std::cerr << "zerosim probe: gpu: " << g.error().message << "\n";
          exit_code = g.error().kind == core::ErrorKind::bad_input ? 2 : 3;
          return;
        }
        r->gpu = std::move(*g);
        if (r->gpu.gemm_efficiency <= 0)
          std::cerr << "probe: gpu: pass --base with this GPU's profile (e.g. h200-box) for gemm_efficiency"
                    << std::endl;
      }
    }
    if (f->json)
      std::cout << to_json(*r).dump(2) << "\n";
    else
      print_text(*r);
    if (base && !f->out.empty()) {
      core::Hardware h = probe::apply_probe(*base, *r);
      core::Status s = core::write_file_atomic(f->out, core::hardware_to_json(h));
      if (!s.ok()) {
        std::cerr << "zerosim probe: " << s.message() << "\n";
        exit_code = 3;
        return;
      }
      auto back = core::load_hardware_file(f->out);  // what fit and simulate will do with it
      if (!back) {
        std::cerr << "zerosim probe: the written profile does not load: " << back.error().message << "\n";
        exit_code = 3;
        return;
      }
      std::cerr << "probe: wrote hardware profile " << f->out << " (base '" << f->base << "')" << std::endl;
    }
    exit_code = 0;
  });
}

}  // namespace zs::cli
