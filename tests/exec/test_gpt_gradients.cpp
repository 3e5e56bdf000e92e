// The GPT's backward against finite differences of its forward (fp32 storage), for the GPT-2 layout (learned
// positions, LayerNorm, GELU, tied head, biases) and the LLaMA layout (rotary, RMSNorm, SwiGLU, GQA, untied);
// then the 16-bit paths against fp32, and the arena sizes against the memory model's activation count.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/memory.h"
#include "core/strategy.h"
#include "exec/gpt_model.h"

using namespace zs::exec;
using zs::core::ModelSpec;

namespace {

ModelSpec gpt_spec() {
  ModelSpec m;
  m.name = "grad-gpt";
  m.arch = zs::core::Arch::gpt;
  m.layers = 2;
  m.hidden = 16;
  m.heads = 2;
  m.kv_heads = 2;
  m.head_dim = 8;
  m.ffn_hidden = 32;
  m.vocab = 23;
  m.max_seq_len = 8;
  m.tied_embeddings = true;
  m.activation = zs::core::Activation::gelu;
  m.norm = zs::core::Norm::layernorm;
  m.position = zs::core::Position::learned;
  m.qkv_bias = m.mlp_bias = m.attn_out_bias = m.norm_bias = true;
  return m;
}

ModelSpec llama_spec() {
  ModelSpec m;
  m.name = "grad-llama";
  m.arch = zs::core::Arch::llama;
  m.layers = 2;
  m.hidden = 16;
  m.heads = 4;
  m.kv_heads = 2;
  m.head_dim = 4;
  m.ffn_hidden = 24;
  m.vocab = 19;
  m.max_seq_len = 8;
  m.tied_embeddings = false;
  m.activation = zs::core::Activation::swiglu;
  m.norm = zs::core::Norm::rmsnorm;
  m.position = zs::core::Position::rope;
  m.qkv_bias = true;  // Qwen2-style biases on q, k, v
  m.mlp_bias = m.attn_out_bias = m.norm_bias = false;
  return m;
}

struct Fixture {
  GptModel model;
  std::vector<std::vector<float>> p, g;
  std::vector<int32_t> tok, tgt;

  explicit Fixture(const ModelSpec& spec, int64_t B = 2, int64_t T = 6)
      : model(*GptModel::create(spec, DType::fp32, B, T)) {
    for (size_t i = 0; i < model.params().size(); ++i) {
      p.emplace_back(static_cast<size_t>(model.params()[i].numel));
      g.emplace_back(static_cast<size_t>(model.params()[i].numel));
      model.init_param(i, p.back().data(), 7);
      // Perturb norms and biases away from 1/0 so their gradients are exercised in general position.
      for (size_t k = 0; k < p.back().size(); ++k) p.back()[k] += 0.05f * std::sin(static_cast<float>(3 * i + k));
    }
    for (int64_t n = 0; n < B * T; ++n) {
      tok.push_back(static_cast<int32_t>((n * 7 + 3) % spec.vocab));
      tgt.push_back(static_cast<int32_t>((n * 5 + 1) % spec.vocab));
    }
  }
  double loss(bool with_grads) {
    std::vector<const void*> pp;
    std::vector<void*> gp;
    for (auto& x : p) pp.push_back(x.data());
    if (with_grads)
      for (auto& x : g) gp.push_back(x.data());
    return forward_backward(model, pp, gp, GradWrite::overwrite, tok.data(), tgt.data(),
                            1.0f / static_cast<float>(model.tokens()));
  }
};

void check_gradients(const ModelSpec& spec) {
  Fixture f(spec);
  f.loss(true);
  int checked = 0;
  for (size_t i = 0; i < f.p.size(); ++i) {
    const size_t n = f.p[i].size();
    for (size_t k : {size_t{0}, n / 3, n / 2, n - 1}) {
      const float keep = f.p[i][k];
      const float eps = 1e-2f * std::max(1.0f, std::fabs(keep));
      f.p[i][k] = keep + eps;
      const double lp = f.loss(false);
      f.p[i][k] = keep - eps;
      const double lm = f.loss(false);
      f.p[i][k] = keep;
      const double num = (lp - lm) / (2.0 * eps);
      const double ana = f.g[i][k];
      INFO(spec.name << " " << f.model.params()[i].name << "[" << k << "]: analytic " << ana << ", numeric " << num);
      CHECK(std::fabs(ana - num) <= 3e-4 + 3e-2 * std::fabs(num));
      ++checked;
    }
  }
  CHECK(checked >= 4 * 10);
}

}  // namespace

