// The probe (quick mode, a few seconds) and the profile it writes: it must load with load_hardware_file,
// which is what `fit` and `simulate` do with `--hardware FILE`. Also the report's shape and membw helpers.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "core/cost_model.h"
#include "core/hardware.h"
#include "core/json_reader.h"
#include "core/model.h"
#include "exec/thread_pool.h"
#include "probe/host_probe.h"
#include "probe/membw.h"
#include "probe/probe.h"
#include "probe/report.h"

using namespace zs;
namespace fs = std::filesystem;

TEST_CASE("probe --quick measures everything and its profile loads back", "[exec][probe]") {
  std::string dir = "/tmp/zs_test_probe_XXXXXX";
  REQUIRE(::mkdtemp(dir.data()) != nullptr);
  std::vector<std::string> lines;
  probe::ProbeOptions o;
  o.nvme_paths = {dir};
  o.quick = true;
  o.gpu = true;
  o.progress = [&](const std::string& s) { lines.push_back(s); };
  auto r = probe::run_probe(o);
  REQUIRE(r.ok());
  CHECK(r->cpus >= 1);
  CHECK(r->dram.triad_GBps > 0);
  CHECK(r->dram.adam_pattern_GBps > 0);
  CHECK(r->dram.triad_one_thread_GBps > 0);
  CHECK(r->cpu_adam.params_per_s > 0);
  CHECK(r->cpu_adam.threads >= 1);
  CHECK(r->cpu_adam.by_threads.back().threads == r->cpus);
  REQUIRE(r->nvme.measured);
  CHECK(r->nvme.sweep.size() == 2);
  CHECK(r->nvme.best.read_GBps > 0);
  CHECK(r->nvme.best.write_GBps > 0);
  CHECK(r->nvme.best.block_size == 1 << 20);
  CHECK(!r->gpu.probed);
  CHECK(r->gpu.note.find("no GPU") != std::string::npos);
  CHECK(lines.size() >= 5);  // progress: triad, pattern, one per thread count, nvme samples, gpu
  CHECK(r->seconds < 30);
  // Nothing left behind in the measured directory.
  CHECK(fs::is_empty(dir));

  auto base = core::load_hardware("ci-2core");
  REQUIRE(base.ok());
  core::Hardware h = probe::apply_probe(*base, *r);
  const std::string out = dir + "/probed.json";
  REQUIRE(core::write_file_atomic(out, core::hardware_to_json(h)).ok());
  auto back = core::load_hardware_file(out);
  INFO((back.ok() ? std::string() : back.error().message));
  REQUIRE(back.ok());
  CHECK(back->cpu.cores == r->cpus);
  CHECK(back->cpu.numa_nodes == r->numa_nodes);
  CHECK(r->numa_nodes >= 1);
  CHECK(back->cpu.memory_GBps == Approx(r->dram.triad_GBps));
  CHECK(*back->measured.dram_core_GBps == Approx(r->dram.triad_one_thread_GBps));  // one thread: a rank's share
  CHECK(back->nvme.drives == 1);
  CHECK(back->nvme.read_GBps_each == Approx(r->nvme.read_GBps));
  CHECK(*back->measured.nvme_read_GBps == Approx(r->nvme.read_GBps));
  CHECK(*back->measured.nvme_write_GBps == Approx(r->nvme.write_GBps));
  REQUIRE(back->measured.cpu_adam_params_per_s.has_value());
  CHECK(*back->measured.cpu_adam_params_per_s == Approx(r->cpu_adam.params_per_s));
  CHECK(*back->measured.dram_adam_pattern_GBps == Approx(r->dram.adam_pattern_GBps));
  CHECK(*back->measured.aio_block_size == r->nvme.best.block_size);
  CHECK(*back->measured.aio_queue_depth == r->nvme.best.queue_depth);
  REQUIRE(back->measured.nvme_aio_sweep.size() == r->nvme.sweep.size());
  CHECK(back->measured.nvme_aio_sweep[1].queue_depth == r->nvme.sweep[1].queue_depth);
  CHECK(back->measured.nvme_aio_sweep[1].read_GBps == Approx(r->nvme.sweep[1].read_GBps));
  // The per-swap fixed cost: measured (a small swap is slower than its bytes at the bandwidth), under a second.
  CHECK(r->nvme.latency_bytes == 512 << 10);
  CHECK(r->nvme.write_latency_s >= 0);
  CHECK(r->nvme.write_latency_s < 1.0);
  CHECK(r->nvme.read_latency_s < 1.0);
  CHECK(*back->measured.nvme_write_latency_us == Approx(r->nvme.write_latency_s * 1e6));
  CHECK(*back->measured.nvme_read_latency_us == Approx(r->nvme.read_latency_s * 1e6));
  // The sweep reports the median swap and the fastest; the swap model (latency + bytes / rate) is the line through
  // the median small and large swaps, so it underestimates neither (it passes through both unless they cross).
  CHECK(r->nvme.files == 2);
  for (const auto& s : r->nvme.sweep) {
    CHECK(s.read_peak_GBps >= s.read_GBps);
    CHECK(s.write_peak_GBps >= s.write_GBps);
    CHECK(s.read_GBps == Approx(static_cast<double>(r->nvme.file_bytes) / s.read_median_s / 1e9));
  }
  const double big = static_cast<double>(r->nvme.file_bytes);
  CHECK(r->nvme.read_latency_s + big / (r->nvme.read_GBps * 1e9) >= r->nvme.best.read_median_s * (1 - 1e-9));
  CHECK(r->nvme.write_latency_s + big / (r->nvme.write_GBps * 1e9) >= r->nvme.best.write_median_s * (1 - 1e-9));
  CHECK(r->nvme.read_GBps >= r->nvme.best.read_GBps * (1 - 1e-9));
  // Settled figures after a pause, hot ones read back at once; all of them in the profile.
  CHECK(r->nvme.settle_s == 0.1);
  CHECK(r->nvme.hot_read_GBps > 0);
  CHECK(r->nvme.hot_write_GBps > 0);
  CHECK(r->nvme.hot_read_latency_s >= 0);
  CHECK(*back->measured.nvme_settle_s == 0.1);
  CHECK(*back->measured.nvme_hot_read_GBps == Approx(r->nvme.hot_read_GBps));
  CHECK(*back->measured.nvme_hot_write_latency_us == Approx(r->nvme.hot_write_latency_s * 1e6));
  CHECK(back->gpu.name == base->gpu.name);  // GPU and links come from the base
  fs::remove_all(dir);
}

