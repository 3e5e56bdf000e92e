// The CPU reference kernels (kernels_ref.h). Each output element is an fp32 sum in a fixed order, rounded to T
// once; the GEMM loops run over the output width innermost so they vectorise without reassociating a sum.
// The loops over an output row vectorise without reassociating any sum (each lane does the scalar operations in
// the same order; exec/ compiles with -ffp-contract=off), so -O3 changes speed, not bits.
#pragma GCC optimize("O3")

#include "exec/kernels_ref.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "exec/dtype.h"
#include "exec/kernels_ref_impl.h"

namespace zs::exec {
using ref_detail::load;
using ref_detail::scratch;

namespace {

constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2/pi)

// tanh through one exp: 1 − 2/(e^{2u} + 1) (saturates to ±1 cleanly; absolute error ~1e-7, which is what GELU's
// 0.5·(1 + tanh) sees), about twice as fast as std::tanh here.
inline float tanh_via_exp(float u) { return 1.0f - 2.0f / (std::exp(2.0f * u) + 1.0f); }

}  // namespace

template <class T>
void grad_store(T& dst, float g, GradWrite w) {
  if (w == GradWrite::overwrite)
    dst = from_f32<T>(g);
  else
    dst = from_f32<T>(to_f32(dst) + round_to<T>(g));
}

template <class T>
void embedding_forward(T* out, const int32_t* tokens, const T* table, int64_t N, int64_t C) {
  for (int64_t n = 0; n < N; ++n) std::copy(table + tokens[n] * C, table + (tokens[n] + 1) * C, out + n * C);
}

template <class T>
void embedding_backward(T* dtable, const T* dout, const int32_t* tokens, int64_t N, int64_t C, int64_t V, GradWrite w) {
  std::vector<int64_t> order(static_cast<size_t>(N));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return tokens[a] < tokens[b]; });
  std::vector<char> used(static_cast<size_t>(V), 0);
  auto& acc = scratch(0, static_cast<size_t>(C));
  size_t i = 0;
  while (i < order.size()) {
    const int32_t v = tokens[order[i]];
    std::fill(acc.begin(), acc.begin() + C, 0.0f);
    for (; i < order.size() && tokens[order[i]] == v; ++i) {
      const T* d = dout + order[i] * C;
      for (int64_t c = 0; c < C; ++c) acc[c] += to_f32(d[c]);
    }
    used[static_cast<size_t>(v)] = 1;
    for (int64_t c = 0; c < C; ++c) grad_store(dtable[v * C + c], acc[c], w);
  }
  if (w == GradWrite::overwrite)
    for (int64_t v = 0; v < V; ++v)
      if (!used[static_cast<size_t>(v)]) std::fill(dtable + v * C, dtable + (v + 1) * C, from_f32<T>(0.0f));
}

template <class T>
void position_forward(T* out, const T* wpe, int64_t B, int64_t T_, int64_t C) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T_; ++t) {
      T* o = out + (b * T_ + t) * C;
      const T* p = wpe + t * C;
      for (int64_t c = 0; c < C; ++c) o[c] = from_f32<T>(to_f32(o[c]) + to_f32(p[c]));
    }
}

template <class T>
void position_backward(T* dwpe, const T* dout, int64_t B, int64_t T_, int64_t C, int64_t maxT, GradWrite w) {
  auto& acc = scratch(0, static_cast<size_t>(C));
  for (int64_t t = 0; t < T_; ++t) {
    std::fill(acc.begin(), acc.begin() + C, 0.0f);
    for (int64_t b = 0; b < B; ++b) {
      const T* d = dout + (b * T_ + t) * C;
      for (int64_t c = 0; c < C; ++c) acc[c] += to_f32(d[c]);
    }
    for (int64_t c = 0; c < C; ++c) grad_store(dwpe[t * C + c], acc[c], w);
  }
  if (w == GradWrite::overwrite) std::fill(dwpe + T_ * C, dwpe + maxT * C, from_f32<T>(0.0f));
}

// --- norms -------------------------------------------------------------------------------------------------

