// What each module computes and what a block keeps for backward, for the families beyond GPT-2 and LLaMA, MoE and
// LoRA: core/activations.cpp, core/scheduler_compute.cpp, cost_model.cpp eager_kernels_per_block. Every number is
// derived by hand in the comments (Korthikanti et al. 2022 with HF's layouts; PEFT tuners/lora/layer.py).
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "core/cost_model.h"
#include "core/memory.h"
#include "core/model.h"
#include "core/scheduler.h"
#include "core/strategy.h"

using namespace zs::core;

namespace {

Strategy bf16_run(int64_t seq_len, int64_t micro_batch = 1) {
  RunSettings run;
  run.gpus_per_node = 1;
  run.seq_len = seq_len;
  const std::string json = R"({"train_micro_batch_size_per_gpu": )" + std::to_string(micro_batch) +
                           R"(, "bf16": {"enabled": true}})";
  auto s = parse_ds_config_text(json, "inline.json", run);
  if (!s.ok()) FAIL(s.error().message);
  return *s;
}

// A LLaMA-layout spec (RMSNorm, rope, SwiGLU, no dropout); the tests set the family fields by hand.
ModelSpec llama_like(int64_t layers, int64_t h, int64_t heads, int64_t kv_heads, int64_t head_dim, int64_t ffn,
                     int64_t vocab) {
  ModelSpec m;
  m.name = "hand-built";
  m.arch = Arch::llama;
  m.layers = layers;
  m.hidden = h;
  m.heads = heads;
  m.kv_heads = kv_heads;
  m.head_dim = head_dim;
  m.ffn_hidden = ffn;
  m.vocab = vocab;
  m.max_seq_len = 4096;
  m.tied_embeddings = false;
  m.activation = Activation::swiglu;
  m.norm = Norm::rmsnorm;
  m.norm_bias = false;
  m.position = Position::rope;
  return m;
}

// Mixtral-8x7B (config.json: hidden 4096, 32 heads, 8 KV heads, intermediate 14336, 8 experts, top-2, vocab 32000).
ModelSpec mixtral() {
  ModelSpec m = llama_like(32, 4096, 32, 8, 128, 14336, 32000);
  m.arch = Arch::mixtral;
  m.moe.experts = 8;
  m.moe.top_k = 2;
  m.moe.expert_ffn = 14336;
  return m;
}

TensorInfo weight(const std::string& module, std::vector<int64_t> shape, ModuleRole role, double token_fraction = 1) {
  TensorInfo t;
  t.module = module;
  t.name = module + ".weight";
  t.numel = shape[0] * shape[1];
  t.params = t.numel;
  t.shape = std::move(shape);
  t.is_matmul = true;
  t.role = role;
  t.token_fraction = token_fraction;
  return t;
}

// Modules of consecutive tensors with the same module name (as model.cpp groups them).
std::vector<ModuleInfo> modules_of(const std::vector<TensorInfo>& t) {
  std::vector<ModuleInfo> out;
  for (size_t i = 0; i < t.size(); ++i) {
    if (out.empty() || out.back().name != t[i].module) out.push_back(ModuleInfo{t[i].module, 0, 0, {}, t[i].role});
    out.back().tensors.push_back(i);
  }
  return out;
}

ModuleInfo role_only(const std::string& name, ModuleRole role) { return ModuleInfo{name, 0, 0, {}, role}; }

}  // namespace

