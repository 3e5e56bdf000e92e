// core/cost_model.cpp: defaults from the hardware profile, measured overrides, the GEMM shape model.
#include <catch2/catch.hpp>
#include <optional>

#include "core/cost_model.h"
#include "core/hardware.h"
#include "core/model.h"

using namespace zs;

namespace {

core::Hardware dgx2() {
  auto h = core::load_hardware("dgx2");
  REQUIRE(h.ok());
  return *h;
}

}  // namespace

TEST_CASE("CPU Adam runs at min(threads x one core's rate, DRAM of the states' NUMA nodes) / 28 B", "[cost]") {
  core::Hardware h = dgx2();  // 2x Xeon Platinum 8168: 48 cores, 256 GB/s, 2 NUMA nodes; one core 12 GB/s
  auto c = core::cost_model_for(h, core::Precision::fp16);  // one rank, every core
  CHECK(c.cpu_core_Bps == Approx(12e9));
  CHECK(c.cpu_adam_core_params_per_s == Approx(48 * 12e9 / 28));
  // One rank's states sit on one of the two sockets' NUMA nodes: half the channels.
  CHECK(c.cpu_adam_dram_params_per_s == Approx(256e9 * 0.5 * 0.65 / 28));
  CHECK(c.cpu_adam_params_per_s == Approx(std::min(c.cpu_adam_core_params_per_s, c.cpu_adam_dram_params_per_s)));
  SECTION("few cores: core-bound") {
    h.cpu.cores = 4;
    auto c2 = core::cost_model_for(h, core::Precision::fp16);
    CHECK(c2.cpu_adam_params_per_s == Approx(4 * 12e9 / 28));
  }
  SECTION("a measured DRAM figure moves the DRAM bound") {
    h.measured.dram_adam_pattern_GBps = 56.0;
    CHECK(core::cost_model_for(h, core::Precision::fp16).cpu_adam_params_per_s == Approx(2e9));
  }
  SECTION("a measured Adam rate overrides both") {
    h.measured.cpu_adam_params_per_s = 1.25e9;
    CHECK(core::cost_model_for(h, core::Precision::fp16).cpu_adam_params_per_s == 1.25e9);
  }
  core::Op op;
  op.kind = core::OpKind::adam_cpu;
  op.elements = 1'000'000'000;
  // Plus DeepSpeed's unscale_and_clip_grads pass: read and write of the fp32 gradients at the streaming DRAM rate.
  CHECK(c.unscale_bytes_per_param == 8);
  CHECK(core::compute_time_s(c, op) == Approx(1e9 / c.cpu_adam_params_per_s + 1e9 * 8 / c.dram_Bps));
  op.kind = core::OpKind::adam_gpu;
  CHECK(core::compute_time_s(c, op) == Approx(1e9 * (30 + 8) / c.hbm_Bps + c.kernel_launch_s));
}

TEST_CASE("the unscale pass and the host cast each take their own measured rate, the triad without them", "[cost]") {
  core::Hardware h = dgx2();  // 256 GB/s datasheet
  core::Op unscale;
  unscale.kind = core::OpKind::adam_cpu;
  unscale.elements = 1'000'000;
  core::Op cast;
  cast.kind = core::OpKind::cast_cpu;
  cast.bytes = 6'000'000;  // fp32 read, bf16 written
  auto c = core::cost_model_for(h, core::Precision::bf16);
  CHECK(c.dram_Bps == Approx(256e9 * 0.5 * 0.75));  // one rank: its NUMA node's half of the channels
  CHECK(c.cast_Bps == c.dram_Bps);
  CHECK(core::compute_time_s(c, cast) == Approx(6e6 / (256e9 * 0.5 * 0.75)));
  h.measured.dram_triad_GBps = 100.0;
  c = core::cost_model_for(h, core::Precision::bf16);
  CHECK(c.cast_Bps == Approx(100e9));
  // A profile from before the cast had a figure of its own: cpu_pass_GBps prices both.
  h.measured.cpu_pass_GBps = 65.0;
  c = core::cost_model_for(h, core::Precision::bf16);
  CHECK(c.dram_Bps == Approx(65e9));
  CHECK(c.cast_Bps == Approx(65e9));
  h.measured.cpu_cast_GBps = 44.0;
  c = core::cost_model_for(h, core::Precision::bf16);
  CHECK(c.dram_Bps == Approx(65e9));
  CHECK(core::compute_time_s(c, cast) == Approx(6e6 / 44e9));
  CHECK(core::compute_time_s(c, unscale) == Approx(1e6 / c.cpu_adam_params_per_s + 8e6 / 65e9));
  bool named = false;
  for (const auto& [what, how] : c.provenance) named = named || (what == "cpu_cast" && how.find("44.0 GB/s") != std::string::npos);
  CHECK(named);
}