template <class T>
void layernorm_forward(T* out, const T* inp, const T* weight, const T* bias, int64_t N, int64_t C, float eps) {
  for (int64_t n = 0; n < N; ++n) {
    const T* x = inp + n * C;
    float mean = 0;
    for (int64_t c = 0; c < C; ++c) mean += to_f32(x[c]);
    mean /= static_cast<float>(C);
    float var = 0;
    for (int64_t c = 0; c < C; ++c) {
      const float d = to_f32(x[c]) - mean;
      var += d * d;
    }
    var /= static_cast<float>(C);
    const float rstd = 1.0f / std::sqrt(var + eps);
    T* o = out + n * C;
    for (int64_t c = 0; c < C; ++c) {
      float y = (to_f32(x[c]) - mean) * rstd * to_f32(weight[c]);
      if (bias) y += to_f32(bias[c]);
      o[c] = from_f32<T>(y);
    }
  }
}

template <class T>
void layernorm_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, const T* dres,
                        int64_t N, int64_t C, float eps, GradWrite w) {
  auto& dw = scratch(0, static_cast<size_t>(C));
  auto& db = scratch(1, static_cast<size_t>(C));
  std::fill(dw.begin(), dw.begin() + C, 0.0f);
  std::fill(db.begin(), db.begin() + C, 0.0f);
  for (int64_t n = 0; n < N; ++n) {
    const T* x = inp + n * C;
    const T* dy = dout + n * C;
    float mean = 0;
    for (int64_t c = 0; c < C; ++c) mean += to_f32(x[c]);
    mean /= static_cast<float>(C);
    float var = 0;
    for (int64_t c = 0; c < C; ++c) {
      const float d = to_f32(x[c]) - mean;
      var += d * d;
    }
    var /= static_cast<float>(C);
    const float rstd = 1.0f / std::sqrt(var + eps);
    float sum_dxhat = 0, sum_dxhat_xhat = 0;
    for (int64_t c = 0; c < C; ++c) {
      const float xhat = (to_f32(x[c]) - mean) * rstd;
      const float g = to_f32(dy[c]);
      const float dxhat = g * to_f32(weight[c]);
      sum_dxhat += dxhat;
      sum_dxhat_xhat += dxhat * xhat;
      dw[c] += g * xhat;
      db[c] += g;
    }
    sum_dxhat /= static_cast<float>(C);
    sum_dxhat_xhat /= static_cast<float>(C);
    T* dx = dinp + n * C;
    const T* r = dres ? dres + n * C : nullptr;
    for (int64_t c = 0; c < C; ++c) {
      const float xhat = (to_f32(x[c]) - mean) * rstd;
      const float dxhat = to_f32(dy[c]) * to_f32(weight[c]);
      float v = rstd * (dxhat - sum_dxhat - xhat * sum_dxhat_xhat);
      if (r) v += to_f32(r[c]);
      dx[c] = from_f32<T>(v);
    }
  }
  for (int64_t c = 0; c < C; ++c) {
    grad_store(dweight[c], dw[c], w);
    if (dbias) grad_store(dbias[c], db[c], w);
  }
}

template <class T>
void rmsnorm_forward(T* out, const T* inp, const T* weight, int64_t N, int64_t C, float eps) {
  for (int64_t n = 0; n < N; ++n) {
    const T* x = inp + n * C;
    float ss = 0;
    for (int64_t c = 0; c < C; ++c) ss += to_f32(x[c]) * to_f32(x[c]);
    const float rstd = 1.0f / std::sqrt(ss / static_cast<float>(C) + eps);
    T* o = out + n * C;
    for (int64_t c = 0; c < C; ++c) o[c] = from_f32<T>(to_f32(x[c]) * rstd * to_f32(weight[c]));
  }
}

