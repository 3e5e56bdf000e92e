// GPU benchmarks: cuBLASLt GEMM TFLOPS at training shapes (vs the device's stated dense bf16 peak), attention
// (vs the stated fp32 CUDA-core peak: these kernels do not use tensor cores), GPU Adam and pinned H2D/D2H copies
// (vs the device-to-device copy bandwidth and PCIe rate measured or stated in this run). Every line prints the
// ratio to its limit. Without a GPU it says so and exits 0 (CI builds it; the H200 check runs it).
//   bench_cuda_kernels [--quick]
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "exec/cpu_adam.h"
#include "exec/cuda/attention_gemm.h"
#include "exec/cuda/cuda_device.h"
#include "exec/cuda/gemm.h"
#include "exec/cuda/kernels.cuh"
#include "exec/dtype.h"

using namespace zs::exec;

namespace {

struct Peak {
  const char* match;
  double bf16_dense_tflops, fp32_tflops, pcie_GBps;  // vendor datasheet figures (dense, no sparsity)
};
// H100/H200 SXM: 989 TFLOPS bf16 dense, 67 fp32; A100 SXM: 312 / 19.5; PCIe Gen5 x16 64 GB/s, Gen4 32 GB/s per way.
const Peak kPeaks[] = {{"H200", 989.4, 66.9, 64}, {"H100", 989.4, 66.9, 64}, {"A100", 312, 19.5, 32}};

const Peak* peak_for(const std::string& name) {
  for (const Peak& p : kPeaks)
    if (name.find(p.match) != std::string::npos) return &p;
  return nullptr;
}

#define CHECK_CUDA(x)                                                                          \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      return 1;                                                                                \
    }                                                                                          \
  } while (0)

// Mean seconds per call of f over `iters` after 2 warm-ups, timed with events on stream s.
double time_s(cudaStream_t s, int iters, const std::function<bool()>& f) {
  for (int i = 0; i < 2; ++i)
    if (!f()) return -1;
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  cudaEventRecord(a, s);
  for (int i = 0; i < iters; ++i)
    if (!f()) return -1;
  cudaEventRecord(b, s);
  cudaEventSynchronize(b);
  float ms = 0;
  cudaEventElapsedTime(&ms, a, b);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms * 1e-3 / iters;
}