TEST_CASE("a measured backward/forward time ratio prices backward ops; forwards and recomputes keep the FLOPs",
          "[cost]") {
  core::Hardware h = dgx2();
  auto c = core::cost_model_for(h, core::Precision::fp16);
  CHECK(c.backward_time_ratio == 0);
  CHECK(c.stream_wake_s == 0);  // a GPU's queues: no wake-up unless measured
  core::Op f;
  f.kind = core::OpKind::forward;
  f.layer = 3;
  f.gemm_flops = 1e12;
  f.mem_bound_bytes = 4'000'000'000;
  core::Op b = f;
  b.kind = core::OpKind::backward;
  b.gemm_flops = 2e12;
  b.mem_bound_bytes = 8'000'000'000;
  const double launch_f = static_cast<double>(core::kernel_count(c, f)) * c.kernel_launch_s;
  const double launch_b = static_cast<double>(core::kernel_count(c, b)) * c.kernel_launch_s;
  const double work_b = 2e12 / (c.peak_flops * c.block_backward_efficiency) + 8e9 / c.hbm_Bps;
  CHECK(core::compute_time_s(c, b) == Approx(launch_b + work_b));
  CHECK(c.pcie_latency_s == Approx(10e-6));  // a GPU's copy: issue + DMA set-up, unless measured
  h.measured.pcie_latency_us = 0.4;
  h.measured.backward_time_ratio = 1.5;
  h.measured.stream_spin_us = 200;
  h.measured.stream_wake_latency_us = 35;
  auto m = core::cost_model_for(h, core::Precision::fp16);
  CHECK(m.backward_time_ratio == 1.5);
  CHECK(m.stream_spin_s == Approx(200e-6));
  CHECK(m.stream_wake_s == Approx(35e-6));
  CHECK(m.cpu_pool_wake_s == Approx(35e-6));  // no measured.cpu_pool_wake_us: the stream's wake-up
  h.measured.cpu_pool_wake_us = 60;
  CHECK(core::cost_model_for(h, core::Precision::fp16).cpu_pool_wake_s == Approx(60e-6));
  h.measured.cpu_pool_wake_us.reset();
  // A stream pair's own wake-up; the other pairs take the stream's.
  CHECK(core::stream_wake_for(m, core::Stream::comm, core::Stream::cpu_adam) == Approx(35e-6));
  h.measured.stream_wake_pairs = {{"comm", "cpu_adam", 4.5}};
  const auto mp = core::cost_model_for(h, core::Precision::fp16);
  CHECK(core::stream_wake_for(mp, core::Stream::comm, core::Stream::cpu_adam) == Approx(4.5e-6));
  CHECK(core::stream_wake_for(mp, core::Stream::cpu_adam, core::Stream::comm) == Approx(35e-6));
  h.measured.stream_wake_pairs.clear();
  CHECK(m.pcie_latency_s == Approx(0.4e-6));
  CHECK(m.cpu_pool_threads == h.cpu.cores);  // no measured.cpu_adam_threads: the cores
  const double fwd = core::compute_time_s(m, f);
  CHECK(fwd == Approx(launch_f + 1e12 / (m.peak_flops * m.block_forward_efficiency) + 4e9 / m.hbm_Bps));
  CHECK(core::compute_time_s(m, b) == Approx(launch_b + work_b * 1.5 / 2));
  core::Op r = f;
  r.kind = core::OpKind::recompute;
  CHECK(core::compute_time_s(m, r) == Approx(core::compute_time_s(c, r)));
}