TEST_CASE("Mixtral's MoE layer keeps top_k copies of the tokens through the experts", "[family_compute]") {
  const ModelSpec m = mixtral();
  const ActivationBytes a = activation_bytes(m, bf16_run(4096), MemoryOptions{});
  // sb = 4096, bf16 (e = 2), flash attention. Per row of sb:
  //   attention: 2 norm inputs 2·2·4096 = 16384, projection input 8192, Q K V 2·(4096 + 2·1024) = 12288,
  //              O 8192, fp32 log-sum-exp 4·32 = 128                                      → 45184
  //   MoE: block input 8192; router fp32 probabilities 4·8, top-k weights 4·2, int64 choice and row indices
  //        16·2 → 72; routed rows 2·(2·2·4096 + 4·2·14336 + 2) = 262148                     → 270412
  // 315596 · 4096 = 1292681216 bytes (1.20 GiB; the dense MLP of the same width keeps 122880·sb).
  CHECK(a.per_layer_full == 1292681216);
  // No dropout in the LLaMA family: no embedding mask; the head: 2 inputs 2·2·4096·4096 + (2 + 8)·4096·32000.
  CHECK(a.embedding == 0);
  CHECK(a.gpu_peak == 32 * 1292681216LL + 67108864 + 1310720000);
}

TEST_CASE("DeepSeek: latent attention, shared experts, and the first dense layer in the peak", "[family_compute]") {
  // DeepSeek-V2-Lite (config.json): hidden 2048, 16 heads, q_lora_rank null, kv_lora_rank 512, qk_nope 128,
  // qk_rope 64, v 128; 64 experts, top-6, moe_intermediate 1408, 2 shared experts; first_k_dense_replace 1 with
  // intermediate 10944; 27 layers; vocab 102400.
  ModelSpec m = llama_like(27, 2048, 16, 16, 192, 10944, 102400);
  m.arch = Arch::deepseek_v2;
  m.mla = MlaSpec{0, 512, 128, 64, 128};
  m.moe.experts = 64;
  m.moe.top_k = 6;
  m.moe.expert_ffn = 1408;
  m.moe.shared_experts = 2;
  m.moe.first_dense_layers = 1;
  const ActivationBytes a = activation_bytes(m, bf16_run(2048), MemoryOptions{});
  // Per row (sb = 2048, e = 2): attention: norms 8192, projection input 4096, the kv latent and its norm output
  // 2·2·512 = 2048, Q K (16·192 = 3072 each) V (16·128 = 2048): 2·8192 = 16384, O 4096, lse 64 → 34880.
  // Dense layer MLP: input 4096 + 4·2·10944 = 91648. MoE: input 4096, router 4·64 + 4·6 + 16·6 = 376, routed
  // 6·(2·2·2048 + 4·2·1408 + 2) = 116748, shared 4·2·2816 = 22528 → 143748.
  // MoE layer 178628 · 2048 = 365830144 is the largest; the peak sums the dense layer (126528) and 26 MoE layers.
  CHECK(a.per_layer_full == 365830144);
  CHECK(a.gpu_peak == (126528 + 26 * 178628LL) * 2048 + 2 * 2 * 2048 * 2048 + 10 * 2048 * 102400LL);

  // Checkpointed: one block input per layer plus the largest block recomputed.
  Strategy ck = bf16_run(2048);
  ck.activation_checkpointing.enabled = true;
  const ActivationBytes c = activation_bytes(m, ck, MemoryOptions{});
  CHECK(c.gpu_peak == 27 * 2 * 2048 * 2048LL + std::max<int64_t>(365830144, c.head_and_loss));
}

TEST_CASE("dropout masks only where the family trains with dropout", "[family_compute]") {
  ModelSpec m = llama_like(2, 1024, 16, 16, 64, 2816, 32000);
  MemoryOptions eager;
  eager.flash_attention = false;
  const Strategy s = bf16_run(1024);
  const ActivationBytes off = activation_bytes(m, s, eager);
  CHECK(off.embedding == 0);
  m.dropout = true;  // OPT / GPT-2 style
  const ActivationBytes on = activation_bytes(m, s, eager);
  // sb = 1024: attention-output and MLP masks 2·sb·h, the scores' mask and dropout output (1 + 2)·a·sb·s.
  CHECK(on.per_layer_full - off.per_layer_full == 2 * 1024 * 1024 + 3 * 16 * 1024 * 1024);
  CHECK(on.embedding == 1024 * 1024);
}