TEST_CASE("probe reports a bad nvme path as an error", "[exec][probe]") {
  probe::ProbeOptions o;
  o.nvme_paths = {"/nonexistent/zerosim"};
  o.quick = true;
  auto r = probe::run_probe(o);
  REQUIRE(!r.ok());
  CHECK(r.error().message.find("/nonexistent/zerosim") != std::string::npos);
}

TEST_CASE("apply_probe folds the GPU figures into the profile, and they load back", "[exec][probe]") {
  auto base = core::load_hardware("h200-box");
  REQUIRE(base.ok());
  REQUIRE(base->gpus_per_node == 1);
  probe::ProbeResult r;  // the host part as a minimal run; the GPU part as probe_gpu would fill it
  r.cpus = 16;
  r.memory_GiB = 128;
  r.dram.triad_GBps = 90;
  r.dram.adam_pattern_GBps = 80;
  r.cpu_adam.params_per_s = 2e9;
  r.cpu_adam.threads = 16;
  probe::GpuResult& g = r.gpu;
  g.probed = true;
  g.device = "NVIDIA H200";
  g.device_count = 1;
  g.gemm_bf16_tflops = 650;
  g.gemm_peak_bf16_tflops = 989;
  g.gemm_efficiency = 650.0 / 989.0;
  g.hbm_GBps = 4000;
  g.h2d_pinned_GBps = 53.5;
  g.d2h_pinned_GBps = 55.25;
  g.h2d_pageable_GBps = 20.5;
  g.d2h_pageable_GBps = 18.75;
  g.h2d_duplex_GBps = 40;
  g.d2h_duplex_GBps = 41;
  g.note = "one GPU: NCCL bus bandwidth not measured";

  const core::Hardware h = probe::apply_probe(*base, r);
  CHECK(h.gpu.name == base->gpu.name);
  CHECK(h.gpu.peak_tflops_bf16 == base->gpu.peak_tflops_bf16);  // the datasheet stays
  REQUIRE(h.measured.gemm_efficiency.has_value());
  CHECK(*h.measured.gemm_efficiency == g.gemm_efficiency);
  const double hbm_eff = core::gpu_type_defaults(h.gpu.name).hbm_efficiency;
  CHECK(h.gpu.hbm_GBps == g.hbm_GBps / hbm_eff);
  CHECK(h.links.pcie_h2d_GBps == 53.5);
  CHECK(h.links.pcie_d2h_GBps == 55.25);
  CHECK(h.links.pcie_host_GBps == 55.25);  // one GPU per node: the uplink is that GPU's link
  CHECK(*h.measured.pcie_h2d_pageable_GBps == 20.5);
  CHECK(*h.measured.pcie_d2h_pageable_GBps == 18.75);
  CHECK(!h.measured.nccl_busbw_GBps.has_value());  // one GPU: nothing measured, nothing stored
  CHECK(h.source.find("GPU (NVIDIA H200") != std::string::npos);
  CHECK(h.source.find("NCCL bus bandwidth not measured") != std::string::npos);
  CHECK(h.source.find("= measured / 0.88, the cost model's hbm_efficiency for this GPU type") != std::string::npos);

  // The cost model sees the measured figures: HBM at the measured rate, one GEMM efficiency for every shape.
  const core::CostModel c = core::cost_model_for(h, core::Precision::bf16);
  CHECK(c.hbm_Bps == Approx(g.hbm_GBps * 1e9).epsilon(1e-12));
  CHECK(c.gemm_efficiency_fixed);
  CHECK(c.gemm_efficiency_max == g.gemm_efficiency);
  CHECK(c.pcie_h2d_Bps == Approx(53.5e9));
  CHECK(c.pcie_d2h_pageable_Bps == Approx(18.75e9));

  // Through the file format and back: the same numbers.
  const std::string path = (fs::temp_directory_path() / "zs_gpu_probe_profile.json").string();
  REQUIRE(core::write_file_atomic(path, core::hardware_to_json(h)).ok());
  auto back = core::load_hardware_file(path);
  INFO((back.ok() ? std::string() : back.error().message));
  REQUIRE(back.ok());
  CHECK(back->gpu.hbm_GBps == Approx(h.gpu.hbm_GBps).epsilon(1e-12));
  CHECK(*back->measured.gemm_efficiency == Approx(g.gemm_efficiency).epsilon(1e-12));
  CHECK(back->links.pcie_h2d_GBps == 53.5);
  CHECK(back->links.pcie_d2h_GBps == 55.25);
  CHECK(back->links.pcie_host_GBps == 55.25);
  CHECK(*back->measured.pcie_h2d_pageable_GBps == 20.5);
  CHECK(*back->measured.pcie_d2h_pageable_GBps == 18.75);
  CHECK(!back->measured.nccl_busbw_GBps.has_value());
  fs::remove(path);

  // Measured NCCL bandwidth is stored; an efficiency over 1 (a peak of another GPU) is not; unprobed: base kept.
  probe::ProbeResult r2 = r;
  r2.gpu.nccl_busbw_GBps = 300;
  r2.gpu.gemm_efficiency = 6500;
  const core::Hardware h2 = probe::apply_probe(*base, r2);
  CHECK(*h2.measured.nccl_busbw_GBps == 300);
  CHECK(!h2.measured.gemm_efficiency.has_value());
  CHECK(h2.source.find("gemm_efficiency not stored") != std::string::npos);
  r2.gpu.probed = false;
  const core::Hardware h3 = probe::apply_probe(*base, r2);
  CHECK(h3.gpu.hbm_GBps == base->gpu.hbm_GBps);
  CHECK(h3.links.pcie_h2d_GBps == base->links.pcie_h2d_GBps);
  CHECK(h3.links.pcie_host_GBps == base->links.pcie_host_GBps);
  CHECK(!h3.measured.pcie_h2d_pageable_GBps.has_value());
  CHECK(!h3.measured.nccl_busbw_GBps.has_value());
  CHECK(h3.source.find("GPU (") == std::string::npos);
}