TEST_CASE("a sleeping CPU pool: the caller alone until the workers join, T threads' work at 1", "[cost]") {
  core::CostModel c;
  c.cpu_pool_threads = 4;
  // 1 ms of work on 4 threads; the workers join 0.2 ms in: that 0.2 ms did a quarter of its work.
  CHECK(core::cpu_pool_wake_extra_s(c, 1e-3, 0.2e-3) == Approx(0.2e-3 * 3 / 4));
  CHECK(core::cpu_pool_wake_extra_s(c, 1e-3, 0) == 0);
  CHECK(core::cpu_pool_wake_extra_s(c, 1e-3, -1e-3) == 0);  // awake before the op started
  // Workers that never join in time: the caller does all of it, 4 ms, 3 ms more.
  CHECK(core::cpu_pool_wake_extra_s(c, 1e-3, 10e-3) == Approx(3e-3));
  c.cpu_pool_threads = 1;
  CHECK(core::cpu_pool_wake_extra_s(c, 1e-3, 0.2e-3) == 0);
}

TEST_CASE("a measured per-role time scale multiplies that role's compute, forward and backward apart", "[cost]") {
  core::Hardware h = dgx2();
  core::Op f;
  f.kind = core::OpKind::forward;
  f.layer = 0;
  f.gemm_flops = 1e12;
  f.mem_bound_bytes = 4'000'000'000;
  f.role = core::ModuleRole::attn_out;
  core::Op b = f;
  b.kind = core::OpKind::backward;
  core::Op r = f;
  r.kind = core::OpKind::recompute;
  core::Op other = f;
  other.role = core::ModuleRole::mlp_in;
  const auto c = core::cost_model_for(h, core::Precision::fp16);
  h.measured.module_time_scale = {{"attn_out", 1.5, 0.8}};
  const auto m = core::cost_model_for(h, core::Precision::fp16);
  CHECK(core::compute_time_s(m, f) == Approx(1.5 * core::compute_time_s(c, f)));
  CHECK(core::compute_time_s(m, r) == Approx(1.5 * core::compute_time_s(c, r)));
  CHECK(core::compute_time_s(m, b) == Approx(0.8 * core::compute_time_s(c, b)));
  CHECK(core::compute_time_s(m, other) == Approx(core::compute_time_s(c, other)));
  bool named = false;
  for (const auto& [what, how] : m.provenance)
    named = named || (what == "module_time_scale" && how.find("attn_out 1.50 / 0.80") != std::string::npos);
  CHECK(named);
}

TEST_CASE("link, NVMe and pageable figures come from the profile unless measured", "[cost]") {
  core::Hardware h = dgx2();
  auto c = core::cost_model_for(h, core::Precision::fp16);
  CHECK(c.pcie_h2d_Bps == 12e9);
  CHECK(c.pcie_host_Bps == 48e9);
  CHECK(c.pcie_h2d_pageable_Bps == Approx(6e9));
  CHECK(c.nvme_read_Bps == Approx(8 * 3.2e9 * 0.8));
  CHECK(c.nic_Bps == Approx(100e9 * 0.85));
  h.measured.pcie_h2d_pageable_GBps = 7.5;
  h.measured.nvme_read_GBps = 20.0;
  h.measured.nccl_busbw_GBps = 130.0;
  auto m = core::cost_model_for(h, core::Precision::fp16);
  CHECK(m.pcie_h2d_pageable_Bps == 7.5e9);
  CHECK(m.nvme_read_Bps == 20e9);
  CHECK(m.nvlink_Bps == 130e9);
  CHECK(c.nvme_read_latency_s == 50e-6);
  CHECK(c.nvme_write_latency_s == 50e-6);
  h.measured.nvme_read_latency_us = 120.0;
  h.measured.nvme_write_latency_us = 340.0;
  auto l = core::cost_model_for(h, core::Precision::fp16);
  CHECK(l.nvme_read_latency_s == Approx(120e-6));
  CHECK(l.nvme_write_latency_s == Approx(340e-6));
}

TEST_CASE("peak FLOPs follow the training dtype", "[cost]") {
  core::Hardware h = dgx2();  // V100: fp16 125, no bf16, fp32 15.7
  CHECK(core::cost_model_for(h, core::Precision::fp16).peak_flops == Approx(125e12));
  CHECK(core::cost_model_for(h, core::Precision::bf16).peak_flops == Approx(15.7e12));  // no bf16 tensor cores
  CHECK(core::cost_model_for(h, core::Precision::fp32).peak_flops == Approx(15.7e12));
}