TEST_CASE("Gemma2's sandwich norms and wide heads; qk_norm; a parallel block's shared norm", "[family_compute]") {
  // Gemma2-9B: hidden 3584, 16 heads of 256 (q = 4096 != hidden), 8 KV heads, GeGLU 14336, 4 norms per block.
  ModelSpec g = llama_like(42, 3584, 16, 8, 256, 14336, 256000);
  g.arch = Arch::gemma2;
  g.block_norms = 4;
  const ActivationBytes a = activation_bytes(g, bf16_run(4096), MemoryOptions{});
  // Per row: norms 4·2·3584 = 28672, projection input 7168, Q K V 2·(4096 + 2·2048) = 16384, O 8192, lse 64,
  // MLP input 7168 + 4·2·14336 = 121856 → 182336 · 4096.
  CHECK(a.per_layer_full == 746848256);

  g.block_norms = 2;
  const int64_t two_norms = activation_bytes(g, bf16_run(4096), MemoryOptions{}).per_layer_full;
  CHECK(a.per_layer_full - two_norms == 2 * 2 * 4096 * 3584);
  g.qk_norm = true;  // Qwen3 / Gemma3: q_norm and k_norm keep their inputs, 2·(4096 + 2048) per row
  CHECK(activation_bytes(g, bf16_run(4096), MemoryOptions{}).per_layer_full - two_norms == 2 * 4096 * 6144);

  // GPT-J-like: one norm for attention and MLP (parallel residual): one norm input and no separate MLP input.
  ModelSpec j = llama_like(2, 4096, 32, 32, 128, 16384, 50400);
  j.activation = Activation::gelu;
  const int64_t serial = activation_bytes(j, bf16_run(2048), MemoryOptions{}).per_layer_full;
  j.parallel_residual = true;
  j.block_norms = 1;
  CHECK(serial - activation_bytes(j, bf16_run(2048), MemoryOptions{}).per_layer_full == 2 * 2 * 2048 * 4096);
  j.block_norms = 2;  // gpt_neox: two norms of the same block input; their outputs differ
  CHECK(serial - activation_bytes(j, bf16_run(2048), MemoryOptions{}).per_layer_full == 2 * 2048 * 4096);
}

TEST_CASE("a MoE block's FLOPs: the router and top_k of the experts", "[family_compute]") {
  const ModelSpec m = mixtral();
  std::vector<TensorInfo> t;
  const std::string blk = "model.layers.0.block_sparse_moe";
  t.push_back(weight(blk, {8, 4096}, ModuleRole::moe));
  for (int x = 0; x < 8; ++x)
    for (const char* w : {"w1", "w3", "w2"}) {
      TensorInfo e = weight(blk, {14336, 4096}, ModuleRole::moe, 2.0 / 8.0);
      e.name = blk + ".experts." + std::to_string(x) + "." + w + ".weight";
      t.push_back(e);
    }
  const auto modules = modules_of(t);
  REQUIRE(modules.size() == 1);
  const auto c = sched::forward_costs(m, bf16_run(4096), MemoryOptions{}, modules, t);
  // 2·T·(router E·h + top_k·3·h·f) = 2·4096·(8·4096 + 2·3·4096·14336) = 2886486458368.
  CHECK(c[0].gemm_flops == 2886486458368.0);
  CHECK(c[0].frozen_gemm_flops == 0.0);
  CHECK(c[0].role == ModuleRole::moe);
  // T = 4096, e = 2: softmax and top-k (2 + 8)·T·8 + (28 + 2)·T·2 = 573440; gather 2·2·2·T·4096 = 134217728;
  // SwiGLU 3·2·2·T·14336 = 704643072; weighted sum 5·2·2·T·4096 + 2·T·4096 = 369098752; residual 3·2·T·4096.
  CHECK(c[0].mem_bound_bytes == 1309196288);
}

