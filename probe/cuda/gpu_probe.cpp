// The GPU probe (gpu_probe.h). Device work is timed with CUDA events on one non-blocking stream: warm-up calls,
// then `repeats` timed windows; the median window stands. Pageable copies are timed on the host clock around the
// call and a stream synchronize: the CPU stages them through a driver buffer, partly before the call returns.
#include "probe/cuda/gpu_probe.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include "core/cost_model.h"
#include "exec/cuda/cuda_check.h"
#include "exec/cuda/cuda_device.h"
#include "exec/cuda/gemm.h"
#include "exec/dtype.h"

namespace zs::probe {
namespace {

struct DeviceFree {
  void operator()(void* p) const { (void)cudaFree(p); }
};
struct PinnedFree {
  void operator()(void* p) const { (void)cudaFreeHost(p); }
};
struct EventDestroy {
  void operator()(cudaEvent_t e) const { (void)cudaEventDestroy(e); }
};
struct StreamDestroy {
  void operator()(cudaStream_t s) const { (void)cudaStreamDestroy(s); }
};
using DevicePtr = std::unique_ptr<void, DeviceFree>;
using PinnedPtr = std::unique_ptr<void, PinnedFree>;
using EventPtr = std::unique_ptr<std::remove_pointer_t<cudaEvent_t>, EventDestroy>;
using StreamPtr = std::unique_ptr<std::remove_pointer_t<cudaStream_t>, StreamDestroy>;

core::Result<DevicePtr> device_alloc(int64_t bytes) {
  void* p = nullptr;
  ZS_CUDA_TRY(cudaMalloc(&p, static_cast<size_t>(bytes)));
  return DevicePtr(p);
}
core::Result<PinnedPtr> pinned_alloc(int64_t bytes) {
  void* p = nullptr;
  ZS_CUDA_TRY(cudaHostAlloc(&p, static_cast<size_t>(bytes), cudaHostAllocDefault));
  std::memset(p, 1, static_cast<size_t>(bytes));
  return PinnedPtr(p);
}
core::Result<EventPtr> make_event() {
  cudaEvent_t e = nullptr;
  ZS_CUDA_TRY(cudaEventCreate(&e));
  return EventPtr(e);
}
core::Result<StreamPtr> make_stream() {
  cudaStream_t s = nullptr;
  ZS_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return StreamPtr(s);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t k = v.size();
  return k == 0 ? 0 : k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
}

std::string fmt(const char* f, double a) {
  char b[64];
  std::snprintf(b, sizeof b, f, a);
  return b;
}

struct Timer {
  cudaStream_t s;
  int warmup, repeats;
  EventPtr a, b;
};

core::Result<Timer> make_timer(cudaStream_t s, const GpuProbeOptions& o) {
  auto a = make_event();
  if (!a) return a.error();
  auto b = make_event();
  if (!b) return b.error();
  return Timer{s, o.warmup, o.repeats, std::move(*a), std::move(*b)};
}

// Median seconds of one `issue()` (which queues device work on t.s), timed by events around it.
template <class F>
core::Result<double> time_events(Timer& t, F&& issue) {
  for (int w = 0; w < t.warmup; ++w) ZS_TRY(issue());
  ZS_CUDA_TRY(cudaStreamSynchronize(t.s));
  std::vector<double> v;
  for (int r = 0; r < std::max(t.repeats, 1); ++r) {
    ZS_CUDA_TRY(cudaEventRecord(t.a.get(), t.s));
    ZS_TRY(issue());
    ZS_CUDA_TRY(cudaEventRecord(t.b.get(), t.s));
    ZS_CUDA_TRY(cudaEventSynchronize(t.b.get()));
    float ms = 0;
    ZS_CUDA_TRY(cudaEventElapsedTime(&ms, t.a.get(), t.b.get()));
    v.push_back(ms * 1e-3);
  }
  return median(v);
}

// The same on the host clock, `issue()` followed by a stream synchronize (pageable copies).
template <class F>
core::Result<double> time_host(Timer& t, F&& issue) {
  using Clock = std::chrono::steady_clock;
  for (int w = 0; w < t.warmup; ++w) ZS_TRY(issue());
  ZS_CUDA_TRY(cudaStreamSynchronize(t.s));
  std::vector<double> v;
  for (int r = 0; r < std::max(t.repeats, 1); ++r) {
    const auto t0 = Clock::now();
    ZS_TRY(issue());
    ZS_CUDA_TRY(cudaStreamSynchronize(t.s));
    v.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return median(v);
}

// Random 16-bit values in [-1, 1) into `n` elements of each of `dst` (inputs of the GEMMs: real data, not zeros,
// which would let the tensor cores run cooler and faster than training does).
template <class T>
core::Status fill_random(const std::vector<void*>& dst, int64_t n) {
  std::vector<T> h(static_cast<size_t>(n));
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (auto& e : h) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;  // xorshift64
    e = exec::from_f32<T>(static_cast<float>(static_cast<int64_t>(x >> 40) - (int64_t{1} << 23)) / float(1 << 23));
  }
  for (void* d : dst) ZS_CUDA_TRY(cudaMemcpy(d, h.data(), sizeof(T) * h.size(), cudaMemcpyHostToDevice));
  return {};
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Whether a profile's GPU is this device: the same GPU type of the cost model, or the same name for others.
bool same_gpu(const std::string& profile_gpu, const std::string& device) {
  const core::GpuTypeDefaults &a = core::gpu_type_defaults(profile_gpu), &b = core::gpu_type_defaults(device);
  if (*a.match) return &a == &b;
  return lower(profile_gpu) == lower(device);
}

struct Linear {
  const char* name;
  int64_t in, out;
};

// One GPT block's linear layers, forward then backward (dW + dinp), each `calls` times back to back per timed
// window (so cuBLASLt's per-call host work overlaps the previous GEMM, as in the engine). Returns Σ flops / Σ time.
template <class T>
core::Result<double> time_block(exec::CublasLtGemm& g, Timer& t, const GpuProbeOptions& o, const char* dtype,
                                const std::vector<Linear>& lin, void* X, void* Y, void* W, void* dW, void* dX, void* dY,
                                int calls, std::vector<GpuGemmSample>& out) {
  double flops = 0, seconds = 0;
  const int64_t N = o.tokens;
  for (const bool bwd : {false, true}) {
    for (const Linear& l : lin) {
      auto s = time_events(t, [&]() -> core::Status {
        for (int c = 0; c < calls; ++c) {
          if (bwd)
            ZS_TRY(g.matmul_backward<T>(static_cast<T*>(dX), static_cast<T*>(dW), nullptr, static_cast<const T*>(dY),
                                        static_cast<const T*>(X), static_cast<const T*>(W), N, l.in, l.out, o.layout,
                                        exec::GradWrite::overwrite, false, t.s));
          else
            ZS_TRY(g.matmul_forward<T>(static_cast<T*>(Y), static_cast<const T*>(X), static_cast<const T*>(W), nullptr,
                                       N, l.in, l.out, o.layout, t.s));
        }
        return {};
      });
      if (!s) return s.error();
      GpuGemmSample x;
      x.name = l.name;
      x.dtype = dtype;
      x.backward = bwd;
      x.tokens = N;
      x.in = l.in;
      x.out = l.out;
      x.flops = (bwd ? 4.0 : 2.0) * static_cast<double>(N) * static_cast<double>(l.in) * static_cast<double>(l.out);
      x.seconds = *s / calls;
      x.tflops = x.flops / x.seconds / 1e12;
      flops += x.flops;
      seconds += x.seconds;
      out.push_back(x);
    }
  }
  return flops / seconds / 1e12;
}

core::Status probe_gemms(const GpuProbeOptions& o, Timer& t, GpuResult& r,
                         const std::function<void(const std::string&)>& say) {
  const int64_t N = o.tokens, C = o.hidden, F = o.ffn, S = o.square;
  const std::vector<Linear> lin = {{"qkv", C, 3 * C}, {"attn_out", C, C}, {"fc", C, F}, {"proj", F, C}};
  int64_t elems = S * S;  // every buffer holds the largest operand of any GEMM: activations, weights, gradients
  for (const Linear& l : lin) elems = std::max({elems, N * l.in, N * l.out, l.in * l.out});
  const int64_t bytes = elems * 2;
  std::vector<DevicePtr> buf;
  for (int i = 0; i < 6; ++i) {
    auto p = device_alloc(bytes);
    if (!p) return p.error();
    buf.push_back(std::move(*p));
  }
  void *X = buf[0].get(), *Y = buf[1].get(), *W = buf[2].get(), *dW = buf[3].get(), *dX = buf[4].get(),
       *dY = buf[5].get();
  auto g = exec::CublasLtGemm::create();
  if (!g) return g.error();
  const int calls = o.quick ? 2 : 5;
  r.gemm_tokens = N;
  r.gemm_hidden = C;
  r.gemm_ffn = F;
  r.gemm_square = S;

  ZS_TRY(fill_random<exec::bf16_t>({X, W, dY}, elems));
  auto bf = time_block<exec::bf16_t>(*g, t, o, "bf16", lin, X, Y, W, dW, dX, dY, calls, r.gemms);
  if (!bf) return bf.error();
  r.gemm_bf16_tflops = *bf;
  std::string why_no_peak;
  if (o.peak_tflops_bf16 <= 0)
    why_no_peak = "no datasheet bf16 peak given: gemm_efficiency not computed";
  else if (!o.peak_gpu_name.empty() && !same_gpu(o.peak_gpu_name, r.device))
    why_no_peak = "the profile's GPU '" + o.peak_gpu_name + "' is not this " + r.device +
                  ": its datasheet peak does not apply, gemm_efficiency not computed";
  if (why_no_peak.empty()) {
    r.gemm_peak_bf16_tflops = o.peak_tflops_bf16;
    r.gemm_efficiency = *bf / o.peak_tflops_bf16;
  } else {
    r.note = why_no_peak;
  }
  say("gpu: GEMM bf16 " + fmt("%.1f", *bf) + " TFLOPS over a GPT block's linear layers, forward + backward" +
      (why_no_peak.empty()
           ? " = " + fmt("%.3f", r.gemm_efficiency) + " of the datasheet " + fmt("%.0f", o.peak_tflops_bf16)
           : " (" + why_no_peak + ")"));
  // The square GEMM (bf16, forward): what cuBLAS reaches on an ideal shape.
  auto sq = time_events(t, [&]() -> core::Status {
    for (int c = 0; c < calls; ++c)
      ZS_TRY(g->matmul_forward<exec::bf16_t>(static_cast<exec::bf16_t*>(Y), static_cast<const exec::bf16_t*>(X),
                                             static_cast<const exec::bf16_t*>(W), nullptr, S, S, S, o.layout, t.s));
    return {};
  });
  if (!sq) return sq.error();
  GpuGemmSample x;
  x.name = "square";
  x.dtype = "bf16";
  x.tokens = x.in = x.out = S;
  x.flops = 2.0 * static_cast<double>(S) * static_cast<double>(S) * static_cast<double>(S);
  x.seconds = *sq / calls;
  x.tflops = x.flops / x.seconds / 1e12;
  r.gemms.push_back(x);
  r.gemm_square_bf16_tflops = x.tflops;
  say("gpu: GEMM bf16 " + std::to_string(S) + "^3: " + fmt("%.1f", x.tflops) + " TFLOPS");

  ZS_TRY(fill_random<exec::fp16_t>({X, W, dY}, elems));
  auto fp = time_block<exec::fp16_t>(*g, t, o, "fp16", lin, X, Y, W, dW, dX, dY, calls, r.gemms);
  if (!fp) return fp.error();
  r.gemm_fp16_tflops = *fp;
  say("gpu: GEMM fp16 " + fmt("%.1f", *fp) + " TFLOPS over the same GEMMs");
  return {};
}

core::Status probe_hbm(const GpuProbeOptions& o, Timer& t, GpuResult& r,
                       const std::function<void(const std::string&)>& say) {
  auto src = device_alloc(o.hbm_bytes);
  if (!src) return src.error();
  auto dst = device_alloc(o.hbm_bytes);
  if (!dst) return dst.error();
  ZS_CUDA_TRY(cudaMemsetAsync(src->get(), 1, static_cast<size_t>(o.hbm_bytes), t.s));
  auto s = time_events(t, [&]() -> core::Status {
    ZS_CUDA_TRY(
        cudaMemcpyAsync(dst->get(), src->get(), static_cast<size_t>(o.hbm_bytes), cudaMemcpyDeviceToDevice, t.s));
    return {};
  });
  if (!s) return s.error();
  r.hbm_bytes = o.hbm_bytes;
  r.hbm_GBps = 2.0 * static_cast<double>(o.hbm_bytes) / *s / 1e9;
  say("gpu: HBM device-to-device copy " + fmt("%.0f", r.hbm_GBps) + " GB/s (read + written)");
  return {};
}

core::Status probe_pcie(const GpuProbeOptions& o, Timer& t, GpuResult& r,
                        const std::function<void(const std::string&)>& say) {
  const int64_t n = o.pcie_bytes;
  const auto bytes = static_cast<size_t>(n);
  const double GB = static_cast<double>(n) / 1e9;
  r.pcie_bytes = n;
  auto dev = device_alloc(n);
  if (!dev) return dev.error();
  auto dev2 = device_alloc(n);
  if (!dev2) return dev2.error();
  auto pin = pinned_alloc(n);
  if (!pin) return pin.error();
  auto pin2 = pinned_alloc(n);
  if (!pin2) return pin2.error();
  auto copy = [&](void* d, const void* s, cudaMemcpyKind k, cudaStream_t st) {
    return [=]() -> core::Status {
      ZS_CUDA_TRY(cudaMemcpyAsync(d, s, bytes, k, st));
      return {};
    };
  };
  auto h2d = time_events(t, copy(dev->get(), pin->get(), cudaMemcpyHostToDevice, t.s));
  if (!h2d) return h2d.error();
  auto d2h = time_events(t, copy(pin->get(), dev->get(), cudaMemcpyDeviceToHost, t.s));
  if (!d2h) return d2h.error();
  r.h2d_pinned_GBps = GB / *h2d;
  r.d2h_pinned_GBps = GB / *d2h;
  say("gpu: PCIe pinned H2D " + fmt("%.1f", r.h2d_pinned_GBps) + " GB/s, D2H " + fmt("%.1f", r.d2h_pinned_GBps) +
      " GB/s");
  {
    std::unique_ptr<char, decltype(&std::free)> page(static_cast<char*>(std::malloc(bytes)), &std::free);
    if (!page) return core::io_error("gpu probe: cannot allocate " + std::to_string(n >> 20) + " MiB of host memory");
    std::memset(page.get(), 1, bytes);  // every page present: the copy, not first-touch faults, is timed
    auto ph2d = time_host(t, copy(dev->get(), page.get(), cudaMemcpyHostToDevice, t.s));
    if (!ph2d) return ph2d.error();
    auto pd2h = time_host(t, copy(page.get(), dev->get(), cudaMemcpyDeviceToHost, t.s));
    if (!pd2h) return pd2h.error();
    r.h2d_pageable_GBps = GB / *ph2d;
    r.d2h_pageable_GBps = GB / *pd2h;
    say("gpu: PCIe pageable H2D " + fmt("%.1f", r.h2d_pageable_GBps) + " GB/s, D2H " +
        fmt("%.1f", r.d2h_pageable_GBps) + " GB/s");
  }
  // Duplex: H2D on t.s and D2H on a second stream, started together by one event.
  auto s2 = make_stream();
  if (!s2) return s2.error();
  auto e2 = make_event();
  if (!e2) return e2.error();
  std::vector<double> up, down;
  for (int i = -t.warmup; i < std::max(t.repeats, 1); ++i) {
    ZS_CUDA_TRY(cudaEventRecord(t.a.get(), t.s));
    ZS_CUDA_TRY(cudaStreamWaitEvent(s2->get(), t.a.get(), 0));
    ZS_CUDA_TRY(cudaMemcpyAsync(dev->get(), pin->get(), bytes, cudaMemcpyHostToDevice, t.s));
    ZS_CUDA_TRY(cudaMemcpyAsync(pin2->get(), dev2->get(), bytes, cudaMemcpyDeviceToHost, s2->get()));
    ZS_CUDA_TRY(cudaEventRecord(t.b.get(), t.s));
    ZS_CUDA_TRY(cudaEventRecord(e2->get(), s2->get()));
    ZS_CUDA_TRY(cudaEventSynchronize(t.b.get()));
    ZS_CUDA_TRY(cudaEventSynchronize(e2->get()));
    if (i < 0) continue;
    float ms_up = 0, ms_down = 0;
    ZS_CUDA_TRY(cudaEventElapsedTime(&ms_up, t.a.get(), t.b.get()));
    ZS_CUDA_TRY(cudaEventElapsedTime(&ms_down, t.a.get(), e2->get()));
    up.push_back(ms_up * 1e-3);
    down.push_back(ms_down * 1e-3);
  }
  r.h2d_duplex_GBps = GB / median(up);
  r.d2h_duplex_GBps = GB / median(down);
  say("gpu: PCIe pinned both ways at once: H2D " + fmt("%.1f", r.h2d_duplex_GBps) + " GB/s, D2H " +
      fmt("%.1f", r.d2h_duplex_GBps) + " GB/s");
  return {};
}

}  // namespace

core::Result<GpuProbeResult> probe_gpu(const GpuProbeOptions& opts) {
  const auto t_start = std::chrono::steady_clock::now();
  const exec::CudaAvailability a = exec::cuda_available();
  if (!a.usable) return core::Error{core::ErrorKind::unsupported, a.reason + "; GPU probes skipped"};
  if (opts.device < 0 || opts.device >= a.device_count)
    return core::bad_input("gpu probe: device " + std::to_string(opts.device) + " does not exist (" +
                           std::to_string(a.device_count) + " visible)");
  GpuProbeOptions o = opts;
  if (o.quick) {
    o.tokens = std::min<int64_t>(o.tokens, 2048);
    o.hidden = std::min<int64_t>(o.hidden, 1024);
    o.ffn = std::min<int64_t>(o.ffn, 4096);
    o.square = std::min<int64_t>(o.square, 2048);
    o.hbm_bytes = std::min<int64_t>(o.hbm_bytes, 128 << 20);
    o.pcie_bytes = std::min<int64_t>(o.pcie_bytes, 64 << 20);
    o.warmup = std::min(o.warmup, 1);
    o.repeats = std::min(o.repeats, 3);
  }
  if (o.tokens <= 0 || o.hidden <= 0 || o.ffn <= 0 || o.square <= 0 || o.hbm_bytes <= 0 || o.pcie_bytes <= 0)
    return core::bad_input("gpu probe: tokens, hidden, ffn, square and the copy sizes must be positive");
  auto say = [&](const std::string& s) {
    if (o.progress) o.progress(s);
  };
  ZS_CUDA_TRY(cudaSetDevice(o.device));
  cudaDeviceProp prop{};
  ZS_CUDA_TRY(cudaGetDeviceProperties(&prop, o.device));
  GpuResult r;
  r.device = prop.name;
  r.device_ordinal = o.device;
  r.device_count = a.device_count;
  auto stream = make_stream();
  if (!stream) return stream.error();
  auto t = make_timer(stream->get(), o);
  if (!t) return t.error();
  ZS_TRY(probe_gemms(o, *t, r, say));
  ZS_TRY(probe_hbm(o, *t, r, say));
  ZS_TRY(probe_pcie(o, *t, r, say));
  // One GPU's probe: NCCL's all-reduce needs two or more (nccl-tests' all_reduce_perf gives busbw on a node).
  const std::string nccl = a.device_count == 1 ? "one GPU: NCCL bus bandwidth not measured"
                                               : std::to_string(a.device_count) +
                                                     " GPUs visible: NCCL bus bandwidth not measured (the probe "
                                                     "times one GPU; nccl-tests' all_reduce_perf gives it)";
  say("gpu: " + nccl);
  r.note = r.note.empty() ? nccl : r.note + "; " + nccl;
  r.probed = true;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  return r;
}

}  // namespace zs::probe