TEST_CASE("GEMM efficiency depends on the shape", "[cost]") {
  auto c = core::cost_model_for(dgx2(), core::Precision::fp16);
  const double big = core::gemm_efficiency(c, 8192, 8192, 8192);
  CHECK(big <= c.gemm_efficiency_max);
  CHECK(big > 0.95 * c.gemm_efficiency_max);
  CHECK(core::gemm_efficiency(c, 1024, 1024, 1024) < big);
  CHECK(core::gemm_efficiency(c, 8, 8192, 8192) < 0.1);         // skinny: memory-bound
  CHECK(core::gemm_efficiency(c, 128 * 81, 128, 4096) < 0.55);  // 81 tiles on 80 SMs: two waves
  SECTION("a measured efficiency replaces the shape model") {
    core::Hardware h = dgx2();
    h.measured.gemm_efficiency = 0.6;
    auto m = core::cost_model_for(h, core::Precision::fp16);
    CHECK(core::gemm_efficiency(m, 8, 8, 8) == 0.6);
    CHECK(core::gemm_efficiency(m, 8192, 8192, 8192) == 0.6);
  }
}

TEST_CASE("model shapes set per-family efficiencies and kernel counts", "[cost]") {
  auto m = core::load_model("gpt2-1.5b");
  REQUIRE(m.ok());
  auto c = core::cost_model_for(dgx2(), core::Precision::fp16);
  core::apply_model_shapes(c, *m, 4 * 1024);
  CHECK(c.block_forward_efficiency > 0.5);
  CHECK(c.block_forward_efficiency <= c.gemm_efficiency_max);
  CHECK(c.block_backward_efficiency > 0.5);
  CHECK(c.head_efficiency > 0.5);
  CHECK(c.block_forward_gemm_flops == Approx(2.0 * 4096 * 12 * 1600.0 * 1600.0).epsilon(0.01));
  core::Op op;
  op.kind = core::OpKind::forward;
  op.layer = 3;
  op.gemm_flops = c.block_forward_gemm_flops;
  op.mem_bound_bytes = 1'000'000'000;
  CHECK(core::kernel_count(c, op) == c.kernels_per_block_forward);
  const double expect = op.gemm_flops / (c.peak_flops * c.block_forward_efficiency) + 1e9 / c.hbm_Bps +
                        static_cast<double>(c.kernels_per_block_forward) * c.kernel_launch_s;
  CHECK(core::compute_time_s(c, op) == Approx(expect));
  op.kind = core::OpKind::backward;
  op.gemm_flops *= 2;
  CHECK(core::kernel_count(c, op) == 2 * c.kernels_per_block_forward);
}

TEST_CASE("the ds_config's aio settings scale the probe's NVMe rates by its sweep row", "[cost]") {
  core::Hardware h = dgx2();
  h.measured.nvme_read_GBps = 3.0;
  h.measured.nvme_write_GBps = 2.0;
  h.measured.aio_block_size = 1 << 20;
  h.measured.aio_queue_depth = 8;
  h.measured.nvme_aio_sweep = {{1 << 20, 8, 2.8, 1.9}, {256 << 10, 32, 1.4, 1.52}};
  core::AioConfig aio;  // DeepSpeed's defaults: 1 MiB blocks, queue depth 8 = the fitted row
  auto c = core::cost_model_for(h, core::Precision::fp16);
  core::apply_aio(c, h, aio);
  CHECK(c.nvme_read_Bps == Approx(3.0e9));
  CHECK(c.nvme_write_Bps == Approx(2.0e9));
  aio.block_size = 256 << 10;
  aio.queue_depth = 32;
  auto d = core::cost_model_for(h, core::Precision::fp16);
  core::apply_aio(d, h, aio);
  CHECK(d.nvme_read_Bps == Approx(3.0e9 * 1.4 / 2.8));
  CHECK(d.nvme_write_Bps == Approx(2.0e9 * 1.52 / 1.9));
  auto said = [](const core::CostModel& m) {
    for (const auto& [k, v] : m.provenance)
      if (k == "nvme_aio") return v;
    return std::string();
  };
  CHECK_THAT(said(d), Catch::Contains("block_size 262144, queue_depth 32") && Catch::Contains("x 0.500"));
  aio.queue_depth = 4;  // not in the sweep: rates stay, and the provenance says so
  auto e = core::cost_model_for(h, core::Precision::fp16);
  core::apply_aio(e, h, aio);
  CHECK(e.nvme_read_Bps == Approx(3.0e9));
  CHECK_THAT(said(e), Catch::Contains("was not probed"));
  h.measured.nvme_aio_sweep.clear();  // a profile without a sweep: nothing changes, nothing said
  auto f = core::cost_model_for(h, core::Precision::fp16);
  core::apply_aio(f, h, aio);
  CHECK(f.nvme_read_Bps == Approx(3.0e9));
  CHECK(said(f).empty());
}

