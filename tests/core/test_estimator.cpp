// Parity with DeepSpeed's estimate_zero2/zero3_model_states_mem_needs_all_cold: every row of the worked
// examples in DEEPSPEED.md §1.4 (GiB with two decimals, as DeepSpeed prints them), plus exact integers.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/estimator.h"
#include "core/model.h"

using namespace zs::core;

namespace {

double gib(int64_t b) { return static_cast<double>(b) / (1024.0 * 1024.0 * 1024.0); }
bool same2(int64_t bytes, double table) { return std::abs(std::round(gib(bytes) * 100) / 100 - table) < 1e-9; }

struct Case {
  const char* model;
  int64_t P, L, gpn, nodes;
  // ZeRO-2: opt=cpu (cpu, gpu), opt=none (cpu, gpu)
  double z2_cpu_cpu, z2_cpu_gpu, z2_none_cpu, z2_none_gpu;
  // ZeRO-3 zero_init=1: (cpu,cpu), (none,cpu), (none,none), each (cpu, gpu)
  double z3_cc_cpu, z3_cc_gpu, z3_nc_cpu, z3_nc_gpu, z3_nn_cpu, z3_nn_gpu;
  // ZeRO-3 zero_init=0 CPU column for the three combinations (0 = not given in the table)
  double z3_cc_cpu0, z3_nc_cpu0, z3_nn_cpu0;
};

// L: the token embedding is the largest module (vocab 50257 x hidden 1600 / 4096 / 10240).
const Case kCases[] = {
    {"1.5B 1x1", 1500000000, 80411200, 1, 1, 33.53, 2.79, 8.38, 27.94, 37.72, 0.30, 33.53, 3.09, 0.45, 25.45, 0, 0, 0},
    {"10B 1x1", 10000000000, 205852672, 1, 1, 223.52, 18.63, 55.88, 186.26, 251.46, 0.77, 223.52, 19.39, 1.15, 168.40, 0, 0,
     0},
    {"100B 1x1", 100000000000, 514631680, 1, 1, 2235.17, 186.26, 558.79, 1862.65, 2514.57, 1.92, 2235.17, 188.18, 2.88,
     1678.30, 0, 0, 0},
    {"1.5B 1x8", 1500000000, 80411200, 8, 1, 67.06, 2.79, 67.06, 5.94, 37.72, 0.30, 33.53, 0.65, 3.59, 3.44, 67.06, 67.06,
     67.06},
    {"10B 1x8", 10000000000, 205852672, 8, 1, 447.03, 18.63, 447.03, 39.58, 251.46, 0.77, 223.52, 3.10, 9.20, 21.72, 447.03,
     447.03, 447.03},
    {"100B 1x8", 100000000000, 514631680, 8, 1, 4470.35, 186.26, 4470.35, 395.81, 2514.57, 1.92, 2235.17, 25.20, 23.01,
     211.46, 4470.35, 4470.35, 4470.35},
    {"1.5B 8x8", 1500000000, 80411200, 8, 8, 536.44, 2.79, 67.06, 3.19, 4.71, 0.30, 4.19, 0.34, 3.59, 0.69, 0, 0, 0},
    {"10B 8x8", 10000000000, 205852672, 8, 8, 3576.28, 18.63, 447.03, 21.25, 31.43, 0.77, 27.94, 1.06, 9.20, 3.39, 0, 0, 0},
    {"100B 8x8", 100000000000, 514631680, 8, 8, 35762.79, 186.26, 4470.35, 212.46, 314.32, 1.92, 279.40, 4.83, 23.01, 28.11,
     0, 0, 0},
};

}  // namespace

TEST_CASE("ZeRO-2 estimator reproduces DEEPSPEED.md 1.4 worked examples", "[estimator]") {
  for (const auto& c : kCases) {
    INFO(c.model);
    Estimate e = estimate_zero2_all_cold(c.P, c.gpn, c.nodes);
    REQUIRE(e.rows.size() == 2);
    CHECK(e.rows[0].offload_optimizer == "cpu");
    CHECK(same2(e.rows[0].per_cpu_bytes, c.z2_cpu_cpu));
    CHECK(same2(e.rows[0].per_gpu_bytes, c.z2_cpu_gpu));
    CHECK(e.rows[1].offload_optimizer == "none");
    CHECK(same2(e.rows[1].per_cpu_bytes, c.z2_none_cpu));
    CHECK(same2(e.rows[1].per_gpu_bytes, c.z2_none_gpu));
  }
}

