// CPU Adam/AdamW with DeepSpeed's math exactly (csrc/includes/cpu_adam.h, DEEPSPEED.md §4): fp32 master
// params, fp32 (or bf16) m and v, gradients in fp32/fp16/bf16, optional fused fp16/bf16 copy of the updated
// params. One scalar reference (adam_update_element); AVX2+FMA and AVX-512 kernels chosen at run time
// repeat its operations in the same order, so every variant is bit-identical to it (0 ulp; tests assert it).
//   CpuAdam adam({.lr = 1e-4f, .weight_decay = 0.01f});
//   AdamBuffers b{params, grads, GradDtype::fp16, m, v};   b.n = n;
//   Status s = adam.step(/*step=*/1, b);
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>

#include "core/status.h"
#include "exec/half.h"

namespace zs::exec {

using core::Status;

enum class GradDtype { fp32, fp16, bf16 };
enum class StateDtype { fp32, bf16 };     // m and v storage (DeepSpeed's fp32_optimizer_states=False → bf16)
enum class LpDtype { none, fp16, bf16 };  // the low-precision copy written next to the updated master
enum class AdamKernel { scalar, avx2, avx512 };

const char* to_string(AdamKernel k);
bool adam_kernel_supported(AdamKernel k);  // CPU has the instructions (avx2: AVX2+FMA+F16C; avx512: F+BW+VL)
AdamKernel best_adam_kernel();

// torch.optim-style hyperparameters; defaults are DeepSpeedCPUAdam's.
struct AdamHyper {
  float lr = 1e-3f;
  float beta1 = 0.9f, beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
  bool adamw_mode = true;  // decoupled weight decay (AdamW); false = L2 added to the gradient
  bool bias_correction = true;
};

// The per-step constants the element update uses, in fp32 as DeepSpeed computes them
// (IncrementStep + update_state). `beta1_t`/`beta2_t` are β^t.
struct AdamScalars {
  float beta1 = 0, beta2 = 0;
  float one_minus_beta1 = 0, one_minus_beta2 = 0;
  float step_size = 0;         // −lr / bias_correction1, bias_correction1 = 1 − β1^t
  float bias_correction2 = 1;  // 1 / sqrt(1 − β2^t)
  float eps = 0;
  float weight_decay = 0;  // L2 coefficient (adamw_mode false)
  float neg_lr_wd = 0;     // −lr·wd (adamw_mode true)
  bool l2 = false, decoupled = false;
};
AdamScalars adam_scalars(const AdamHyper& h, float beta1_t, float beta2_t);

// THE Adam math (DeepSpeed Step_1 / Step_AVX, fp32). The SIMD kernels fuse multiply-adds at the places
// DeepSpeed's simd_fma does; the reference names those places with std::fma so all variants agree exactly:
//   L2:        g = fma(p, wd, g)
//   m = fma(g, 1−β1, m·β1);  v = fma(g·g, 1−β2, v·β2)
//   denom = fma(sqrt(v), bias_correction2, eps)
//   AdamW:     p = fma(p, −lr·wd, p)
//   p = fma(m / denom, −lr/bias_correction1, p)
[[gnu::always_inline]] inline void adam_update_element(const AdamScalars& s, float& p, float g, float& m, float& v) {
  if (s.l2) g = std::fma(p, s.weight_decay, g);
  m = std::fma(g, s.one_minus_beta1, m * s.beta1);
  v = std::fma(g * g, s.one_minus_beta2, v * s.beta2);
  const float denom = std::fma(std::sqrt(v), s.bias_correction2, s.eps);
  const float update = m / denom;
  if (s.decoupled) p = std::fma(p, s.neg_lr_wd, p);
  p = std::fma(update, s.step_size, p);
}

// Arrays of one parameter group, all `n` long. `params`, `exp_avg`, `exp_avg_sq` are updated in place.
struct AdamBuffers {
  float* params = nullptr;  // fp32 master
  const void* grads = nullptr;
  GradDtype grad_dtype = GradDtype::fp32;
  void* exp_avg = nullptr;  // float* or uint16_t* (bf16) by state_dtype
  void* exp_avg_sq = nullptr;
  StateDtype state_dtype = StateDtype::fp32;
  void* lp_params = nullptr;  // uint16_t* fp16/bf16 copy of the updated params, or nullptr
  LpDtype lp_dtype = LpDtype::none;
  int64_t n = 0;
};

// One kernel on elements [begin, end) of `b`, single-threaded. The unit tests compare kernels through this.
void adam_kernel(AdamKernel k, const AdamScalars& s, const AdamBuffers& b, int64_t begin, int64_t end);
// fp32 → lp (fp16 or bf16 bits) with kernel k's vectors: the copy-back of updated masters, bit-identical for
// every kernel (round to nearest even, DeepSpeed's NaN).
void cast_to_lp(AdamKernel k, uint16_t* out, const float* in, int64_t n, LpDtype lp);
// x[i] *= mul with kernel k's vectors (DeepSpeed's unscale_and_clip_grads pass, torch's vectorised mul_): one
// rounding per element, so every kernel gives the same bits.
void scale_f32(AdamKernel k, float* x, float mul, int64_t n);
// Gradients in `in` (g's dtype) → fp32 `out` (may be null), returning Σ out² in double: element i goes to lane
// i % 4 and the lanes combine as (l0 + l1) + (l2 + l3), cast_to_f32_sumsq's order (exec/kernels_ref.h), so every
// kernel gives its bits and the gradient norm does not depend on the machine. The host device's gradient
// D2H (its DeviceKernels::to_f32), which a GPU does in its copy; avx512 runs the avx2 loop (one double lane per
// reference lane: a wider vector would not change the order, only the loads).
double grads_to_f32_sumsq(AdamKernel k, float* out, const void* in, int64_t n, GradDtype g);

// The engine's work units on CPU Adam's threads: Adam's tiles, and the chunks of its streaming passes (unscale,
// casts), at most these. `train --write-device-profile` times the passes with the same units.
inline constexpr int64_t kAdamTileElems = 64 * 1024, kCpuPassChunkElems = 32 * 1024;
// A pass over n elements on `threads` threads: units of at most max_elems, and at least ~8 per thread (not under
// 4096 elements; whole 64-element SIMD iterations). The pool hands units out as threads ask, so a worker that wakes
// late for a small group still takes its share of what is left: with 64 Ki-element tiles a 120k-element group is two
// tiles, and a worker ~40 us late left both to the caller (docs/notes/engine-validation.md "Where the hand-offs wake").
inline int64_t pool_unit_elems(int64_t n, int threads, int64_t max_elems) {
  const int64_t want = n / (8 * static_cast<int64_t>(threads > 1 ? threads : 1));
  const int64_t unit = (want + 63) / 64 * 64;
  return unit < 4096 ? 4096 : unit > max_elems ? max_elems : unit;
}

struct AdamOptions {
  AdamKernel kernel = best_adam_kernel();
  int threads = 0;                 // 0 = every available CPU
  int64_t tile_elems = 64 * 1024;  // work unit per claim: 64 Ki elements ≈ 1.8 MB of streams, sized for L2
};

class ThreadPool;

// A stateful optimizer for one parameter group: tracks β^t exactly as DeepSpeed's IncrementStep does
// (multiplied by β when the step advances by one, recomputed with pow on a jump or a β change).
class CpuAdam {
 public:
  explicit CpuAdam(AdamHyper h = {}, AdamOptions o = {});
  ~CpuAdam();
  CpuAdam(CpuAdam&&) noexcept;
  CpuAdam& operator=(CpuAdam&&) noexcept;

  // `step` is 1-based (torch's state['step'] after increment). Fails on bad buffers or an unsupported kernel.
  Status step(int64_t step, const AdamBuffers& b);
  // The scalars step() used last (for tests and for the GPU Adam to reuse).
  const AdamScalars& last_scalars() const { return scalars_; }
  AdamHyper& hyper() { return h_; }
  const AdamOptions& options() const { return o_; }
  int threads() const;

 private:
  void increment_step(int64_t step);

  AdamHyper h_;
  AdamOptions o_;
  std::unique_ptr<ThreadPool> pool_;
  int64_t step_ = 0;
  float beta1_ = -1, beta2_ = -1;  // the betas beta*_t_ belong to
  float beta1_t_ = 1, beta2_t_ = 1;
  AdamScalars scalars_;
};

// Adam's memory traffic per element for given dtypes (28 B for all-fp32: p r/w, g r, m r/w, v r/w).
int64_t adam_bytes_per_element(GradDtype g, StateDtype s, LpDtype lp);

}  // namespace zs::exec
