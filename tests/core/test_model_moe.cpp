// Mixture-of-experts families read from real HF config.json files: exact parameter counts, active parameters, the
// sparse block as one DeepSpeed leaf module, and the configs zerosim refuses.
//
// Where each expected total comes from (all agree with the tensor-by-tensor arithmetic of HF's modeling files):
//   Mixtral-8x7B-v0.1    46,702,792,704  HF's num_parameters() (the brief's figure; model card "46.7B")
//   Mixtral-8x22B-v0.1  140,620,634,112  published total_params of mistral-community/Mixtral-8x22B-v0.1 ("141B")
//   Qwen1.5-MoE-A2.7B    14,315,784,192  KerasHub's qwen1.5_moe_2.7b_en preset "params", chatllm.cpp's loaded count
//   Qwen3-30B-A3B        30,532,122,624  GGUF general.parameter_count of the converted checkpoint ("30.5B")
//   DeepSeek-V2-Lite     15,706,484,224  chatllm.cpp's loaded count ("15.7B")
//   DeepSeek-V3         671,026,404,352  derived (below): the checkpoint is fp8 with scale tensors
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/model.h"

namespace fs = std::filesystem;
using namespace zs::core;

namespace {

const std::string kConfigs = std::string(ZS_TEST_DATA) + "/hf_configs/";

ModelSpec import(const std::string& name) {
  auto r = import_hf_config(kConfigs + name + ".json");
  INFO((r ? "" : r.error().message));
  REQUIRE(r);
  return *r;
}

std::string write_temp(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / ("zs_test_model_moe_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path p = dir / name;
  std::ofstream(p) << text;
  return p.string();
}

const TensorInfo& tensor(const std::vector<TensorInfo>& t, const std::string& name) {
  auto it = std::find_if(t.begin(), t.end(), [&](const TensorInfo& x) { return x.name == name; });
  INFO(name);
  REQUIRE(it != t.end());
  return *it;
}

bool has_tensor(const std::vector<TensorInfo>& t, const std::string& name) {
  return std::any_of(t.begin(), t.end(), [&](const TensorInfo& x) { return x.name == name; });
}

const ModuleInfo& module(const std::vector<ModuleInfo>& mods, const std::string& name) {
  auto it = std::find_if(mods.begin(), mods.end(), [&](const ModuleInfo& x) { return x.name == name; });
  INFO(name);
  REQUIRE(it != mods.end());
  return *it;
}

// Within `percent` of a published, rounded figure.
bool near_published(int64_t exact, double published, double percent) {
  return std::abs(static_cast<double>(exact) - published) <= published * percent / 100.0;
}

std::string refusal(const std::string& name, const std::string& json) {
  auto r = import_hf_config(write_temp(name, json));
  REQUIRE_FALSE(r);
  return r.error().message;
}

}  // namespace

TEST_CASE("Mixtral-8x7B: HF's parameter count, ~12.9B active, one leaf module per sparse block", "[moe]") {
  const ModelSpec m = import("Mixtral-8x7B-v0.1");
  CHECK(m.arch == Arch::mixtral);
  CHECK(parameter_count(m) == 46'702'792'704);
  // Per layer: attention 41,943,040 + norms 8,192 + gate 32,768 + 2 of 8 experts (3 × 14336 × 4096 each);
  // plus the embedding, final norm and head (262,148,096).
  CHECK(active_parameter_count(m) == 12'879'925'248);
  CHECK(near_published(active_parameter_count(m), 12.9e9, 2.0));
  // The block (8 experts × 3 × 14336 × 4096 + the 8 × 4096 gate) is DeepSpeed's largest module.
  CHECK(largest_layer_params(m) == 1'409'318'912);

  const auto mods = module_table(m);
  const ModuleInfo& block = module(mods, "model.layers.0.block_sparse_moe");
  CHECK(block.tensors.size() == 1 + 8 * 3);  // gate + every expert's w1, w2, w3
  CHECK(block.role == ModuleRole::moe);
  CHECK(std::count_if(mods.begin(), mods.end(), [](const ModuleInfo& x) { return x.role == ModuleRole::moe; }) == 32);

  const auto t = tensor_table(m);
  // MixtralBlockSparseTop2MLP: w1 (gate) and w3 (up) are [ffn, hidden], w2 (down) [hidden, ffn].
  const TensorInfo& w1 = tensor(t, "model.layers.0.block_sparse_moe.experts.3.w1.weight");
  CHECK(w1.module == "model.layers.0.block_sparse_moe");
  CHECK(w1.shape == std::vector<int64_t>{14336, 4096});
  CHECK(w1.is_matmul);
  CHECK(w1.token_fraction == Approx(2.0 / 8.0));
  CHECK(tensor(t, "model.layers.0.block_sparse_moe.experts.3.w2.weight").shape == std::vector<int64_t>{4096, 14336});
  const TensorInfo& gate = tensor(t, "model.layers.0.block_sparse_moe.gate.weight");
  CHECK(gate.shape == std::vector<int64_t>{8, 4096});
  CHECK(gate.token_fraction == 1.0);
  CHECK(gate.role == ModuleRole::moe);
  CHECK_FALSE(has_tensor(t, "model.layers.0.self_attn.q_proj.bias"));
}

TEST_CASE("Mixtral-8x22B: 140,620,634,112 parameters", "[moe]") {
  const ModelSpec m = import("Mixtral-8x22B-v0.1");
  CHECK(parameter_count(m) == 140'620'634'112);
  CHECK(active_parameter_count(m) == 39'152'031'744);  // published "39B active"
  CHECK(near_published(active_parameter_count(m), 39e9, 2.0));
}

TEST_CASE("Qwen1.5-MoE-A2.7B: shared expert and its gate, q/k/v biases", "[moe]") {
  const ModelSpec m = import("Qwen1.5-MoE-A2.7B");
  CHECK(m.arch == Arch::qwen2_moe);
  CHECK(parameter_count(m) == 14'315'784'192);
  // 4 of 60 experts, the 5632-wide shared expert and its gate per layer: the "A2.7B" of its name.
  CHECK(active_parameter_count(m) == 2'689'173'504);
  CHECK(near_published(active_parameter_count(m), 2.7e9, 2.0));
  // Block: 60 × 3 × 1408 × 2048 + gate 60 × 2048 + shared 3 × 5632 × 2048 + shared gate 2048.
  CHECK(largest_layer_params(m) == 553'773'056);

  const auto t = tensor_table(m);
  const TensorInfo& shared_gate = tensor(t, "model.layers.5.mlp.shared_expert_gate.weight");
  CHECK(shared_gate.shape == std::vector<int64_t>{1, 2048});
  CHECK(shared_gate.is_matmul);
  CHECK(shared_gate.token_fraction == 1.0);
  CHECK(shared_gate.module == "model.layers.5.mlp");
  CHECK(tensor(t, "model.layers.5.mlp.shared_expert.up_proj.weight").token_fraction == 1.0);
  CHECK(tensor(t, "model.layers.5.mlp.experts.59.down_proj.weight").shape == std::vector<int64_t>{2048, 1408});
  CHECK(tensor(t, "model.layers.5.mlp.experts.59.down_proj.weight").token_fraction == Approx(4.0 / 60.0));
  // Qwen2MoeAttention: bias on q, k, v (qkv_bias), none on o_proj.
  CHECK(has_tensor(t, "model.layers.0.self_attn.k_proj.bias"));
  CHECK_FALSE(has_tensor(t, "model.layers.0.self_attn.o_proj.bias"));
}

TEST_CASE("Qwen3-30B-A3B: 30.5B total, ~3.3B active, q/k norms", "[moe]") {
  const ModelSpec m = import("Qwen3-30B-A3B");
  CHECK(m.arch == Arch::qwen3_moe);
  CHECK(parameter_count(m) == 30'532'122'624);
  CHECK(active_parameter_count(m) == 3'353'032'704);
  CHECK(near_published(active_parameter_count(m), 3.3e9, 2.0));
  CHECK(largest_layer_params(m) == 604'241'920);  // 128 × 3 × 768 × 2048 + 128 × 2048

  const auto t = tensor_table(m);
  CHECK(tensor(t, "model.layers.47.self_attn.q_norm.weight").shape == std::vector<int64_t>{128});
  CHECK(tensor(t, "model.layers.47.self_attn.q_proj.weight").shape == std::vector<int64_t>{4096, 2048});
  CHECK(tensor(t, "model.layers.47.mlp.experts.127.gate_proj.weight").token_fraction == Approx(8.0 / 128.0));
  CHECK_FALSE(has_tensor(t, "model.layers.0.mlp.shared_expert_gate.weight"));
}

TEST_CASE("DeepSeek-V2-Lite: MLA without q LoRA, one dense layer, two shared experts", "[moe]") {
  const ModelSpec m = import("DeepSeek-V2-Lite");
  CHECK(m.arch == Arch::deepseek_v2);
  CHECK(parameter_count(m) == 15'706'484'224);
  // DeepSeek's "2.4B activated" leaves out the input embedding (209,715,200): 2.45B. Asserted exactly only.
  CHECK(active_parameter_count(m) == 2'661'150'208);
  CHECK(largest_layer_params(m) == 571'080'704);  // 64 × 3 × 1408 × 2048 + 64 × 2048 + 3 × 2816 × 2048

  const auto t = tensor_table(m);
  // DeepseekV2Attention with q_lora_rank null: q_proj [heads × (128 + 64), hidden].
  CHECK(tensor(t, "model.layers.0.self_attn.q_proj.weight").shape == std::vector<int64_t>{16 * 192, 2048});
  CHECK(tensor(t, "model.layers.0.self_attn.kv_a_proj_with_mqa.weight").shape == std::vector<int64_t>{576, 2048});
  CHECK(tensor(t, "model.layers.0.self_attn.kv_a_layernorm.weight").role == ModuleRole::norm);
  CHECK(tensor(t, "model.layers.0.self_attn.kv_b_proj.weight").shape == std::vector<int64_t>{16 * 256, 512});
  CHECK(tensor(t, "model.layers.0.self_attn.o_proj.weight").role == ModuleRole::attn_out);
  // first_k_dense_replace 1: layer 0 has a dense MLP of intermediate_size, layer 1 the sparse block.
  const TensorInfo& dense_gate = tensor(t, "model.layers.0.mlp.gate_proj.weight");
  CHECK(dense_gate.shape == std::vector<int64_t>{10944, 2048});
  CHECK(dense_gate.role == ModuleRole::mlp_gate);
  CHECK(dense_gate.module == "model.layers.0.mlp.gate_proj");
  CHECK_FALSE(has_tensor(t, "model.layers.0.mlp.gate.weight"));
  CHECK(tensor(t, "model.layers.1.mlp.shared_experts.down_proj.weight").shape == std::vector<int64_t>{2048, 2816});
  CHECK(tensor(t, "model.layers.1.mlp.experts.63.up_proj.weight").token_fraction == Approx(6.0 / 64.0));
}

// DeepSeek-V3's checkpoint is fp8 with weight_scale_inv tensors, so its safetensors size does not give the count:
// derived from DeepseekV3ForCausalLM's modules instead.
//   attention per layer: q_a_proj 1536·7168 + q_a_layernorm 1536 + q_b_proj (128·192)·1536
//     + kv_a_proj_with_mqa (512+64)·7168 + kv_a_layernorm 512 + kv_b_proj (128·256)·512 + o_proj 7168·(128·128)
//     = 187,107,328; two norms 14,336
//   dense MLP (layers 0-2): 3 · 18432 · 7168 = 396,361,728
//   MoE block (layers 3-60): 256 · 3 · 2048 · 7168 + gate 256 · 7168 + shared 3 · 2048 · 7168 = 11,320,164,352
//   3 · 583,483,392 + 58 · 11,507,286,016 + embedding and head 2 · 129280 · 7168 + final norm 7168
//   = 671,026,404,352. The checkpoint's main model holds 14,848 more elements: the 58 routers'
//   e_score_correction_bias [256], a buffer in HF (not a parameter). The MTP layer 61 is not loaded by HF.
TEST_CASE("DeepSeek-V3: 671B without the MTP layer, ~37B active, q LoRA", "[moe]") {
  const ModelSpec m = import("DeepSeek-V3");
  CHECK(m.arch == Arch::deepseek_v3);
  CHECK(m.moe.router_bias);
  CHECK(parameter_count(m) == 671'026'404'352);
  // Routed: 8 of 256 experts = 352,321,536 per MoE layer.
  CHECK(active_parameter_count(m) == 37'552'282'624);
  CHECK(near_published(active_parameter_count(m), 37e9, 2.0));
  CHECK(largest_layer_params(m) == 11'320'164'352);

  const auto t = tensor_table(m);
  CHECK(tensor(t, "model.layers.0.self_attn.q_a_proj.weight").shape == std::vector<int64_t>{1536, 7168});
  CHECK(tensor(t, "model.layers.0.self_attn.q_a_layernorm.weight").shape == std::vector<int64_t>{1536});
  CHECK(tensor(t, "model.layers.0.self_attn.q_b_proj.weight").shape == std::vector<int64_t>{128 * 192, 1536});
  CHECK(has_tensor(t, "model.layers.2.mlp.down_proj.weight"));
  CHECK(tensor(t, "model.layers.3.mlp.gate.weight").shape == std::vector<int64_t>{256, 7168});
  CHECK_FALSE(has_tensor(t, "model.layers.3.mlp.gate.e_score_correction_bias"));
  CHECK_FALSE(has_tensor(t, "model.layers.61.self_attn.q_a_proj.weight"));
  const auto mods = module_table(m);
  CHECK(module(mods, "model.layers.60.mlp").tensors.size() == 256 * 3 + 1 + 3);
}

TEST_CASE("Qwen MoE: decoder_sparse_step and mlp_only_layers keep dense MLPs where HF does", "[moe]") {
  // Layer i is sparse when i is not in mlp_only_layers and (i + 1) % decoder_sparse_step == 0 (Qwen3MoeDecoderLayer).
  const ModelSpec m = *import_hf_config(write_temp("qwen3_moe_sparse_step.json", R"({
    "model_type": "qwen3_moe", "num_hidden_layers": 4, "hidden_size": 64, "num_attention_heads": 4,
    "num_key_value_heads": 2, "intermediate_size": 96, "moe_intermediate_size": 16, "num_experts": 4,
    "num_experts_per_tok": 2, "vocab_size": 100, "decoder_sparse_step": 2, "mlp_only_layers": [3]})"));
  const auto t = tensor_table(m);
  CHECK(tensor(t, "model.layers.0.mlp.up_proj.weight").shape == std::vector<int64_t>{96, 64});
  CHECK(has_tensor(t, "model.layers.1.mlp.experts.3.up_proj.weight"));
  CHECK(has_tensor(t, "model.layers.2.mlp.up_proj.weight"));
  CHECK(has_tensor(t, "model.layers.3.mlp.up_proj.weight"));  // (3 + 1) % 2 == 0, but listed in mlp_only_layers
  CHECK_FALSE(has_tensor(t, "model.layers.3.mlp.gate.weight"));
}

TEST_CASE("MoE import: a key left out takes the config class's default", "[moe]") {
  // Qwen3MoeConfig(): 24 layers, 128 experts of 768, top 8, hidden 2048, 32 heads, 4 KV heads.
  const ModelSpec m = *import_hf_config(write_temp("qwen3_moe_defaults.json", R"({"model_type": "qwen3_moe"})"));
  CHECK(m.layers == 24);
  CHECK(m.moe.experts == 128);
  CHECK(m.moe.top_k == 8);
  CHECK(m.moe.expert_ffn == 768);
  CHECK(m.kv_heads == 4);
  CHECK_FALSE(m.tied_embeddings);
  // DeepseekV3Config(): q_lora_rank 1536, 3 dense layers, 1 shared expert.
  const ModelSpec v3 = *import_hf_config(write_temp("deepseek_v3_defaults.json", R"({"model_type": "deepseek_v3"})"));
  CHECK(v3.mla.q_lora_rank == 1536);
  CHECK(v3.moe.first_dense_layers == 3);
  CHECK(v3.moe.shared_experts == 1);
  CHECK(parameter_count(v3) == 671'026'404'352);  // the class's defaults are DeepSeek-V3's shape
}

TEST_CASE("MoE import refuses layouts it does not reproduce, naming file and key", "[moe]") {
  const std::string freq = refusal("deepseek_freq.json", R"({"model_type": "deepseek_v2", "num_experts_per_tok": 6,
                                                              "moe_layer_freq": 2})");
  CHECK_THAT(freq, Catch::Contains("deepseek_freq.json") && Catch::Contains("moe_layer_freq"));
  const std::string topk = refusal("deepseek_topk.json", R"({"model_type": "deepseek_v2", "num_experts_per_tok": 6,
                                                              "topk_method": "noaux_tc"})");
  CHECK_THAT(topk, Catch::Contains("topk_method") && Catch::Contains("greedy, group_limited_greedy"));
  const std::string top_k = refusal("deepseek_no_topk.json", R"({"model_type": "deepseek_v2"})");
  CHECK_THAT(top_k, Catch::Contains("num_experts_per_tok"));
  const std::string over = refusal("mixtral_topk.json", R"({"model_type": "mixtral", "num_experts_per_tok": 9})");
  CHECK_THAT(over, Catch::Contains("num_experts_per_tok") && Catch::Contains("exceeds the 8 routed experts"));
  const std::string dense = refusal("qwen_only.json", R"({"model_type": "qwen2_moe", "mlp_only_layers": [24]})");
  CHECK_THAT(dense, Catch::Contains("mlp_only_layers") && Catch::Contains("[0, 23]"));
}

TEST_CASE("Shipped MoE models load as HF configs", "[moe]") {
  const std::string root = std::string(ZS_TEST_DATA) + "/../../models/";
  auto mixtral = load_model_any(root + "mixtral-8x7b.json");
  REQUIRE(mixtral);
  CHECK(parameter_count(*mixtral) == 46'702'792'704);
  auto qwen = load_model_any(root + "qwen3-30b-a3b.json");
  REQUIRE(qwen);
  CHECK(parameter_count(*qwen) == 30'532'122'624);
}