TEST_CASE("LoRA: frozen base GEMMs from params, not packed numel; the adapter's own traffic", "[family_compute]") {
  ModelSpec m = llama_like(1, 4096, 32, 32, 128, 11008, 32000);
  m.adapter.kind = AdapterKind::lora;
  m.adapter.lora.r = 8;
  m.adapter.lora.dropout = 0.1;
  const std::string o = "model.layers.0.self_attn.o_proj";
  std::vector<TensorInfo> t;
  TensorInfo base = weight(o + ".base_layer", {4096, 4096}, ModuleRole::attn_out);
  base.trainable = false;
  base.quant_bits = 4;
  base.numel = base.params / 4;  // NF4 packed in a bf16 storage
  t.push_back(base);
  t.push_back(weight(o + ".lora_A.default", {8, 4096}, ModuleRole::attn_out));
  t.push_back(weight(o + ".lora_B.default", {4096, 8}, ModuleRole::attn_out));
  const auto c = sched::forward_costs(m, bf16_run(2048), MemoryOptions{}, modules_of(t), t);
  REQUIRE(c.size() == 3);
  // T = 2048. Base: 2·T·4096² = 68719476736, all frozen, plus the attention core 4·T·s·q = 4·2048·2048·4096.
  const double core = 4.0 * 2048 * 2048 * 4096;
  CHECK(c[0].attention_flops == core);
  CHECK(c[0].gemm_flops == 68719476736.0 + core);
  CHECK(c[0].frozen_gemm_flops == 68719476736.0);
  // A and B: 2·T·8·4096 = 134217728 each, trainable; no attention core of their own.
  CHECK(c[1].gemm_flops == 134217728.0);
  CHECK(c[2].gemm_flops == 134217728.0);
  CHECK(c[1].frozen_gemm_flops == 0.0);
  CHECK(c[1].attention_flops == 0.0);
  // lora_A: dropout reads x, writes the copy and its mask: (2·2 + 1)·T·4096. lora_B: scale (r/w) and add
  // (2 reads, 1 write) on [T, 4096]: 5·2·T·4096.
  CHECK(c[1].mem_bound_bytes == 5 * 2048 * 4096);
  CHECK(c[2].mem_bound_bytes == 10 * 2048 * 4096);
}

TEST_CASE("LoRA layers keep lora_A's output and, with dropout, a dropped copy of the input", "[family_compute]") {
  // The adapter table (adapter_table.cpp) names lora_A "<module>.lora_A.default.weight" [r, in]; activation_bytes
  // reads the shared table.
  ModelSpec m = llama_like(2, 1024, 16, 16, 64, 2816, 32000);
  const int64_t full = activation_bytes(m, bf16_run(1024), MemoryOptions{}).per_layer_full;
  m.adapter.kind = AdapterKind::lora;
  m.adapter.lora.r = 16;
  m.adapter.lora.dropout = 0.05;
  m.adapter.lora.target_modules = {"q_proj", "v_proj"};
  int64_t expected = 0;  // per layer: per targeted Linear [16, 1024]: lora_A output 2·sb·16 + (2 + 1)·sb·1024
  for (const auto& t : *shared_tensor_table(m))
    if (t.layer == 0 && t.name.find(".lora_A.") != std::string::npos) expected += 2 * 1024 * 16 + 3 * 1024 * 1024;
  CHECK(activation_bytes(m, bf16_run(1024), MemoryOptions{}).per_layer_full == full + expected);
  bool adapter_built = false;
  for (const auto& t : *shared_tensor_table(m)) adapter_built |= t.name.find(".lora_A.") != std::string::npos;
  REQUIRE(adapter_built);
  CHECK(expected == 2 * (2 * 1024 * 16 + 3 * 1024 * 1024));  // q_proj and v_proj
  m.adapter.lora.dropout = 0;  // lora_A reads x itself: only its [sb, 16] outputs
  CHECK(activation_bytes(m, bf16_run(1024), MemoryOptions{}).per_layer_full == full + 2 * 2 * 1024 * 16);
}