TEST_CASE("a measured NVMe idle wake-up loads into the cost model, interpolated in log(idle)", "[cost]") {
  core::Hardware h = dgx2();
  CHECK(core::cost_model_for(h, core::Precision::fp16).nvme_idle_wake.empty());
  CHECK(core::nvme_idle_extra_s(core::cost_model_for(h, core::Precision::fp16), 1.0) == 0);
  h.measured.nvme_idle_wake = {{3, 50}, {30, 250}, {300, 750}};  // ms, us
  const auto c = core::cost_model_for(h, core::Precision::fp16);
  REQUIRE(c.nvme_idle_wake.size() == 3);
  CHECK(c.nvme_idle_wake[1].first == Approx(0.03));
  CHECK(c.nvme_idle_wake[1].second == Approx(250e-6));
  CHECK(core::nvme_idle_extra_s(c, 0) == 0);
  CHECK(core::nvme_idle_extra_s(c, 1.5e-3) == Approx(25e-6));  // below the first point: in proportion
  CHECK(core::nvme_idle_extra_s(c, 3e-3) == Approx(50e-6));
  CHECK(core::nvme_idle_extra_s(c, std::sqrt(3e-3 * 30e-3)) == Approx(150e-6));  // halfway in log
  CHECK(core::nvme_idle_extra_s(c, 0.3) == Approx(750e-6));
  CHECK(core::nvme_idle_extra_s(c, 60.0) == Approx(750e-6));  // beyond: the last figure
  bool listed = false;
  for (const auto& [k, v] : c.provenance)
    if (k == "nvme_idle_wake") listed = v.find("+250 us after 30 ms") != std::string::npos;
  CHECK(listed);
}