template <class T>
void rmsnorm_backward(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight, const T* dres, int64_t N,
                      int64_t C, float eps, GradWrite w) {
  auto& dw = scratch(0, static_cast<size_t>(C));
  std::fill(dw.begin(), dw.begin() + C, 0.0f);
  for (int64_t n = 0; n < N; ++n) {
    const T* x = inp + n * C;
    const T* dy = dout + n * C;
    float ss = 0;
    for (int64_t c = 0; c < C; ++c) ss += to_f32(x[c]) * to_f32(x[c]);
    const float rstd = 1.0f / std::sqrt(ss / static_cast<float>(C) + eps);
    float sum_dxhat_xhat = 0;
    for (int64_t c = 0; c < C; ++c) {
      const float xhat = to_f32(x[c]) * rstd;
      const float g = to_f32(dy[c]);
      sum_dxhat_xhat += g * to_f32(weight[c]) * xhat;
      dw[c] += g * xhat;
    }
    sum_dxhat_xhat /= static_cast<float>(C);
    T* dx = dinp + n * C;
    const T* r = dres ? dres + n * C : nullptr;
    for (int64_t c = 0; c < C; ++c) {
      const float xhat = to_f32(x[c]) * rstd;
      float v = rstd * (to_f32(dy[c]) * to_f32(weight[c]) - xhat * sum_dxhat_xhat);
      if (r) v += to_f32(r[c]);
      dx[c] = from_f32<T>(v);
    }
  }
  for (int64_t c = 0; c < C; ++c) grad_store(dweight[c], dw[c], w);
}

// --- linear layers -----------------------------------------------------------------------------------------

namespace {
// W as fp32 [IN, OUT] whatever its layout.
template <class T>
float* weight_in_out(const T* weight, int64_t IN, int64_t OUT, WeightLayout layout, int slot) {
  auto& wf = scratch(slot, static_cast<size_t>(IN * OUT));
  if (layout == WeightLayout::in_out) {
    load(wf.data(), weight, IN * OUT);
  } else {
    for (int64_t o = 0; o < OUT; ++o)
      for (int64_t i = 0; i < IN; ++i) wf[static_cast<size_t>(i * OUT + o)] = to_f32(weight[o * IN + i]);
  }
  return wf.data();
}
}  // namespace

// Rows are processed in tiles of kRows: each weight row is streamed once per tile instead of once per row. Every
// output element still sums its products in increasing order (the tile only interleaves independent sums).
namespace {
constexpr int64_t kRows = 4;

// acc[rows, J] = a[rows, K] · m[K, J] for one tile (rows ≤ kRows), each sum in increasing k. With a full tile,
// one pass over each row of m serves the tile's four sums.
void tile_times_matrix(float* acc, const float* a, const float* m, int64_t rows, int64_t K, int64_t J) {
  std::fill(acc, acc + rows * J, 0.0f);
  for (int64_t k = 0; k < K; ++k) {
    const float* mr = m + k * J;
    if (rows == kRows) {
      const float a0 = a[k], a1 = a[K + k], a2 = a[2 * K + k], a3 = a[3 * K + k];
      float *c0 = acc, *c1 = c0 + J, *c2 = c1 + J, *c3 = c2 + J;
      for (int64_t j = 0; j < J; ++j) {
        const float mv = mr[j];
        c0[j] += a0 * mv;
        c1[j] += a1 * mv;
        c2[j] += a2 * mv;
        c3[j] += a3 * mv;
      }
      continue;
    }
    for (int64_t r = 0; r < rows; ++r) {
      const float av = a[r * K + k];
      float* ac = acc + r * J;
      for (int64_t j = 0; j < J; ++j) ac[j] += av * mr[j];
    }
  }
}
}  // namespace

template <class T>
void matmul_forward(T* out, const T* inp, const T* weight, const T* bias, int64_t N, int64_t IN, int64_t OUT,
                    WeightLayout layout) {
  const float* wf = weight_in_out(weight, IN, OUT, layout, 0);
  auto& acc = scratch(1, static_cast<size_t>(kRows * OUT));
  auto& xf = scratch(2, static_cast<size_t>(kRows * IN));
  for (int64_t n0 = 0; n0 < N; n0 += kRows) {
    const int64_t rows = std::min(kRows, N - n0);
    for (int64_t r = 0; r < rows; ++r) load(xf.data() + r * IN, inp + (n0 + r) * IN, IN);
    tile_times_matrix(acc.data(), xf.data(), wf, rows, IN, OUT);
    for (int64_t r = 0; r < rows; ++r) {
      T* y = out + (n0 + r) * OUT;
      const float* ac = acc.data() + r * OUT;
      if (bias)
        for (int64_t o = 0; o < OUT; ++o) y[o] = from_f32<T>(ac[o] + to_f32(bias[o]));
      else
        for (int64_t o = 0; o < OUT; ++o) y[o] = from_f32<T>(ac[o]);
    }
  }
}

