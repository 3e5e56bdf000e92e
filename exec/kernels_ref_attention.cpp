// The CPU reference kernels' attention (kernels_ref.h): rotary embeddings and causal self-attention, forward and
// backward, with grouped KV heads. The same rules as kernels_ref.cpp: fp32 sums in a fixed order, rounded to T
// once; -O3 changes speed, not bits (exec/ compiles with -ffp-contract=off).
#pragma GCC optimize("O3")

#include <algorithm>
#include <cmath>
#include <vector>

#include "exec/dtype.h"
#include "exec/kernels_ref.h"
#include "exec/kernels_ref_impl.h"

namespace zs::exec {
using ref_detail::load;
using ref_detail::scratch;

// --- attention ---------------------------------------------------------------------------------------------

namespace {
template <class T>
void rope_apply(T* q, T* k, int64_t ld_q, int64_t ld_kv, int64_t B, int64_t T_, int64_t NH, int64_t NKV, int64_t HD,
                float theta, bool inverse) {
  const int64_t half = HD / 2;
  std::vector<float> inv_freq(static_cast<size_t>(half));
  for (int64_t d = 0; d < half; ++d)
    inv_freq[static_cast<size_t>(d)] = 1.0f / std::pow(theta, static_cast<float>(2 * d) / static_cast<float>(HD));
  auto rotate = [&](T* x, float c, float s, int64_t d) {
    const float x1 = to_f32(x[d]), x2 = to_f32(x[d + half]);
    x[d] = from_f32<T>(x1 * c - x2 * s);
    x[d + half] = from_f32<T>(x2 * c + x1 * s);
  };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T_; ++t) {
      T* qr = q + (b * T_ + t) * ld_q;
      T* kr = k + (b * T_ + t) * ld_kv;
      for (int64_t d = 0; d < half; ++d) {
        const float ang = static_cast<float>(t) * inv_freq[static_cast<size_t>(d)];
        const float c = std::cos(ang), s = inverse ? -std::sin(ang) : std::sin(ang);
        for (int64_t h = 0; h < NH; ++h) rotate(qr + h * HD, c, s, d);
        for (int64_t h = 0; h < NKV; ++h) rotate(kr + h * HD, c, s, d);
      }
    }
}
}  // namespace

template <class T>
void rope_forward(T* q, T* k, int64_t ld_q, int64_t ld_kv, int64_t B, int64_t T_, int64_t NH, int64_t NKV, int64_t HD,
                  float theta) {
  rope_apply(q, k, ld_q, ld_kv, B, T_, NH, NKV, HD, theta, false);
}

template <class T>
void rope_backward(T* dq, T* dk, int64_t ld_q, int64_t ld_kv, int64_t B, int64_t T_, int64_t NH, int64_t NKV,
                   int64_t HD, float theta) {
  rope_apply(dq, dk, ld_q, ld_kv, B, T_, NH, NKV, HD, theta, true);
}

namespace {
// One kv head's keys and values of one sequence as fp32 rows [T, HD] (exact conversions: the same bits as reading
// them element by element, but the inner loops then run over plain floats).
template <class T>
void load_kv(float* kf, float* vf, const T* k, const T* v, int64_t ld_kv, int64_t b, int64_t T_, int64_t kh,
             int64_t HD) {
  for (int64_t j = 0; j < T_; ++j) {
    load(kf + j * HD, k + (b * T_ + j) * ld_kv + kh * HD, HD);
    load(vf + j * HD, v + (b * T_ + j) * ld_kv + kh * HD, HD);
  }
}
}  // namespace

template <class T>
void attention_forward(T* out, float* lse, const T* q, const T* k, const T* v, int64_t ld_q, int64_t ld_kv, int64_t B,
                       int64_t T_, int64_t NH, int64_t NKV, int64_t HD) {
  const int64_t group = NH / NKV;
  const float scale = 1.0f / std::sqrt(static_cast<float>(HD));
  auto& p = scratch(0, static_cast<size_t>(T_));
  auto& qf = scratch(1, static_cast<size_t>(2 * HD));
  auto& kv = scratch(2, static_cast<size_t>(2 * T_ * HD));
  float* acc = qf.data() + HD;
  float* kf = kv.data();
  float* vf = kv.data() + T_ * HD;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t kh = 0; kh < NKV; ++kh) {
      load_kv(kf, vf, k, v, ld_kv, b, T_, kh, HD);
      for (int64_t h = kh * group; h < (kh + 1) * group; ++h)
        for (int64_t i = 0; i < T_; ++i) {
          load(qf.data(), q + (b * T_ + i) * ld_q + h * HD, HD);
          float mx = -INFINITY;
          for (int64_t j = 0; j <= i; ++j) {
            const float* kr = kf + j * HD;
            float s = 0;
            for (int64_t d = 0; d < HD; ++d) s += qf[static_cast<size_t>(d)] * kr[d];
            s *= scale;
            p[static_cast<size_t>(j)] = s;
            mx = std::max(mx, s);
          }
          float sum = 0;
          for (int64_t j = 0; j <= i; ++j) {
            p[static_cast<size_t>(j)] = std::exp(p[static_cast<size_t>(j)] - mx);
            sum += p[static_cast<size_t>(j)];
          }
          const float inv = 1.0f / sum;
          std::fill(acc, acc + HD, 0.0f);
          for (int64_t j = 0; j <= i; ++j) {
            const float pj = p[static_cast<size_t>(j)] * inv;
            const float* vr = vf + j * HD;
            for (int64_t d = 0; d < HD; ++d) acc[d] += pj * vr[d];
          }
          T* o = out + (b * T_ + i) * NH * HD + h * HD;
          for (int64_t d = 0; d < HD; ++d) o[d] = from_f32<T>(acc[d]);
          lse[(b * NH + h) * T_ + i] = mx + std::log(sum);
        }
    }
}

