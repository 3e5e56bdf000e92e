#include "exec/cpu_adam.h"

#include <string>

#include "exec/cpu_adam_kernels.h"
#include "exec/dtype.h"
#include "exec/kernels_ref.h"
#include "exec/thread_pool.h"

namespace zs::exec {

const char* to_string(AdamKernel k) {
  switch (k) {
    case AdamKernel::scalar:
      return "scalar";
    case AdamKernel::avx2:
      return "avx2";
    case AdamKernel::avx512:
      return "avx512";
  }
  return "?";
}

bool adam_kernel_supported(AdamKernel k) {
  switch (k) {
    case AdamKernel::scalar:
      return true;
    case AdamKernel::avx2:
      return detail::cpu_has_avx2_fma_f16c();
    case AdamKernel::avx512:
      return detail::cpu_has_avx512();
  }
  return false;
}

AdamKernel best_adam_kernel() {
  if (adam_kernel_supported(AdamKernel::avx512)) return AdamKernel::avx512;
  if (adam_kernel_supported(AdamKernel::avx2)) return AdamKernel::avx2;
  return AdamKernel::scalar;
}

AdamScalars adam_scalars(const AdamHyper& h, float beta1_t, float beta2_t) {
  AdamScalars s;
  s.beta1 = h.beta1;
  s.beta2 = h.beta2;
  s.one_minus_beta1 = 1.0f - h.beta1;
  s.one_minus_beta2 = 1.0f - h.beta2;
  float bias_correction1 = 1.0f;
  s.bias_correction2 = 1.0f;
  if (h.bias_correction) {
    bias_correction1 = 1.0f - beta1_t;
    s.bias_correction2 = 1.0f / std::sqrt(1.0f - beta2_t);
  }
  s.step_size = -1.0f * h.lr / bias_correction1;
  s.eps = h.eps;
  s.weight_decay = h.weight_decay;
  s.neg_lr_wd = -1.0f * h.lr * h.weight_decay;
  s.l2 = h.weight_decay > 0 && !h.adamw_mode;
  s.decoupled = h.weight_decay > 0 && h.adamw_mode;
  return s;
}

namespace detail {

namespace {
template <GradDtype G>
inline float load_grad(const void* g, int64_t i) {
  if constexpr (G == GradDtype::fp32) return static_cast<const float*>(g)[i];
  if constexpr (G == GradDtype::fp16) return fp16_to_float(static_cast<const uint16_t*>(g)[i]);
  if constexpr (G == GradDtype::bf16) return bf16_to_float(static_cast<const uint16_t*>(g)[i]);
}

template <GradDtype G, StateDtype S, LpDtype L>
[[gnu::always_inline]] inline void scalar_body(const AdamScalars& s, const AdamBuffers& b, int64_t begin, int64_t end) {
  float* p = b.params;
  for (int64_t i = begin; i < end; ++i) {
    float param = p[i];
    const float grad = load_grad<G>(b.grads, i);
    float m, v;
    if constexpr (S == StateDtype::fp32) {
      m = static_cast<float*>(b.exp_avg)[i];
      v = static_cast<float*>(b.exp_avg_sq)[i];
    } else {
      m = bf16_to_float(static_cast<uint16_t*>(b.exp_avg)[i]);
      v = bf16_to_float(static_cast<uint16_t*>(b.exp_avg_sq)[i]);
    }
    adam_update_element(s, param, grad, m, v);
    p[i] = param;
    if constexpr (S == StateDtype::fp32) {
      static_cast<float*>(b.exp_avg)[i] = m;
      static_cast<float*>(b.exp_avg_sq)[i] = v;
    } else {
      static_cast<uint16_t*>(b.exp_avg)[i] = float_to_bf16(m);
      static_cast<uint16_t*>(b.exp_avg_sq)[i] = float_to_bf16(v);
    }
    if constexpr (L == LpDtype::fp16) static_cast<uint16_t*>(b.lp_params)[i] = float_to_fp16(param);
    if constexpr (L == LpDtype::bf16) static_cast<uint16_t*>(b.lp_params)[i] = float_to_bf16(param);
  }
}

// The same loop twice: for CPUs with FMA (std::fma becomes one instruction) and without (libm's software fmaf,
// ~100x slower but the same correctly rounded result). Both are the scalar reference.
template <GradDtype G, StateDtype S, LpDtype L>
void scalar_loop_nofma(const AdamScalars& s, const AdamBuffers& b, int64_t begin, int64_t end) {
  scalar_body<G, S, L>(s, b, begin, end);
}
#if defined(__x86_64__)
template <GradDtype G, StateDtype S, LpDtype L>
__attribute__((target("fma"))) void scalar_loop_fma(const AdamScalars& s, const AdamBuffers& b, int64_t begin,
                                                    int64_t end) {
  scalar_body<G, S, L>(s, b, begin, end);
}
bool cpu_has_fma() {
  static const bool v = __builtin_cpu_supports("fma");
  return v;
}
#endif

template <GradDtype G, StateDtype S, LpDtype L>
void scalar_loop(const AdamScalars& s, const AdamBuffers& b, int64_t begin, int64_t end) {
#if defined(__x86_64__)
  if (cpu_has_fma()) return scalar_loop_fma<G, S, L>(s, b, begin, end);
#endif
  scalar_loop_nofma<G, S, L>(s, b, begin, end);
}

template <GradDtype G, StateDtype S>
void scalar_lp(const AdamScalars& s, const AdamBuffers& b, int64_t begin, int64_t end) {
  switch (b.lp_dtype) {
    case LpDtype::none:
      return scalar_loop<G, S, LpDtype::none>(s, b, begin, end);
    case LpDtype::fp16:
      return scalar_loop<G, S, LpDtype::fp16>(s, b, begin, end);
    case LpDtype::bf16:
      return scalar_loop<G, S, LpDtype::bf16>(s, b, begin, end);
  }
}

template <GradDtype G>
void scalar_state(const AdamScalars& s, const AdamBuffers& b, int64_t begin, int64_t end) {
  if (b.state_dtype == StateDtype::fp32) return scalar_lp<G, StateDtype::fp32>(s, b, begin, end);
  return scalar_lp<G, StateDtype::bf16>(s, b, begin, end);
}
}  // namespace

void adam_scalar(const AdamScalars& s, const AdamBuffers& b, int64_t begin, int64_t end) {
  switch (b.grad_dtype) {
    case GradDtype::fp32:
      return scalar_state<GradDtype::fp32>(s, b, begin, end);
    case GradDtype::fp16:
      return scalar_state<GradDtype::fp16>(s, b, begin, end);
    case GradDtype::bf16:
      return scalar_state<GradDtype::bf16>(s, b, begin, end);
  }
}

}  // namespace detail

void adam_kernel(AdamKernel k, const AdamScalars& s, const AdamBuffers& b, int64_t begin, int64_t end) {
  switch (k) {
    case AdamKernel::scalar:
      return detail::adam_scalar(s, b, begin, end);
    case AdamKernel::avx2:
      return detail::adam_avx2(s, b, begin, end);
    case AdamKernel::avx512:
      return detail::adam_avx512(s, b, begin, end);
  }
}

void cast_to_lp(AdamKernel k, uint16_t* out, const float* in, int64_t n, LpDtype lp) {
  if (lp == LpDtype::none) return;
  const bool fp16 = lp == LpDtype::fp16;
  switch (k) {
    case AdamKernel::scalar:
      for (int64_t i = 0; i < n; ++i) out[i] = fp16 ? float_to_fp16(in[i]) : float_to_bf16(in[i]);
      return;
    case AdamKernel::avx2:
      return detail::cast_lp_avx2(out, in, n, fp16);
    case AdamKernel::avx512:
      return detail::cast_lp_avx512(out, in, n, fp16);
  }
}

void scale_f32(AdamKernel k, float* x, float mul, int64_t n) {
  switch (k) {
    case AdamKernel::scalar:
      for (int64_t i = 0; i < n; ++i) x[i] *= mul;
      return;
    case AdamKernel::avx2:
      return detail::scale_avx2(x, mul, n);
    case AdamKernel::avx512:
      return detail::scale_avx512(x, mul, n);
  }
}

double grads_to_f32_sumsq(AdamKernel k, float* out, const void* in, int64_t n, GradDtype g) {
  if (k != AdamKernel::scalar) return detail::grads_to_f32_sumsq_avx2(out, in, n, g);
  switch (g) {
    case GradDtype::fp32:
      return cast_to_f32_sumsq<float>(out, static_cast<const float*>(in), n);
    case GradDtype::fp16:
      return cast_to_f32_sumsq<fp16_t>(out, static_cast<const fp16_t*>(in), n);
    case GradDtype::bf16:
      return cast_to_f32_sumsq<bf16_t>(out, static_cast<const bf16_t*>(in), n);
  }
  return 0;
}

int64_t adam_bytes_per_element(GradDtype g, StateDtype s, LpDtype lp) {
  const int64_t state = s == StateDtype::fp32 ? 4 : 2;
  return 8 + (g == GradDtype::fp32 ? 4 : 2) + 4 * state + (lp == LpDtype::none ? 0 : 2);
}

CpuAdam::CpuAdam(AdamHyper h, AdamOptions o) : h_(h), o_(o), pool_(std::make_unique<ThreadPool>(o.threads)) {
  if (o_.tile_elems < 64) o_.tile_elems = 64;
  o_.tile_elems = (o_.tile_elems + 63) / 64 * 64;  // whole SIMD iterations inside a tile
}
CpuAdam::~CpuAdam() = default;
CpuAdam::CpuAdam(CpuAdam&&) noexcept = default;
CpuAdam& CpuAdam::operator=(CpuAdam&&) noexcept = default;

int CpuAdam::threads() const { return pool_->threads(); }

// DeepSpeed's Adam_Optimizer::IncrementStep, float state included.
void CpuAdam::increment_step(int64_t step) {
  auto pw = [&](float beta) {
    return static_cast<float>(std::pow(static_cast<double>(beta), static_cast<double>(step)));
  };
  if (h_.beta1 != beta1_ || h_.beta2 != beta2_) {
    step_ = step;
    beta1_ = h_.beta1;
    beta2_ = h_.beta2;
    beta1_t_ = pw(beta1_);
    beta2_t_ = pw(beta2_);
    return;
  }
  ++step_;
  if (step_ != step) {
    beta1_t_ = pw(beta1_);
    beta2_t_ = pw(beta2_);
    step_ = step;
  } else {
    beta1_t_ *= beta1_;
    beta2_t_ *= beta2_;
  }
}

Status CpuAdam::step(int64_t step, const AdamBuffers& b) {
  using core::bad_input;
  if (step < 1) return bad_input("cpu_adam: step " + std::to_string(step) + " must be >= 1");
  if (b.n < 0) return bad_input("cpu_adam: n = " + std::to_string(b.n) + " must be >= 0");
  if (b.n > 0 && (!b.params || !b.grads || !b.exp_avg || !b.exp_avg_sq))
    return bad_input("cpu_adam: params, grads, exp_avg and exp_avg_sq must all be set");
  if ((b.lp_dtype != LpDtype::none) != (b.lp_params != nullptr))
    return bad_input("cpu_adam: lp_params must be set exactly when lp_dtype is fp16 or bf16");
  if (!adam_kernel_supported(o_.kernel))
    return core::Error{core::ErrorKind::unsupported, std::string("cpu_adam: this CPU lacks the instructions for the ") +
                                                         to_string(o_.kernel) + " kernel"};
  if (h_.beta1 < 0 || h_.beta1 >= 1 || h_.beta2 < 0 || h_.beta2 >= 1)
    return bad_input("cpu_adam: betas must lie in [0, 1)");
  increment_step(step);
  scalars_ = adam_scalars(h_, beta1_t_, beta2_t_);
  const int64_t tile = o_.tile_elems;
  const int64_t tiles = (b.n + tile - 1) / tile;
  const AdamScalars s = scalars_;
  const AdamKernel k = o_.kernel;
  pool_->run(tiles, [&](int64_t t) {
    const int64_t begin = t * tile;
    const int64_t end = begin + tile < b.n ? begin + tile : b.n;
    adam_kernel(k, s, b, begin, end);
  });
  return {};
}

}  // namespace zs::exec