template <class T>
void matmul_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, int64_t N, int64_t IN,
                     int64_t OUT, WeightLayout layout, GradWrite w, bool accumulate_dinp) {
  // dW [IN, OUT] = Σ_n inp[n]ᵀ dout[n], in increasing n.
  auto& dw = scratch(0, static_cast<size_t>(IN * OUT));
  auto& dyf = scratch(1, static_cast<size_t>(kRows * OUT));
  auto& db = scratch(2, static_cast<size_t>(OUT));
  auto& xf = scratch(3, static_cast<size_t>(kRows * IN));
  std::fill(dw.begin(), dw.begin() + IN * OUT, 0.0f);
  std::fill(db.begin(), db.begin() + OUT, 0.0f);
  for (int64_t n0 = 0; n0 < N; n0 += kRows) {
    const int64_t rows = std::min(kRows, N - n0);
    for (int64_t r = 0; r < rows; ++r) {
      load(dyf.data() + r * OUT, dout + (n0 + r) * OUT, OUT);
      load(xf.data() + r * IN, inp + (n0 + r) * IN, IN);
      const float* g = dyf.data() + r * OUT;
      for (int64_t o = 0; o < OUT; ++o) db[static_cast<size_t>(o)] += g[o];
    }
    for (int64_t i = 0; i < IN; ++i) {
      float* dr = dw.data() + i * OUT;
      if (rows == kRows) {  // the four rows' products added in row order, with one load and store of dW
        const float a0 = xf[static_cast<size_t>(i)], a1 = xf[static_cast<size_t>(IN + i)];
        const float a2 = xf[static_cast<size_t>(2 * IN + i)], a3 = xf[static_cast<size_t>(3 * IN + i)];
        const float *g0 = dyf.data(), *g1 = g0 + OUT, *g2 = g1 + OUT, *g3 = g2 + OUT;
        for (int64_t o = 0; o < OUT; ++o) {
          float v = dr[o];
          v += a0 * g0[o];
          v += a1 * g1[o];
          v += a2 * g2[o];
          v += a3 * g3[o];
          dr[o] = v;
        }
        continue;
      }
      for (int64_t r = 0; r < rows; ++r) {
        const float a = xf[static_cast<size_t>(r * IN + i)];
        const float* g = dyf.data() + r * OUT;
        for (int64_t o = 0; o < OUT; ++o) dr[o] += a * g[o];
      }
    }
  }
  if (layout == WeightLayout::in_out) {
    for (int64_t k = 0; k < IN * OUT; ++k) grad_store(dweight[k], dw[static_cast<size_t>(k)], w);
  } else {
    for (int64_t o = 0; o < OUT; ++o)
      for (int64_t i = 0; i < IN; ++i) grad_store(dweight[o * IN + i], dw[static_cast<size_t>(i * OUT + o)], w);
  }
  if (dbias)
    for (int64_t o = 0; o < OUT; ++o) grad_store(dbias[o], db[static_cast<size_t>(o)], w);
  if (!dinp) return;
  // dinp[n] = Σ_o dout[n, o] · W[:, o], in increasing o: Wᵀ rows are contiguous over IN.
  auto& wt = scratch(0, static_cast<size_t>(IN * OUT));  // dW is stored already: reuse its scratch
  if (layout == WeightLayout::out_in) {
    load(wt.data(), weight, IN * OUT);
  } else {
    for (int64_t i = 0; i < IN; ++i)
      for (int64_t o = 0; o < OUT; ++o) wt[static_cast<size_t>(o * IN + i)] = to_f32(weight[i * OUT + o]);
  }
  auto& acc = scratch(2, static_cast<size_t>(kRows * IN));
  for (int64_t n0 = 0; n0 < N; n0 += kRows) {
    const int64_t rows = std::min(kRows, N - n0);
    for (int64_t r = 0; r < rows; ++r) load(dyf.data() + r * OUT, dout + (n0 + r) * OUT, OUT);
    tile_times_matrix(acc.data(), dyf.data(), wt.data(), rows, OUT, IN);
    for (int64_t r = 0; r < rows; ++r) {
      T* dx = dinp + (n0 + r) * IN;
      const float* ac = acc.data() + r * IN;
      if (accumulate_dinp)
        for (int64_t i = 0; i < IN; ++i) dx[i] = from_f32<T>(to_f32(dx[i]) + round_to<T>(ac[i]));
      else
        for (int64_t i = 0; i < IN; ++i) dx[i] = from_f32<T>(ac[i]);
    }
  }
}