TEST_CASE("measured hot NVMe figures load into the cost model and price young data", "[cost]") {
  core::Hardware h = dgx2();
  h.measured.nvme_read_GBps = 2.0;
  h.measured.nvme_write_GBps = 2.5;
  h.measured.nvme_read_latency_us = 500;
  h.measured.nvme_write_latency_us = 400;
  auto plain = core::cost_model_for(h, core::Precision::fp16);
  CHECK(plain.nvme_settle_s == 0);
  CHECK(core::nvme_swap_time_s(plain, true, 2'000'000'000, 0.0) == Approx(1.0 + 500e-6));
  h.measured.nvme_settle_s = 0.5;
  h.measured.nvme_hot_read_GBps = 4.0;
  h.measured.nvme_hot_write_GBps = 5.0;
  h.measured.nvme_hot_read_latency_us = 100;
  h.measured.nvme_hot_write_latency_us = 600;  // slower fixed cost than settled: the link takes the lower
  auto c = core::cost_model_for(h, core::Precision::fp16);
  CHECK(c.nvme_settle_s == 0.5);
  CHECK(core::nvme_swap_time_s(c, true, 2'000'000'000, 0.0) == Approx(0.5 + 100e-6));
  CHECK(core::nvme_swap_time_s(c, true, 2'000'000'000, 0.25) == Approx(0.5 + 100e-6 + 0.5 * (0.5 + 400e-6)));
  CHECK(core::nvme_swap_time_s(c, true, 2'000'000'000, 9.0) == Approx(1.0 + 500e-6));
  CHECK(core::nvme_swap_time_s(c, false, 2'500'000'000, 0.0) == Approx(0.5 + 600e-6));
  CHECK(core::nvme_link_Bps(c, true) == Approx(4e9));
  CHECK(core::nvme_link_latency_s(c, false) == Approx(400e-6));
  CHECK(core::nvme_link_latency_s(c, true) == Approx(100e-6));
  // The link is never slower than any swap it carries.
  for (double age : {0.0, 0.1, 0.5, 2.0})
    for (bool rd : {true, false})
      CHECK(core::nvme_swap_time_s(c, rd, 1'000'000, age) >=
            core::nvme_link_latency_s(c, rd) + 1e6 / core::nvme_link_Bps(c, rd) - 1e-15);
}

// Each launcher's rule, from its source: torch/distributed/run.py (config_from_args: OMP_NUM_THREADS=1 when
// nproc_per_node > 1 and unset), accelerate/utils/launch.py (prepare_deepspeed_cmd_env sets none; the DeepSpeed path
// runs torchrun), deepspeed/launcher/launch.py (main: OMP_NUM_THREADS only with --bind_cores_to_rank, from
// deepspeed/utils/numa.py get_numactl_cmd: physical cores // local ranks).
TEST_CASE("the launcher decides each rank's CPU threads", "[cost][launch]") {
  using core::Launcher;
  auto threads = [](Launcher l, int64_t ranks, bool bind = false, std::optional<int64_t> omp = std::nullopt) {
    core::LaunchSettings s;
    s.launcher = l;
    s.bind_cores_to_rank = bind;
    s.omp_threads_per_rank = omp;
    return core::resolve_cpu_threads(s, 128, ranks);
  };
  CHECK(threads(Launcher::torchrun, 8).per_rank == 1);
  CHECK(threads(Launcher::torchrun, 8).node_active == 8);
  CHECK(threads(Launcher::torchrun, 1).per_rank == 128);
  CHECK(threads(Launcher::accelerate, 4).per_rank == 1);
  CHECK(threads(Launcher::accelerate, 1).per_rank == 128);
  CHECK(threads(Launcher::deepspeed, 8).per_rank == 128);
  CHECK(threads(Launcher::deepspeed, 8).node_active == 128);  // oversubscribed: the cores time-share
  CHECK(threads(Launcher::deepspeed, 8, true).per_rank == 16);
  CHECK(threads(Launcher::deepspeed, 3, true).per_rank == 42);  // floor; the leftover cores idle
  CHECK(threads(Launcher::torchrun, 8, false, 6).per_rank == 6);
  CHECK(threads(Launcher::torchrun, 8, false, 6).node_active == 48);
  CHECK(threads(Launcher::torchrun, 8).why.find("OMP_NUM_THREADS=1") != std::string::npos);
}

TEST_CASE("the run's CPU passes: its threads, one core's rate, the NUMA nodes that hold the states", "[cost][launch]") {
  auto h = core::load_hardware("dgx-a100-80gb");  // 2x EPYC 7742, NPS4: 8 NUMA nodes, 409.6 GB/s; one core 28 GB/s
  REQUIRE(h.ok());
  auto c = core::cost_model_for(*h, core::Precision::bf16);
  core::LaunchSettings torchrun;
  torchrun.launcher = core::Launcher::torchrun;
  SECTION("torchrun, 8 ranks: one thread each is the bound") {
    core::apply_launch(c, *h, torchrun, 8);
    CHECK(c.cpu_threads_per_rank == 1);
    CHECK(c.cpu_threads_active == 8);
    CHECK(c.cpu_numa_home == 8);
    CHECK(c.cpu_adam_params_per_s == Approx(8 * 28e9 / 28));            // under 409.6 x 0.65
    CHECK(c.dram_Bps == Approx(8 * 28e9));                              // under 409.6 x 0.75
  }
  SECTION("deepspeed --bind_cores_to_rank, 2 ranks: 64 threads each, the states on 2 of 8 NUMA nodes") {
    core::LaunchSettings ds;
    ds.bind_cores_to_rank = true;
    core::apply_launch(c, *h, ds, 2);
    CHECK(c.cpu_threads_per_rank == 64);
    CHECK(c.cpu_numa_home == 2);
    CHECK(c.cpu_adam_params_per_s == Approx(409.6e9 * 2 / 8 * 0.65 / 28));
    CHECK(c.dram_Bps == Approx(409.6e9 * 2 / 8 * 0.75));
  }
  SECTION("a probe's CPU Adam rate scales linearly to fewer threads") {
    h->measured.cpu_adam_params_per_s = 4e9;
    h->measured.cpu_adam_threads = 16;
    core::apply_launch(c, *h, torchrun, 4);  // 4 threads running
    CHECK(c.cpu_adam_params_per_s == Approx(1e9));
    core::apply_launch(c, *h, torchrun, 32);
    CHECK(c.cpu_adam_params_per_s == Approx(4e9));
  }
}

// HF transformers' modeling code read op by op (modeling_llama.py LlamaDecoderLayer, LlamaRMSNorm,
// apply_rotary_pos_emb; modeling_gpt2.py GPT2Block, NewGELUActivation).
TEST_CASE("an HF eager block's kernels by architecture and attention implementation", "[cost][launch]") {
  auto llama = core::load_model("llama2-7b");
  auto gpt2 = core::load_model("gpt2-1.5b");
  REQUIRE(llama.ok());
  REQUIRE(gpt2.ok());
  // 7 projections, 2 RMSNorms of 8, rotary 2 x 5, SiLU and gate 2, 2 residual adds, fused attention + contiguous 2.
  CHECK(core::eager_kernels_per_block(*llama, core::AttnImplementation::sdpa) == 39);
  CHECK(core::eager_kernels_per_block(*llama, core::AttnImplementation::eager) == 42);
  // c_attn, c_proj, c_fc, c_proj; 2 LayerNorms; tanh GELU 8; 2 adds, 2 dropouts; attention 2.
  CHECK(core::eager_kernels_per_block(*gpt2, core::AttnImplementation::flash_attention_2) == 20);
}

TEST_CASE("an op costs max(its GPU time, its kernels' host time); attention at its implementation's rate",
          "[cost][launch]") {
  auto h = core::load_hardware("dgx-a100-80gb");
  auto m = core::load_model("llama2-7b");
  REQUIRE(h.ok());
  REQUIRE(m.ok());
  core::RunSettings run;
  run.gpus_per_node = 8;
  run.seq_len = 2048;
  run.hidden = 4096;
  auto s = core::parse_ds_config_text(R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2}})",
                                      "inline", run);
  REQUIRE(s.ok());
  auto c = core::cost_model_for_run(*h, *m, *s);
  CHECK(c.kernels_per_block_forward == 39);
  CHECK(c.kernel_host_s == Approx(15e-6));
  CHECK(c.attention_efficiency == Approx(0.54));
  core::Op op;
  op.kind = core::OpKind::forward;
  op.layer = 0;
  op.gemm_flops = c.block_forward_gemm_flops;
  const double kernels = static_cast<double>(core::kernel_count(c, op));
  CHECK(core::compute_time_s(c, op) ==
        Approx(op.gemm_flops / (c.peak_flops * c.block_forward_efficiency) + kernels * c.kernel_launch_s));
  op.attention_flops = 0.25 * op.gemm_flops;
  CHECK(core::compute_time_s(c, op) ==
        Approx(0.75 * op.gemm_flops / (c.peak_flops * c.block_forward_efficiency) +
               0.25 * op.gemm_flops / (c.peak_flops * 0.54) + kernels * c.kernel_launch_s));
  op.attention_flops = 0;
  op.gemm_flops = 1e6;  // a tiny module: the host launches slower than the GPU runs it
  CHECK(core::compute_time_s(c, op) == Approx(static_cast<double>(core::kernel_count(c, op)) * 15e-6));
  s->run.launch.attn_implementation = core::AttnImplementation::eager;
  CHECK(core::cost_model_for_run(*h, *m, *s).attention_efficiency == Approx(0.105));
}

// Eager attention writes and reads its [b, a, s, s] scores: its time per score is the same whatever the head dim,
// while its FLOPs per score are 4 × head_dim. The published figure is at head dim 128.
TEST_CASE("eager attention's efficiency falls with the head dim below the benchmark's 128", "[cost][launch]") {
  auto h = core::load_hardware("dgx-a100-80gb");
  auto m = core::load_model("llama2-7b");  // head dim 128
  REQUIRE(h.ok());
  REQUIRE(m.ok());
  core::RunSettings run;
  run.gpus_per_node = 8;
  run.seq_len = 2048;
  run.hidden = m->hidden;
  run.launch.attn_implementation = core::AttnImplementation::eager;
  auto s = core::parse_ds_config_text(R"({"train_micro_batch_size_per_gpu": 1})", "inline", run);
  REQUIRE(s.ok());
  CHECK(core::cost_model_for_run(*h, *m, *s).attention_efficiency == Approx(0.105));
  core::ModelSpec narrow = *m;
  narrow.heads = 128;  // head dim 32
  narrow.kv_heads = 128;
  narrow.head_dim = 32;
  CHECK(core::cost_model_for_run(*h, narrow, *s).attention_efficiency == Approx(0.105 * 32 / 128));
  s->run.launch.attn_implementation = core::AttnImplementation::sdpa;  // the fused kernel keeps its figure
  CHECK(core::cost_model_for_run(*h, narrow, *s).attention_efficiency == Approx(0.54));
}