TEST_CASE("report lists SIMD, libaio, O_DIRECT and the optional parts", "[exec][report]") {
  auto items = probe::build_report({"/tmp", "/nonexistent/zerosim"});
  auto find = [&](const std::string& name) -> const probe::ReportItem* {
    for (const auto& it : items)
      if (it.name == name) return &it;
    return nullptr;
  };
  REQUIRE(find("SIMD flags"));
  REQUIRE(find("CPU Adam kernel"));
  REQUIRE(find("libaio"));
  REQUIRE(find("/tmp"));
  CHECK(find("/tmp")->value.find("O_DIRECT") != std::string::npos);
  REQUIRE(find("/nonexistent/zerosim"));
  CHECK(!find("/nonexistent/zerosim")->ok);
  for (const char* part : {"CUDA", "NCCL", "MPI", "SimGrid", "Qt"}) {
    INFO(part);
    REQUIRE(find(part));
    const auto& v = find(part)->value;
    CHECK((v == "not built" || v.rfind("built (", 0) == 0));
  }
#ifdef ZEROSIM_HAVE_AIO
  CHECK(find("libaio")->ok);
#endif
}

TEST_CASE("membw helpers return plausible figures", "[exec][probe]") {
  exec::ThreadPool pool(1);
  CHECK(probe::adam_pattern_GBps(pool, 1 << 16, 2) > 0.1);
  CHECK(probe::triad_GBps(pool, 1 << 16, 2) > 0.1);
  CHECK(probe::physical_memory_bytes() > 0);
  exec::ThreadPool pool2(3);
  std::vector<int> hits(3, 0);
  pool2.run_per_thread([&](int t) { hits[static_cast<size_t>(t)]++; });
  CHECK(hits == std::vector<int>{1, 1, 1});
}