// --- activations, residuals ----------------------------------------------------------------------------------

template <class T>
void gelu_forward(T* out, const T* inp, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float x = to_f32(inp[i]);
    const float u = kGeluScale * (x + 0.044715f * x * x * x);
    out[i] = from_f32<T>(0.5f * x * (1.0f + tanh_via_exp(u)));
  }
}

template <class T>
void gelu_backward(T* dinp, const T* inp, const T* dout, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float x = to_f32(inp[i]);
    const float u = kGeluScale * (x + 0.044715f * x * x * x);
    const float th = tanh_via_exp(u);
    const float sech2 = 1.0f - th * th;
    const float local = 0.5f * (1.0f + th) + 0.5f * x * sech2 * kGeluScale * (1.0f + 3.0f * 0.044715f * x * x);
    dinp[i] = from_f32<T>(local * to_f32(dout[i]));
  }
}

template <class T>
void swiglu_forward(T* out, const T* gate, const T* up, int64_t N, int64_t F, int64_t in_stride) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t f = 0; f < F; ++f) {
      const float g = to_f32(gate[n * in_stride + f]), u = to_f32(up[n * in_stride + f]);
      const float sig = 1.0f / (1.0f + std::exp(-g));
      out[n * F + f] = from_f32<T>(g * sig * u);
    }
}

template <class T>
void swiglu_backward(T* dgate, T* dup, const T* dout, const T* gate, const T* up, int64_t N, int64_t F,
                     int64_t in_stride) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t f = 0; f < F; ++f) {
      const int64_t k = n * in_stride + f;
      const float g = to_f32(gate[k]), u = to_f32(up[k]), dy = to_f32(dout[n * F + f]);
      const float sig = 1.0f / (1.0f + std::exp(-g));
      dgate[k] = from_f32<T>(dy * u * sig * (1.0f + g * (1.0f - sig)));
      dup[k] = from_f32<T>(dy * g * sig);
    }
}

template <class T>
void residual_forward(T* out, const T* a, const T* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = from_f32<T>(to_f32(a[i]) + to_f32(b[i]));
}

// --- loss --------------------------------------------------------------------------------------------------

template <class T>
void crossentropy_forward(float* losses, float* probs, const T* logits, const int32_t* targets, int64_t N, int64_t V) {
  for (int64_t n = 0; n < N; ++n) {
    const T* l = logits + n * V;
    float* p = probs + n * V;
    float mx = -INFINITY;
    for (int64_t v = 0; v < V; ++v) mx = std::max(mx, to_f32(l[v]));
    float sum = 0;
    for (int64_t v = 0; v < V; ++v) {
      p[v] = std::exp(to_f32(l[v]) - mx);
      sum += p[v];
    }
    const float inv = 1.0f / sum;
    for (int64_t v = 0; v < V; ++v) p[v] *= inv;
    losses[n] = -std::log(p[targets[n]]);
  }
}