template <class T>
void attention_backward(T* dq, T* dk, T* dv, const T* dout, const T* q, const T* k, const T* v, const float* lse,
                        int64_t ld_q, int64_t ld_kv, int64_t B, int64_t T_, int64_t NH, int64_t NKV, int64_t HD) {
  const int64_t group = NH / NKV;
  const float scale = 1.0f / std::sqrt(static_cast<float>(HD));
  auto& dkv = scratch(0, static_cast<size_t>(2 * T_ * HD));
  auto& kv = scratch(1, static_cast<size_t>(2 * T_ * HD));
  auto& row = scratch(2, static_cast<size_t>(2 * T_ + 3 * HD));
  float* dka = dkv.data();
  float* dva = dkv.data() + T_ * HD;
  float* kf = kv.data();
  float* vf = kv.data() + T_ * HD;
  float* P = row.data();
  float* dP = P + T_;
  float* qf = dP + T_;
  float* dof = qf + HD;
  float* dqa = dof + HD;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t kh = 0; kh < NKV; ++kh) {
      load_kv(kf, vf, k, v, ld_kv, b, T_, kh, HD);
      std::fill(dka, dka + 2 * T_ * HD, 0.0f);
      for (int64_t h = kh * group; h < (kh + 1) * group; ++h) {
        for (int64_t i = 0; i < T_; ++i) {
          load(qf, q + (b * T_ + i) * ld_q + h * HD, HD);
          load(dof, dout + (b * T_ + i) * NH * HD + h * HD, HD);
          const float l = lse[(b * NH + h) * T_ + i];
          float D = 0;
          for (int64_t j = 0; j <= i; ++j) {
            const float* kr = kf + j * HD;
            const float* vr = vf + j * HD;
            float s = 0, g = 0;
            for (int64_t d = 0; d < HD; ++d) {
              s += qf[d] * kr[d];
              g += dof[d] * vr[d];
            }
            P[j] = std::exp(s * scale - l);
            dP[j] = g;
            D += P[j] * g;
          }
          std::fill(dqa, dqa + HD, 0.0f);
          for (int64_t j = 0; j <= i; ++j) {
            const float ds = P[j] * (dP[j] - D) * scale;
            const float pj = P[j];
            const float* kr = kf + j * HD;
            float* dkr = dka + j * HD;
            float* dvr = dva + j * HD;
            for (int64_t d = 0; d < HD; ++d) {
              dqa[d] += ds * kr[d];
              dkr[d] += ds * qf[d];
              dvr[d] += pj * dof[d];
            }
          }
          T* o = dq + (b * T_ + i) * ld_q + h * HD;  // q_i of head h is not read again
          for (int64_t d = 0; d < HD; ++d) o[d] = from_f32<T>(dqa[d]);
        }
      }
      for (int64_t j = 0; j < T_; ++j) {  // every row of this kv head has been read
        T* kr = dk + (b * T_ + j) * ld_kv + kh * HD;
        T* vr = dv + (b * T_ + j) * ld_kv + kh * HD;
        for (int64_t d = 0; d < HD; ++d) {
          kr[d] = from_f32<T>(dka[j * HD + d]);
          vr[d] = from_f32<T>(dva[j * HD + d]);
        }
      }
    }
}

#define ZS_INSTANTIATE(T)                                                                                          \
  template void rope_forward<T>(T*, T*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, float);     \
  template void rope_backward<T>(T*, T*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, float);    \
  template void attention_forward<T>(T*, float*, const T*, const T*, const T*, int64_t, int64_t, int64_t, int64_t, \
                                     int64_t, int64_t, int64_t);                                                   \
  template void attention_backward<T>(T*, T*, T*, const T*, const T*, const T*, const T*, const float*, int64_t,   \
                                      int64_t, int64_t, int64_t, int64_t, int64_t, int64_t);

ZS_INSTANTIATE(float)
ZS_INSTANTIATE(bf16_t)
ZS_INSTANTIATE(fp16_t)

}  // namespace zs::exec