void row(const std::string& what, double value, const char* unit, double limit, const char* limit_what) {
  if (limit > 0)
    std::printf("%-52s %10.1f %-7s  limit %8.1f (%s)  ratio %.3f\n", what.c_str(), value, unit, limit, limit_what,
                value / limit);
  else
    std::printf("%-52s %10.1f %-7s  limit n/a (%s)\n", what.c_str(), value, unit, limit_what);
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const CudaAvailability a = cuda_available();
  if (!a.usable) {
    std::printf("bench_cuda_kernels: skipped: %s\n", a.reason.c_str());
    return 0;
  }
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  const Peak* pk = peak_for(prop.name);
  std::printf("device: %s, %d SMs, %.1f GiB; peaks %s\n", prop.name, prop.multiProcessorCount,
              prop.totalGlobalMem / 1073741824.0, pk ? "from the datasheet table in this file" : "unknown (ratio n/a)");
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreate(&s));
  const int iters = quick ? 5 : 20;

  // --- GEMMs (bf16, fp32 accumulate) at a 7B-class layer with 8192 tokens per micro-batch ---
  auto gemm = CublasLtGemm::create();
  if (!gemm) {
    std::fprintf(stderr, "%s\n", gemm.error().message.c_str());
    return 1;
  }
  const int64_t N = 8192;
  struct Shape {
    const char* name;
    int64_t in, out;
  };
  const Shape shapes[] = {
      {"qkv 4096->12288", 4096, 12288}, {"mlp up 4096->11008", 4096, 11008}, {"mlp down 11008->4096", 11008, 4096}};
  const int64_t max_w = 11008LL * 12288, max_act = N * 12288;
  bf16_t *x, *w, *y, *dy, *dx, *dw;
  CHECK_CUDA(cudaMalloc(&x, max_act * 2));
  CHECK_CUDA(cudaMalloc(&w, max_w * 2));
  CHECK_CUDA(cudaMalloc(&y, max_act * 2));
  CHECK_CUDA(cudaMalloc(&dy, max_act * 2));
  CHECK_CUDA(cudaMalloc(&dx, max_act * 2));
  CHECK_CUDA(cudaMalloc(&dw, max_w * 2));
  CHECK_CUDA(cudaMemset(x, 0x3c, max_act * 2));
  CHECK_CUDA(cudaMemset(w, 0x3c, max_w * 2));
  CHECK_CUDA(cudaMemset(dy, 0x3c, max_act * 2));
  const double bf16_peak = pk ? pk->bf16_dense_tflops : 0;
  for (const Shape& sh : shapes) {
    const double flops = 2.0 * N * sh.in * sh.out;
    const double f = time_s(s, iters, [&] {
      return gemm->matmul_forward<bf16_t>(y, x, w, nullptr, N, sh.in, sh.out, WeightLayout::out_in, s).ok();
    });
    const double b = time_s(s, iters, [&] {
      return gemm
          ->matmul_backward<bf16_t>(dx, dw, nullptr, dy, x, w, N, sh.in, sh.out, WeightLayout::out_in,
                                    GradWrite::accumulate, false, s)
          .ok();
    });
    if (f < 0 || b < 0) {
      std::fprintf(stderr, "GEMM %s failed\n", sh.name);
      return 1;
    }
    row(std::string("gemm fwd bf16 N=8192 ") + sh.name, flops / f * 1e-12, "TFLOPS", bf16_peak, "bf16 dense peak");
    row(std::string("gemm bwd (dW+dX) bf16 ") + sh.name, 2 * flops / b * 1e-12, "TFLOPS", bf16_peak, "bf16 dense peak");
  }
  cudaFree(x), cudaFree(w), cudaFree(y), cudaFree(dy), cudaFree(dx), cudaFree(dw);

  // --- attention: B=4, T=2048, 32 query heads over 8 kv heads, HD=128, causal ---
  {
    const int64_t B = 4, T_ = quick ? 1024 : 2048, NH = 32, NKV = 8, HD = 128, Nt = B * T_;
    const int64_t ld = (NH + 2 * NKV) * HD;
    bf16_t *qkv, *out, *dout;
    float* lse;
    CHECK_CUDA(cudaMalloc(&qkv, Nt * ld * 2));
    CHECK_CUDA(cudaMalloc(&out, Nt * NH * HD * 2));
    CHECK_CUDA(cudaMalloc(&dout, Nt * NH * HD * 2));
    CHECK_CUDA(cudaMalloc(&lse, B * NH * T_ * 4));
    CHECK_CUDA(cudaMemset(qkv, 0x3c, Nt * ld * 2));
    CHECK_CUDA(cudaMemset(dout, 0x3c, Nt * NH * HD * 2));
    const double fwd_flops = 4.0 * B * NH * T_ * T_ * HD / 2;  // QKᵀ and PV, causal half
    const double f = time_s(s, quick ? 2 : 5, [&] {
      return gpu::attention_forward<bf16_t>(out, lse, qkv, qkv + NH * HD, qkv + (NH + NKV) * HD, ld, ld, B, T_, NH, NKV,
                                            HD, s) == cudaSuccess;
    });
    const double b = time_s(s, quick ? 1 : 3, [&] {
      return gpu::attention_backward<bf16_t>(qkv, qkv + NH * HD, qkv + (NH + NKV) * HD, dout, qkv, qkv + NH * HD,
                                             qkv + (NH + NKV) * HD, lse, ld, ld, B, T_, NH, NKV, HD, s) == cudaSuccess;
    });
    CHECK_CUDA(cudaStreamSynchronize(s));
    const double fp32_peak = pk ? pk->fp32_tflops : 0;
    const std::string shape = "B=4 T=" + std::to_string(T_) + " 32/8 heads HD=128";
    row("attention fwd bf16 " + shape, fwd_flops / f * 1e-12, "TFLOPS", fp32_peak, "fp32 CUDA-core peak");
    // Backward recomputes P twice (query and key passes) plus dq, dk, dv: count the useful 2.5x of forward.
    row("attention bwd bf16 " + shape, 2.5 * fwd_flops / b * 1e-12, "TFLOPS", fp32_peak, "fp32 CUDA-core peak");
    // The same attention as batched cuBLASLt GEMMs (attention_gemm.h, what the engine runs): the causal FLOPs
    // counted as above, against the tensor-core peak (the GEMMs also compute the masked half: 0.5 at most).
    const double gf = time_s(s, quick ? 2 : 5, [&] {
      return attention_forward_gemm<bf16_t>(*gemm, out, lse, qkv, qkv + NH * HD, qkv + (NH + NKV) * HD, ld, ld, B, T_,
                                            NH, NKV, HD, s)
          .ok();
    });
    const double gb = time_s(s, quick ? 1 : 3, [&] {
      return attention_backward_gemm<bf16_t>(*gemm, qkv, qkv + NH * HD, qkv + (NH + NKV) * HD, dout, qkv,
                                             qkv + NH * HD, qkv + (NH + NKV) * HD, lse, ld, ld, B, T_, NH, NKV, HD, s)
          .ok();
    });
    CHECK_CUDA(cudaStreamSynchronize(s));
    row("attention (GEMMs) fwd bf16 " + shape, fwd_flops / gf * 1e-12, "TFLOPS", bf16_peak, "bf16 dense peak");
    row("attention (GEMMs) bwd bf16 " + shape, 2.5 * fwd_flops / gb * 1e-12, "TFLOPS", bf16_peak, "bf16 dense peak");
    cudaFree(qkv), cudaFree(out), cudaFree(dout), cudaFree(lse);
  }

  // --- the LM head of gpt2-355m at micro batch 16 x 1024 (N 16384, C 1024): its GEMMs at the vocabulary 50257,
  // whose odd row length leaves the logits 2-byte aligned, against 50304 (a multiple of 64, as nanoGPT and Megatron
  // pad it); the cross-entropy kernels against the HBM bytes they must move ---
  {
    const int64_t Nh = quick ? 8192 : 16384, C = 1024;
    for (const int64_t V : {int64_t{50257}, int64_t{50304}}) {
      bf16_t *xh, *wv, *logits, *dx, *dwv;
      CHECK_CUDA(cudaMalloc(&xh, Nh * C * 2));
      CHECK_CUDA(cudaMalloc(&wv, V * C * 2));
      CHECK_CUDA(cudaMalloc(&logits, Nh * V * 2));
      CHECK_CUDA(cudaMalloc(&dx, Nh * C * 2));
      CHECK_CUDA(cudaMalloc(&dwv, V * C * 2));
      CHECK_CUDA(cudaMemset(xh, 0x3c, Nh * C * 2));
      CHECK_CUDA(cudaMemset(wv, 0x3c, V * C * 2));
      CHECK_CUDA(cudaMemset(logits, 0x3c, Nh * V * 2));
      const double flops = 2.0 * Nh * C * V;
      const double f = time_s(s, quick ? 3 : 10, [&] {
        return gemm->matmul_forward<bf16_t>(logits, xh, wv, nullptr, Nh, C, V, WeightLayout::out_in, s).ok();
      });
      const double b = time_s(s, quick ? 3 : 10, [&] {
        return gemm
            ->matmul_backward<bf16_t>(dx, dwv, nullptr, logits, xh, wv, Nh, C, V, WeightLayout::out_in,
                                      GradWrite::overwrite, false, s)
            .ok();
      });
      const std::string tag = "lm head V=" + std::to_string(V) + " N=" + std::to_string(Nh) + " C=1024";
      row("gemm fwd bf16 " + tag, flops / f * 1e-12, "TFLOPS", bf16_peak, "bf16 dense peak");
      row("gemm bwd (dW+dX) bf16 " + tag, 2 * flops / b * 1e-12, "TFLOPS", bf16_peak, "bf16 dense peak");
      if (V == 50257) {  // the cross-entropy kernels: logits (bf16) in, fp32 probabilities out, and back
        float *probs, *losses;
        int32_t* targets;
        CHECK_CUDA(cudaMalloc(&probs, Nh * V * 4));
        CHECK_CUDA(cudaMalloc(&losses, Nh * 4));
        CHECK_CUDA(cudaMalloc(&targets, Nh * 4));
        CHECK_CUDA(cudaMemset(targets, 0, Nh * 4));
        const double cf = time_s(s, quick ? 3 : 10, [&] {
          return gpu::crossentropy_forward<bf16_t>(losses, probs, logits, targets, Nh, V, s) == cudaSuccess;
        });
        const double cb = time_s(s, quick ? 3 : 10, [&] {
          return gpu::crossentropy_backward<bf16_t>(logits, probs, targets, Nh, V, 1.0f, s) == cudaSuccess;
        });
        // Fewest bytes: forward reads the logits and writes the probabilities; backward reads those, writes dlogits.
        const double fwd_bytes = static_cast<double>(Nh) * V * (2 + 4), bwd_bytes = static_cast<double>(Nh) * V * (4 + 2);
        row("cross-entropy fwd " + tag, fwd_bytes / cf * 1e-9, "GB/s", 0, "HBM: see the d2d copy below");
        row("cross-entropy bwd " + tag, bwd_bytes / cb * 1e-9, "GB/s", 0, "HBM: see the d2d copy below");
        cudaFree(probs), cudaFree(losses), cudaFree(targets);
      }
      cudaFree(xh), cudaFree(wv), cudaFree(logits), cudaFree(dx), cudaFree(dwv);
    }
  }

  // --- memory: D2D copy (the measured HBM limit), GPU Adam against it, pinned H2D / D2H against PCIe ---
  {
    const int64_t n = (quick ? 64LL : 256LL) << 20;  // elements
    float *p, *g, *m, *v, *copy_dst;
    CHECK_CUDA(cudaMalloc(&p, n * 4));
    CHECK_CUDA(cudaMalloc(&g, n * 4));
    CHECK_CUDA(cudaMalloc(&m, n * 4));
    CHECK_CUDA(cudaMalloc(&v, n * 4));
    CHECK_CUDA(cudaMalloc(&copy_dst, n * 4));
    CHECK_CUDA(cudaMemset(p, 0, n * 4));
    CHECK_CUDA(cudaMemset(g, 0, n * 4));
    CHECK_CUDA(cudaMemset(m, 0, n * 4));
    CHECK_CUDA(cudaMemset(v, 0, n * 4));
    const double d2d = time_s(
        s, iters, [&] { return cudaMemcpyAsync(copy_dst, p, n * 4, cudaMemcpyDeviceToDevice, s) == cudaSuccess; });
    const double hbm_GBps = 2.0 * n * 4 / d2d * 1e-9;  // read + write
    row("device-to-device copy (read+write)", hbm_GBps, "GB/s", 0, "this is the measured limit");
    AdamBuffers ab;
    ab.params = p, ab.grads = g, ab.exp_avg = m, ab.exp_avg_sq = v, ab.n = n;
    const AdamScalars sc = adam_scalars({.lr = 1e-4f, .weight_decay = 0.01f}, 0.9f, 0.999f);
    const double t_adam = time_s(s, iters, [&] { return gpu::adam_step(sc, ab, s) == cudaSuccess; });
    const double adam_bytes =
        static_cast<double>(adam_bytes_per_element(GradDtype::fp32, StateDtype::fp32, LpDtype::none)) * n;
    row("GPU Adam fp32 (28 B/param)", adam_bytes / t_adam * 1e-9, "GB/s", hbm_GBps, "measured d2d copy");

    void* pinned;
    CHECK_CUDA(cudaHostAlloc(&pinned, n * 4, cudaHostAllocDefault));
    std::memset(pinned, 0, n * 4);
    const double pcie = pk ? pk->pcie_GBps : 0;
    const double h2d = time_s(s, quick ? 3 : 10, [&] {
      return cudaMemcpyAsync(copy_dst, pinned, n * 4, cudaMemcpyHostToDevice, s) == cudaSuccess;
    });
    const double d2h = time_s(s, quick ? 3 : 10, [&] {
      return cudaMemcpyAsync(pinned, copy_dst, n * 4, cudaMemcpyDeviceToHost, s) == cudaSuccess;
    });
    row("pinned H2D " + std::to_string(n * 4 >> 20) + " MiB", n * 4 / h2d * 1e-9, "GB/s", pcie, "PCIe per direction");
    row("pinned D2H " + std::to_string(n * 4 >> 20) + " MiB", n * 4 / d2h * 1e-9, "GB/s", pcie, "PCIe per direction");
    cudaFreeHost(pinned);
    cudaFree(p), cudaFree(g), cudaFree(m), cudaFree(v), cudaFree(copy_dst);
  }
  CHECK_CUDA(cudaStreamSynchronize(s));
  CHECK_CUDA(cudaGetLastError());
  cudaStreamDestroy(s);
  return 0;
}
