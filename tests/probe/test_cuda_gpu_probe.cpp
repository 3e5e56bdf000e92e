// The GPU probe of `zerosim probe --gpu` (probe/cuda/gpu_probe.h). Visible: without a GPU it refuses as a value
// naming the reason; with one, quick mode succeeds. [.gpu]: every figure positive and plausible against the others.
#include <string>

#include "probe/cuda/gpu_probe.h"
#include "tests/exec/cuda_test_util.h"

using namespace zs;
using namespace zs::exec;
using namespace zs::probe;
using namespace zs::exec::test;

namespace {

GpuProbeOptions quick_options() {
  GpuProbeOptions o;
  o.quick = true;
  return o;
}

// Datasheet dense bf16 peaks of the GPUs a test may meet (configs/hardware); 0 = not known here.
double known_peak_bf16(const std::string& device) {
  if (device.find("H200") != std::string::npos || device.find("H100") != std::string::npos) return 989;
  if (device.find("A100") != std::string::npos) return 312;
  return 0;
}

}  // namespace

TEST_CASE("gpu probe says why without a GPU and runs in quick mode with one", "[cuda][probe]") {
  const CudaAvailability a = cuda_available();
  auto r = probe_gpu(quick_options());
  if (!a.usable) {
    REQUIRE(!r.ok());
    CHECK(r.error().kind == core::ErrorKind::unsupported);
    INFO(r.error().message);
    CHECK(r.error().message.find(a.reason) != std::string::npos);
    CHECK(r.error().message.find("GPU probes skipped") != std::string::npos);
    return;
  }
  INFO((r.ok() ? std::string() : r.error().message));
  REQUIRE(r.ok());
  CHECK(r->probed);
  CHECK(!r->device.empty());
}

TEST_CASE("gpu probe: GEMM, HBM and PCIe figures are positive and plausible", "[.gpu][cuda][probe]") {
  require_gpu();
  GpuProbeOptions o = quick_options();
  std::vector<std::string> lines;
  o.progress = [&](const std::string& s) { lines.push_back(s); };
  {
    cudaDeviceProp p{};
    cuda_ok(cudaGetDeviceProperties(&p, 0));
    o.peak_tflops_bf16 = known_peak_bf16(p.name);
    o.peak_gpu_name = p.name;
  }
  auto r = probe_gpu(o);
  INFO((r.ok() ? std::string() : r.error().message));
  REQUIRE(r.ok());
  const GpuResult& g = *r;
  INFO("device " << g.device << ": GEMM bf16 " << g.gemm_bf16_tflops << " fp16 " << g.gemm_fp16_tflops << " square "
                 << g.gemm_square_bf16_tflops << " TFLOPS, efficiency " << g.gemm_efficiency << "; HBM " << g.hbm_GBps
                 << " GB/s; PCIe pinned " << g.h2d_pinned_GBps << "/" << g.d2h_pinned_GBps << ", pageable "
                 << g.h2d_pageable_GBps << "/" << g.d2h_pageable_GBps << ", duplex " << g.h2d_duplex_GBps << "/"
                 << g.d2h_duplex_GBps << " GB/s; " << g.seconds << " s");
  CHECK(g.probed);
  CHECK(g.gemm_tokens == 2048);  // quick mode's shapes
  CHECK(g.gemm_square == 2048);
  REQUIRE(g.gemms.size() == 17);  // 4 linears × forward/backward × bf16/fp16, plus the square
  for (const auto& x : g.gemms) {
    CHECK(x.tflops > 0);
    CHECK(x.tflops < 5000);
    CHECK(x.flops == Approx((x.backward ? 4.0 : 2.0) * x.tokens * x.in * x.out));
  }
  CHECK(g.gemm_bf16_tflops > 1);
  CHECK(g.gemm_fp16_tflops > 1);
  CHECK(g.gemm_square_bf16_tflops > 1);
  if (o.peak_tflops_bf16 > 0) {
    CHECK(g.gemm_efficiency > 0.05);
    CHECK(g.gemm_efficiency <= 1.2);
    CHECK(g.gemm_peak_bf16_tflops == o.peak_tflops_bf16);
    CHECK(g.gemm_efficiency == Approx(g.gemm_bf16_tflops / o.peak_tflops_bf16));
  } else {
    WARN("no datasheet peak known for " << g.device << ": gemm_efficiency not checked");
  }
  CHECK(g.hbm_GBps > 100);
  CHECK(g.hbm_GBps < 20000);
  CHECK(g.h2d_pinned_GBps > 1);
  CHECK(g.d2h_pinned_GBps > 1);
  CHECK(g.h2d_pinned_GBps < 200);
  CHECK(g.h2d_pageable_GBps > 0);
  CHECK(g.d2h_pageable_GBps > 0);
  CHECK(g.h2d_pinned_GBps > 0.5 * g.h2d_pageable_GBps);
  CHECK(g.d2h_pinned_GBps > 0.5 * g.d2h_pageable_GBps);
  CHECK(g.h2d_duplex_GBps > 0);
  CHECK(g.d2h_duplex_GBps > 0);
  CHECK(g.hbm_GBps > g.h2d_pinned_GBps);
  CHECK(g.hbm_GBps > g.d2h_pinned_GBps);
  CHECK(g.nccl_busbw_GBps == 0);
  CHECK(g.note.find("NCCL bus bandwidth not measured") != std::string::npos);
  CHECK(lines.size() >= 6);
  CHECK(g.seconds < 60);

  // A profile of another GPU: its peak does not apply, and the note says so.
  o.peak_tflops_bf16 = 0.1;
  o.peak_gpu_name = "host (CPU stand-in)";
  o.progress = nullptr;
  auto other = probe_gpu(o);
  REQUIRE(other.ok());
  CHECK(other->gemm_efficiency == 0);
  CHECK(other->note.find("does not apply") != std::string::npos);
}