TEST_CASE("a pool counts how late its workers woke after they slept", "[exec][probe]") {
  exec::ThreadPool pool(2);
  pool.run(2, [](int64_t) {});                                 // the worker has started
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // past its 200 us poll: asleep
  (void)pool.take_wake_samples();
  const auto t0 = std::chrono::steady_clock::now();
  pool.run(4, [](int64_t) {});
  // The caller may finish the 4 tasks alone; the worker still wakes for the run and says how late.
  std::vector<double> w;
  for (int i = 0; i < 500 && w.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    w = pool.take_wake_samples();
  }
  const double since = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(w.size() == 1);
  CHECK(w[0] >= 0);
  CHECK(w[0] <= since);
  CHECK(pool.take_wake_samples().empty());  // taken
  exec::ThreadPool alone(1);                // no workers: nothing to wake
  alone.run(4, [](int64_t) {});
  CHECK(alone.take_wake_samples().empty());
}

TEST_CASE("the engine's threads carry names (top -H, gdb, /proc/PID/task/*/comm)", "[exec][probe]") {
  exec::ThreadPool pool(3);
  pool.run_per_thread([](int) {});  // every worker has started (and named itself)
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator("/proc/self/task")) {
    std::ifstream f(e.path() / "comm");
    std::string n;
    std::getline(f, n);
    names.push_back(n);
  }
  CHECK(std::count(names.begin(), names.end(), "zs-pool-1") >= 1);
  CHECK(std::count(names.begin(), names.end(), "zs-pool-2") >= 1);
  std::thread t([] { exec::set_thread_name("a-name-longer-than-15-bytes"); });
  t.join();  // a name over the kernel's 15 bytes is cut, not refused
}

TEST_CASE("measure_nvme_idle: per idle time the first read's extra over the next, never falling, no file left",
          "[exec][probe][nvme]") {
  const fs::path dir = fs::temp_directory_path() / ("zs_nvme_idle_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  exec::AioConfig aio;
  auto x = probe::measure_nvme_idle({dir.string()}, aio, 1 << 20, {1e-3, 20e-3}, 3);
  REQUIRE(x.ok());
  REQUIRE(x->size() == 2);
  CHECK((*x)[0].first == 1e-3);
  CHECK((*x)[1].first == 20e-3);
  CHECK((*x)[0].second >= 0);
  CHECK((*x)[1].second >= (*x)[0].second);
  CHECK((*x)[1].second < 1.0);
  CHECK(fs::is_empty(dir));
  fs::remove_all(dir);
  auto bad = probe::measure_nvme_idle({"/nonexistent/zs"}, aio, 1 << 20, {1e-3}, 1);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("/nonexistent/zs") != std::string::npos);
}

TEST_CASE("a swap line through two medians", "[exec][probe]") {
  // 1 MiB in 300 us and 9 MiB in 1900 us: 200 us + bytes at 5.24 GB/s.
  const probe::SwapLine l = probe::fit_swap_line(1 << 20, 300e-6, 9 << 20, 1900e-6);
  CHECK(l.rate_Bps == Approx(8.0 * (1 << 20) / 1600e-6));
  CHECK(l.latency_s == Approx(100e-6));
  // Crossing medians: the large swap's rate, what is left of the small one's time as latency.
  const probe::SwapLine c = probe::fit_swap_line(1 << 20, 100e-6, 9 << 20, 90e-6);
  CHECK(c.rate_Bps == Approx((9 << 20) / 90e-6));
  CHECK(c.latency_s == Approx(100e-6 - (1 << 20) / c.rate_Bps));  // 90 us
}