template <class T>
void crossentropy_backward(T* dlogits, const float* probs, const int32_t* targets, int64_t N, int64_t V, float dloss) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t v = 0; v < V; ++v) {
      const float ind = v == targets[n] ? 1.0f : 0.0f;
      dlogits[n * V + v] = from_f32<T>((probs[n * V + v] - ind) * dloss);
    }
}

// --- gradients between buffers -------------------------------------------------------------------------------

template <class T>
void grad_accumulate(T* dst, const T* src, int64_t n, bool overwrite) {
  if (overwrite) {
    std::copy(src, src + n, dst);
    return;
  }
  for (int64_t i = 0; i < n; ++i) dst[i] = from_f32<T>(to_f32(dst[i]) + to_f32(src[i]));
}

template <class T>
double cast_to_f32_sumsq(float* out, const T* in, int64_t n) {
  // Four fixed lanes (element i goes to lane i % 4), combined as (l0 + l1) + (l2 + l3): one order everywhere.
  double l[4] = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int k = 0; k < 4; ++k) {
      const float v = to_f32(in[i + k]);
      if (out) out[i + k] = v;
      l[k] += static_cast<double>(v) * static_cast<double>(v);
    }
  for (; i < n; ++i) {
    const float v = to_f32(in[i]);
    if (out) out[i] = v;
    l[i % 4] += static_cast<double>(v) * static_cast<double>(v);
  }
  return (l[0] + l[1]) + (l[2] + l[3]);
}

template <class T>
void cast_from_f32(T* out, const float* in, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = from_f32<T>(in[i]);
}

#define ZS_INSTANTIATE(T)                                                                                             \
  template void grad_store<T>(T&, float, GradWrite);                                                                  \
  template void embedding_forward<T>(T*, const int32_t*, const T*, int64_t, int64_t);                                 \
  template void embedding_backward<T>(T*, const T*, const int32_t*, int64_t, int64_t, int64_t, GradWrite);            \
  template void position_forward<T>(T*, const T*, int64_t, int64_t, int64_t);                                         \
  template void position_backward<T>(T*, const T*, int64_t, int64_t, int64_t, int64_t, GradWrite);                    \
  template void layernorm_forward<T>(T*, const T*, const T*, const T*, int64_t, int64_t, float);                      \
  template void layernorm_backward<T>(T*, T*, T*, const T*, const T*, const T*, const T*, int64_t, int64_t, float,    \
                                      GradWrite);                                                                     \
  template void rmsnorm_forward<T>(T*, const T*, const T*, int64_t, int64_t, float);                                  \
  template void rmsnorm_backward<T>(T*, T*, const T*, const T*, const T*, const T*, int64_t, int64_t, float,          \
                                    GradWrite);                                                                       \
  template void matmul_forward<T>(T*, const T*, const T*, const T*, int64_t, int64_t, int64_t, WeightLayout);         \
  template void matmul_backward<T>(T*, T*, T*, const T*, const T*, const T*, int64_t, int64_t, int64_t, WeightLayout, \
                                   GradWrite, bool);                                                                  \
  template void gelu_forward<T>(T*, const T*, int64_t);                                                               \
  template void gelu_backward<T>(T*, const T*, const T*, int64_t);                                                    \
  template void swiglu_forward<T>(T*, const T*, const T*, int64_t, int64_t, int64_t);                                 \
  template void swiglu_backward<T>(T*, T*, const T*, const T*, const T*, int64_t, int64_t, int64_t);                  \
  template void residual_forward<T>(T*, const T*, const T*, int64_t);                                                 \
  template void crossentropy_forward<T>(float*, float*, const T*, const int32_t*, int64_t, int64_t);                  \
  template void crossentropy_backward<T>(T*, const float*, const int32_t*, int64_t, int64_t, float);                  \
  template void grad_accumulate<T>(T*, const T*, int64_t, bool);                                                      \
  template double cast_to_f32_sumsq<T>(float*, const T*, int64_t);                                                    \
  template void cast_from_f32<T>(T*, const float*, int64_t);

ZS_INSTANTIATE(float)
ZS_INSTANTIATE(bf16_t)
ZS_INSTANTIATE(fp16_t)

}  // namespace zs::exec