TEST_CASE("attention cores: wide heads, latent attention, ALiBi, qk_norm, parallel residual", "[family_compute]") {
  const Strategy s = bf16_run(2048);
  const double T = 2048, seq = 2048;
  SECTION("Gemma: heads·head_dim = 4096 against hidden 3584") {
    ModelSpec g = llama_like(1, 3584, 16, 8, 256, 14336, 256000);
    const auto c = sched::forward_costs(g, s, {}, {role_only("o", ModuleRole::attn_out)}, {});
    CHECK(c[0].attention_flops == 4 * T * seq * 4096);
    // Q K V 2·T·(4096 + 4096) + O 2·T·4096, rotary 2·2·T·(4096 + 2048), residual 3·2·T·3584.
    CHECK(c[0].mem_bound_bytes == 2 * 2048 * (8192 + 4096) + 4 * 2048 * 6144 + 6 * 2048 * 3584);
    g.qk_norm = true;
    const auto n = sched::forward_costs(g, s, {}, {role_only("o", ModuleRole::attn_out)}, {});
    CHECK(n[0].mem_bound_bytes - c[0].mem_bound_bytes == 4 * 2048 * 6144);
  }
  SECTION("DeepSeek-V2-Lite's MLA: QK over 192 per head, AV over 128, rotary on 64") {
    ModelSpec d = llama_like(1, 2048, 16, 16, 192, 10944, 102400);
    d.mla = MlaSpec{0, 512, 128, 64, 128};
    const auto c = sched::forward_costs(d, s, {}, {role_only("o", ModuleRole::attn_out)}, {});
    CHECK(c[0].attention_flops == 2 * T * seq * (3072 + 2048));
    // Q K V 2·T·(2·3072 + 2048), O 2·T·2048, rotary 2·2·T·(16·64 + 64), cats 2·2·T·(2·3072), residual 6·T·2048.
    CHECK(c[0].mem_bound_bytes == 126353408);
  }
  SECTION("bloom: ALiBi reads its per-head bias instead of rotating Q and K") {
    ModelSpec b = llama_like(1, 1024, 16, 16, 64, 4096, 250880);
    b.position = Position::alibi;
    const auto c = sched::forward_costs(b, s, {}, {role_only("o", ModuleRole::attn_out)}, {});
    CHECK(c[0].mem_bound_bytes == 2 * 2048 * (3072 + 1024) + 2 * 16 * 2048 + 6 * 2048 * 1024);
  }
  SECTION("parallel residual: one three-way add at the MLP's end") {
    ModelSpec j = llama_like(1, 4096, 32, 32, 128, 16384, 50400);
    const std::vector<ModuleInfo> mods = {role_only("o", ModuleRole::attn_out), role_only("d", ModuleRole::mlp_out)};
    const auto serial = sched::forward_costs(j, s, {}, mods, {});
    j.parallel_residual = true;
    const auto par = sched::forward_costs(j, s, {}, mods, {});
    CHECK(serial[0].mem_bound_bytes - par[0].mem_bound_bytes == 6 * 2048 * 4096);
    CHECK(par[1].mem_bound_bytes == 12 * 2048 * 4096);
  }
}

TEST_CASE("a q/k norm's traffic is the attention core's; MLA's latent norms run over their width", "[family_compute]") {
  ModelSpec q = llama_like(1, 4096, 32, 8, 128, 12288, 151936);
  q.qk_norm = true;
  TensorInfo qn;
  qn.module = "model.layers.0.self_attn.q_norm";
  qn.name = qn.module + ".weight";
  qn.shape = {128};
  qn.numel = qn.params = 128;
  qn.role = ModuleRole::norm;
  TensorInfo kvn = qn;
  kvn.module = "model.layers.0.self_attn.kv_a_layernorm";
  kvn.name = kvn.module + ".weight";
  kvn.shape = {512};
  const std::vector<TensorInfo> t = {qn, kvn};
  const auto c = sched::forward_costs(q, bf16_run(1024), {}, modules_of(t), t);
  CHECK(c[0].mem_bound_bytes == 0);
  CHECK(c[1].mem_bound_bytes == 2 * 2 * 1024 * 512);
}