TEST_CASE("ZeRO-3 estimator reproduces DEEPSPEED.md 1.4 worked examples", "[estimator]") {
  for (const auto& c : kCases) {
    INFO(c.model);
    Estimate e = estimate_zero3_all_cold(c.P, c.L, c.gpn, c.nodes);
    REQUIRE(e.rows.size() == 6);
    // Print order: (cpu,cpu) zi=1, zi=0, (none,cpu) zi=1, zi=0, (none,none) zi=1, zi=0.
    CHECK(*e.rows[0].offload_param == "cpu");
    CHECK(e.rows[0].offload_optimizer == "cpu");
    CHECK(*e.rows[0].zero_init);
    CHECK_FALSE(*e.rows[1].zero_init);
    CHECK(*e.rows[4].offload_param == "none");
    CHECK(e.rows[4].offload_optimizer == "none");
    CHECK(same2(e.rows[0].per_cpu_bytes, c.z3_cc_cpu));
    CHECK(same2(e.rows[0].per_gpu_bytes, c.z3_cc_gpu));
    CHECK(same2(e.rows[2].per_cpu_bytes, c.z3_nc_cpu));
    CHECK(same2(e.rows[2].per_gpu_bytes, c.z3_nc_gpu));
    CHECK(same2(e.rows[4].per_cpu_bytes, c.z3_nn_cpu));
    CHECK(same2(e.rows[4].per_gpu_bytes, c.z3_nn_gpu));
    if (c.z3_cc_cpu0 > 0) {
      CHECK(same2(e.rows[1].per_cpu_bytes, c.z3_cc_cpu0));
      CHECK(same2(e.rows[3].per_cpu_bytes, c.z3_nc_cpu0));
      CHECK(same2(e.rows[5].per_cpu_bytes, c.z3_nn_cpu0));
    }
  }
}

TEST_CASE("estimator integers follow Python's int() of the float formulas", "[estimator]") {
  // 1.5B, 1 GPU, ZeRO-2 offload: gpu = 2P, cpu = int(P * 16 * 1.5)
  Estimate z2 = estimate_zero2_all_cold(1500000000, 1, 1);
  CHECK(z2.rows[0].per_gpu_bytes == 3000000000);
  CHECK(z2.rows[0].per_cpu_bytes == 36000000000);
  // 8 GPUs, no offload: gpu = 2P + int(18P/8) = 3e9 + 3.375e9
  Estimate z2b = estimate_zero2_all_cold(1500000000, 8, 1);
  CHECK(z2b.rows[1].per_gpu_bytes == 6375000000);
  // ZeRO-3 (none,cpu) 8 GPUs: 4L + int(2P/8)
  Estimate z3 = estimate_zero3_all_cold(1500000000, 80411200, 8, 1);
  CHECK(z3.rows[2].per_gpu_bytes == 4 * 80411200 + 375000000);
  // an odd P exercises truncation: int(18 * 1000003 / 3) = 6000018
  Estimate z2c = estimate_zero2_all_cold(1000003, 3, 1);
  CHECK(z2c.rows[1].per_gpu_bytes == 2 * 1000003 + 6000018);
}

TEST_CASE("the total_gpus quirk is flagged only where it bites", "[estimator]") {
  auto has_quirk = [](const Estimate& e) {
    for (const auto& q : e.quirks)
      if (q.find("total_gpus") != std::string::npos) return true;
    return false;
  };
  CHECK(has_quirk(estimate_zero2_all_cold(1500000000, 8, 8)));
  CHECK_FALSE(has_quirk(estimate_zero2_all_cold(1500000000, 8, 1)));
}

TEST_CASE("estimator from a shipped model uses DeepSpeed's model_to_params", "[estimator]") {
  auto m = load_model("gpt2-1.5b");
  REQUIRE(m.ok());
  Estimate e = estimate_zero3_all_cold(parameter_count(*m), largest_layer_params(*m), 1, 1);
  // (cpu,cpu): gpu = 4 * largest layer = 4 * 80,411,200
  CHECK(e.rows[0].per_gpu_bytes == 321644800);
  CHECK(e.rows[0].per_cpu_bytes == static_cast<int64_t>(1557611200.0 * 18 * 1.5));
}
