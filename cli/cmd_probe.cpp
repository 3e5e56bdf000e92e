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
#include "exec/probe.h"

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

core::Json to_json(const exec::ProbeResult& r) {
  core::Json j;
  j["cpu"] = {{"cores", r.cpus}, {"memory_GiB", r.memory_GiB}};
  j["dram"] = {{"triad_GBps", r.dram.triad_GBps},
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
  j["gpu"] = {{"probed", r.gpu.probed}, {"note", r.gpu.note}};
  j["seconds"] = r.seconds;
  return j;
}

void print_text(const exec::ProbeResult& r) {
  std::printf("cpu       %d cpus, %.1f GiB\n", r.cpus, r.memory_GiB);
  std::printf("dram      triad %.1f GB/s, Adam pattern %.1f GB/s (%d threads)\n", r.dram.triad_GBps,
              r.dram.adam_pattern_GBps, r.dram.threads);
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
  std::printf("gpu       %s\n", r.gpu.note.c_str());
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
  sub->add_option("--base", f->base, "hardware profile (name or file) the -o profile starts from")
      ->capture_default_str();
  sub->add_flag("--quick", f->quick, "small arrays and files: a few seconds (DRAM figures may then be cache-bound)");
  sub->add_option("--threads", f->threads, "at most this many threads (default: all CPUs)");
  sub->callback([f, &exit_code] {
    std::optional<core::Hardware> base;
    if (!f->out.empty()) {  // fail on a bad base before spending time measuring
      auto h = core::load_hardware(f->base);
      if (!h) {
        std::cerr << "zerosim probe: --base: " << h.error().message << "\n";
        exit_code = 2;
        return;
      }
      base = *h;
    }
    exec::ProbeOptions o;
    o.quick = f->quick;
    o.gpu = f->gpu;
    o.max_threads = f->threads;
    if (!f->no_nvme) {
      o.nvme_paths = f->nvme_paths;
      if (o.nvme_paths.empty()) o.nvme_paths.push_back(std::filesystem::temp_directory_path().string());
    }
    o.progress = [](const std::string& s) { std::cerr << "probe: " << s << std::endl; };
    auto r = exec::run_probe(o);
    if (!r) {
      std::cerr << "zerosim probe: " << r.error().message << "\n";
      exit_code = r.error().kind == core::ErrorKind::bad_input ? 2 : 3;
      return;
    }
    if (f->json)
      std::cout << to_json(*r).dump(2) << "\n";
    else
      print_text(*r);
    if (base) {
      core::Hardware h = exec::apply_probe(*base, *r);
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