TEST_CASE("HF eager kernels per block for the new layouts", "[family_compute]") {
  const auto sdpa = AttnImplementation::sdpa, eager = AttnImplementation::eager;
  // The shipped layouts keep their counts (tests/sim/test_cost_model.cpp): LLaMA 39 / 42, GPT-2 20 / 24.
  auto llama = load_model("llama2-7b");
  auto gpt2 = load_model("gpt2-1.5b");
  REQUIRE(llama.ok());
  REQUIRE(gpt2.ok());
  CHECK(eager_kernels_per_block(*llama, sdpa) == 39);
  CHECK(eager_kernels_per_block(*llama, eager) == 42);
  CHECK(eager_kernels_per_block(*gpt2, AttnImplementation::flash_attention_2) == 20);
  CHECK(eager_kernels_per_block(*gpt2, eager) == 24);  // + eager's 5 - 2 and its attention dropout
  // Mixtral: q, k, v, o 4; 2 RMSNorms 16; rotary 10; 2 adds; fused attention 2 → 34; router 11; 8 experts × 10.
  CHECK(eager_kernels_per_block(mixtral(), sdpa) == 34 + 11 + 80);
  // Gemma2: 4 + sandwich 4 × 8 + 10 + 2 + 2 + SwiGLU-shaped GeGLU 3 + 2 = 55; eager attention 5 instead of 2.
  ModelSpec g = llama_like(1, 3584, 16, 8, 256, 14336, 256000);
  g.arch = Arch::gemma2;
  g.block_norms = 4;
  CHECK(eager_kernels_per_block(g, sdpa) == 55);
  CHECK(eager_kernels_per_block(g, eager) == 58);
  // Qwen3: 4 + 2 norms 16 + q_norm, k_norm 16 + 10 + 2 + 2 + 5 = 55.
  ModelSpec q = llama_like(1, 4096, 32, 8, 128, 12288, 151936);
  q.arch = Arch::qwen3;
  q.qk_norm = true;
  CHECK(eager_kernels_per_block(q, sdpa) == 55);
  // GPT-J: q, k, v, out 4; one LayerNorm 1; rotary 10; 2 adds; 2; fc, proj and gelu_new 2 + 8 → 29.
  ModelSpec j = llama_like(1, 4096, 16, 16, 256, 16384, 50400);
  j.arch = Arch::gptj;
  j.norm = Norm::layernorm;
  j.activation = Activation::gelu;
  j.parallel_residual = true;
  j.block_norms = 1;
  CHECK(eager_kernels_per_block(j, sdpa) == 29);
  // Bloom: fused QKV + out 2; 2 LayerNorms; 2 adds; eager 5 (baddbmm takes ALiBi) or fused 2 + the bias 1; GELU 10.
  ModelSpec b = j;
  b.arch = Arch::bloom;
  b.position = Position::alibi;
  b.parallel_residual = false;
  b.block_norms = 2;
  CHECK(eager_kernels_per_block(b, eager) == 21);
  CHECK(eager_kernels_per_block(b, sdpa) == 19);
  // DeepSeek-V3: q_a, q_a_layernorm, q_b, kv_a, kv_a_layernorm, kv_b, o 21; norms 16; rotary + 2 cats 12; 2; 2;
  // router 23 + final cast 1; 256 experts × 10; shared expert 5 + add 1 → 2643.
  ModelSpec d = llama_like(1, 7168, 128, 128, 192, 18432, 129280);
  d.arch = Arch::deepseek_v3;
  d.mla = MlaSpec{1536, 512, 128, 64, 128};
  d.moe.experts = 256;
  d.moe.top_k = 8;
  d.moe.expert_ffn = 2048;
  d.moe.shared_experts = 1;
  d.moe.router_bias = true;
  CHECK(eager_kernels_per_block(d, sdpa) == 2643);
}