TEST_CASE("GPT-2 layout: backward equals finite differences", "[gpt]") { check_gradients(gpt_spec()); }

TEST_CASE("LLaMA layout (rope, rmsnorm, swiglu, GQA, untied): backward equals finite differences", "[gpt]") {
  check_gradients(llama_spec());
}

TEST_CASE("GPT-2 layout with SwiGLU and rotary positions: backward equals finite differences", "[gpt]") {
  ModelSpec m = gpt_spec();
  m.activation = zs::core::Activation::swiglu;
  m.position = zs::core::Position::rope;
  m.tied_embeddings = false;
  check_gradients(m);
}

TEST_CASE("bf16 and fp16 storage follow the fp32 gradients", "[gpt]") {
  const ModelSpec spec = gpt_spec();
  Fixture f32(spec);
  const double l32 = f32.loss(true);
  for (DType d : {DType::bf16, DType::fp16}) {
    GptModel m = *GptModel::create(spec, d, 2, 6);
    std::vector<std::vector<uint16_t>> p, g;
    std::vector<const void*> pp;
    std::vector<void*> gp;
    for (size_t i = 0; i < f32.p.size(); ++i) {
      p.emplace_back(f32.p[i].size());
      g.emplace_back(f32.p[i].size());
      for (size_t k = 0; k < f32.p[i].size(); ++k)
        p.back()[k] = d == DType::bf16 ? float_to_bf16(f32.p[i][k]) : float_to_fp16(f32.p[i][k]);
    }
    for (size_t i = 0; i < p.size(); ++i) {
      pp.push_back(p[i].data());
      gp.push_back(g[i].data());
    }
    const double l16 = forward_backward(m, pp, gp, GradWrite::overwrite, f32.tok.data(), f32.tgt.data(),
                                        1.0f / static_cast<float>(m.tokens()));
    CHECK(std::fabs(l16 - l32) < 0.05 * std::fabs(l32));
    for (size_t i = 0; i < g.size(); ++i) {
      double num = 0, den = 0;
      for (size_t k = 0; k < g[i].size(); ++k) {
        const float v = d == DType::bf16 ? bf16_to_float(g[i][k]) : fp16_to_float(g[i][k]);
        num += (v - f32.g[i][k]) * (v - f32.g[i][k]);
        den += static_cast<double>(f32.g[i][k]) * f32.g[i][k];
      }
      INFO(to_string(d) << " " << m.params()[i].name);
      CHECK(std::sqrt(num) <= 0.05 * std::sqrt(den) + 1e-6);
    }
  }
}

TEST_CASE("GA semantics: accumulate adds each micro-step's rounded gradient", "[gpt]") {
  Fixture f(gpt_spec());
  f.loss(true);
  auto g1 = f.g;
  std::vector<const void*> pp;
  std::vector<void*> gp;
  for (auto& x : f.p) pp.push_back(x.data());
  for (auto& x : f.g) gp.push_back(x.data());
  forward_backward(f.model, pp, gp, GradWrite::accumulate, f.tok.data(), f.tgt.data(),
                   1.0f / static_cast<float>(f.model.tokens()));
  // Untied parameters: exactly twice (one rounded contribution each); the tied embedding adds two per call.
  for (size_t i = 0; i < g1.size(); ++i)
    for (size_t k = 0; k < g1[i].size(); ++k) {
      if (i == 0)
        REQUIRE(std::fabs(f.g[i][k] - 2 * g1[i][k]) <= 1e-6f * std::fabs(g1[i][k]) + 1e-9f);
      else
        REQUIRE(f.g[i][k] == g1[i][k] + g1[i][k]);
    }
}

TEST_CASE("the engine's arenas fit the memory model's activation count", "[gpt]") {
  for (const ModelSpec& spec : {gpt_spec(), llama_spec()}) {
    for (auto act : {zs::core::Activation::gelu, zs::core::Activation::swiglu}) {
      ModelSpec m = spec;
      m.activation = act;
      zs::core::Strategy s;
      s.bf16.enabled = true;
      s.micro_batch_per_gpu = 3;
      s.run.seq_len = 5;
      const auto a = zs::core::activation_bytes(m, s, {});
      GptModel g = *GptModel::create(m, DType::bf16, 3, 5);
      INFO(m.name << " " << zs::core::to_string(act));
      CHECK(g.layer_bytes() <= a.per_layer_full);
      CHECK(g.head_bytes() <= a.head_and_loss);
      CHECK(g.checkpoint_bytes() == a.per_layer_checkpoint);
    }
  }
}