// The families' own tables (model_moe.cpp, model_families.cpp, adapter_table.cpp) through forward_costs: the
// per-module FLOPs add up to flops_per_token's, and each role's work is counted once.
TEST_CASE("real tables: Mixtral's sparse block, a LoRA run's frozen base, Qwen3's q/k norms", "[family_compute]") {
  const Strategy s = bf16_run(4096);
  const double T = 4096;
  auto totals = [&](const ModelSpec& m) {
    const auto c = sched::forward_costs(m, s, {}, *shared_module_table(m), *shared_tensor_table(m));
    double gemm = 0, attention = 0, frozen = 0;
    for (const auto& x : c) {
      gemm += x.gemm_flops - x.attention_flops;
      attention += x.attention_flops;
      frozen += x.frozen_gemm_flops;
    }
    const FlopsPerToken f = flops_per_token(m, 4096);
    CHECK(gemm == Approx(T * f.forward_gemm).epsilon(1e-12));
    CHECK(attention == Approx(T * f.forward_attention).epsilon(1e-12));
    CHECK(frozen == Approx(T * f.frozen_gemm).epsilon(1e-12));
    return c;
  };
  SECTION("Mixtral: the block_sparse_moe module") {
    const ModelSpec m = mixtral();
    const auto c = totals(m);
    const auto& mods = *shared_module_table(m);
    size_t moe = mods.size();
    for (size_t i = 0; i < mods.size(); ++i)
      if (mods[i].name == "model.layers.0.block_sparse_moe") moe = i;
    REQUIRE(moe < mods.size());
    CHECK(c[moe].role == ModuleRole::moe);
    CHECK(c[moe].gemm_flops == 2886486458368.0);  // as the hand-built block above
    CHECK(c[moe].mem_bound_bytes == 1309196288);
  }
  SECTION("LoRA on q_proj and v_proj: everything but the adapter is frozen") {
    ModelSpec m = llama_like(2, 1024, 16, 16, 64, 2816, 32000);
    m.adapter.kind = AdapterKind::lora;
    m.adapter.lora.r = 16;
    m.adapter.lora.target_modules = {"q_proj", "v_proj"};
    const auto c = totals(m);
    double frozen = 0, gemm = 0;
    for (const auto& x : c) {
      frozen += x.frozen_gemm_flops;
      gemm += x.gemm_flops - x.attention_flops;
    }
    // Trainable: per layer 2 × (A [16, 1024] + B [1024, 16]) = 65536 params, 2·T·65536 FLOPs per layer.
    CHECK(gemm - frozen == 2 * 2 * T * 65536);
    int attention_cores = 0;
    for (const auto& x : c) attention_cores += x.attention_flops > 0 ? 1 : 0;
    CHECK(attention_cores == 2);  // one per block, on o_proj
  }
  SECTION("Qwen3: q_norm and k_norm add no traffic of their own, the core has it") {
    ModelSpec m = llama_like(2, 4096, 32, 8, 128, 12288, 151936);
    m.arch = Arch::qwen3;
    m.qk_norm = true;
    const auto c = totals(m);
    const auto& mods = *shared_module_table(m);
    int64_t norms = 0;
    int qk_norms = 0;
    for (size_t i = 0; i < mods.size(); ++i) {
      if (c[i].role != ModuleRole::norm) continue;
      norms += c[i].mem_bound_bytes;
      qk_norms += mods[i].name.find("_norm") != std::string::npos && c[i].mem_bound_bytes == 0 ? 1 : 0;
    }
    CHECK(qk_norms == 4);
    CHECK(norms == 5 * 2 * 2 * 4096 * 4096LL);  // 2 per block and the final norm, 2·e·T·h each
  }
}
