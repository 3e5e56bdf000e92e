// The dense families beyond GPT-2 and LLaMA (Gemma, Gemma2, Gemma3, Phi3, Qwen3, GPT-NeoX, Falcon, GPT-J, OPT,
// BLOOM): real HF configs import with HF's exact parameter counts, HF's tensor names in forward order, HF's
// class defaults, and clear refusals of layouts zerosim does not reproduce.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/model.h"

namespace fs = std::filesystem;
using namespace zs::core;

namespace {

const std::string kConfigs = std::string(ZS_TEST_DATA) + "/hf_configs/";
const std::string kModels = std::string(ZS_TEST_DATA) + "/../../models/";

const fs::path& temp_dir() {
  struct Dir {
    fs::path path = fs::temp_directory_path() / ("zs_test_families_" + std::to_string(::getpid()));
    ~Dir() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  };
  static const Dir dir;
  return dir.path;
}

std::string write_temp(const std::string& name, const std::string& text) {
  fs::create_directories(temp_dir());
  fs::path p = temp_dir() / name;
  std::ofstream(p) << text;
  return p.string();
}

ModelSpec must(Result<ModelSpec> r) {
  INFO((r.ok() ? std::string() : r.error().message));
  REQUIRE(r.ok());
  return std::move(r).value();
}

ModelSpec config(const std::string& name) { return must(import_hf_config(kConfigs + name + ".json")); }

std::string error_of(const Result<ModelSpec>& r) {
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == ErrorKind::bad_input);
  return r.error().message;
}

// Layer `layer`'s tensor names, in table (forward) order, without the block prefix.
std::vector<std::string> block_names(const ModelSpec& m, int64_t layer, const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& t : tensor_table(m))
    if (t.layer == layer) out.push_back(t.name.rfind(prefix, 0) == 0 ? t.name.substr(prefix.size()) : t.name);
  return out;
}

std::vector<std::string> outer_names(const ModelSpec& m) {
  std::vector<std::string> out;
  for (const auto& t : tensor_table(m))
    if (t.layer < 0) out.push_back(t.name + (t.tied ? " (tied)" : ""));
  return out;
}

const TensorInfo& tensor(const std::vector<TensorInfo>& t, const std::string& name) {
  auto it = std::find_if(t.begin(), t.end(), [&](const TensorInfo& x) { return x.name == name; });
  REQUIRE(it != t.end());
  return *it;
}

}  // namespace

// h = hidden, f = ffn, L = layers, V = vocab, q = heads·head_dim, kv = kv_heads·head_dim. Each row: the sum, then
// where the exact figure is published. "safetensors" = the HF hub API's safetensors.total for the checkpoint (a tied
// matrix is stored once, so it equals num_parameters()); "keras-hub" = the KerasHub preset's "params" for the same
// checkpoint; "num_parameters()" = a published printout of HF's count.
//
// Gemma (tied): block = q·h + 2·kv·h + h·q + 3·h·f + 2h; total = L·block + V·h + h.
//   gemma-2b:  18·110,104,576 + 524,288,000 + 2,048 = 2,506,172,416          keras-hub gemma_2b_en
//   gemma-7b:  28·285,223,936 + 786,432,000 + 3,072 = 8,537,680,896          keras-hub gemma_7b_en
// Gemma2 (tied, 4 norms): block = attention + 3·h·f + 4h.
//   gemma-2-2b:  26·(9,437,184 + 63,700,992 + 9,216) + 589,824,000 + 2,304 = 2,614,341,888   keras-hub, safetensors
//   gemma-2-9b:  42·(36,700,160 + 154,140,672 + 14,336) + 917,504,000 + 3,584 = 9,241,705,984 keras-hub, safetensors
//   gemma-2-27b: 46·(56,623,104 + 509,607,936 + 18,432) + 1,179,648,000 + 4,608 = 27,227,128,320 safetensors
// Gemma3 (tied, 4 norms, q_norm/k_norm of head_dim 256):
//   gemma-3-1b-pt: 26·(2,949,120 + 512 + 23,887,872 + 4,608) + 301,989,888 + 1,152 = 999,885,952
//                                                                   keras-hub gemma3_1b, safetensors (gemma-3-1b-it)
// Phi3 (untied): block = (q + 2kv)·h + h·q + 2f·h + f·h + 2h; total = L·block + 2·V·h + h.
//   Phi-3-mini-4k:   32·113,252,352 + 197,001,216 + 3,072 = 3,821,079,552    safetensors
//   Phi-3-medium-4k: 40·340,797,440 + 328,335,360 + 5,120 = 13,960,238,080   derived here (the sum above)
// Qwen3: block = q·h + 2·kv·h + h·q + 2·head_dim (q_norm, k_norm) + 3·h·f + 2h.
//   Qwen3-0.6B (tied): 28·15,730,944 + 155,582,464 + 1,024 = 596,049,920     num_parameters()
//   Qwen3-8B:          36·192,946,432 + 1,244,659,712 + 4,096 = 8,190,735,360  safetensors
// GPT-NeoX (untied, biases): block = 12h² + 13h; total = L·block + 2·V·h + 2h.
//   pythia-160m: 12·7,087,872 + 77,266,944 + 1,536 = 162,322,944             num_parameters() (all three)
//   pythia-1b:   16·50,358,272 + 206,045,184 + 4,096 = 1,011,781,632
//   pythia-6.9b: 32·201,388,032 + 413,138,944 + 8,192 = 6,857,302,016
// Falcon (tied, LayerNorm with bias): block = norms·2h + (q + 2kv)·h + h² + 2·h·f (+ biases when bias).
//   falcon-7b (kv 1, 1 norm):   32·207,070,080 + 295,469,056 + 9,088 = 6,921,720,704       derived here
//   falcon-40b (kv 8, 2 norms): 60·679,510,016 + 532,676,608 + 16,384 = 41,303,293,952    derived here
//   falcon-rw-1b (sequential, biases): 24·50,358,272 + 103,022,592 + 4,096 = 1,311,625,216  keras-hub
// GPT-J (untied, head bias): block = 2h + 4h² + (h·f + f) + (f·h + h); total = L·block + V·h + 2h + V·h + V.
//   gpt-j-6b: 28·201,355,264 + 206,438,400 + 8,192 + 206,488,800 = 6,050,882,784       num_parameters()
//   (the model card's 6,053,381,344 counts mesh-transformer-jax's checkpoint, not HF's module)
// OPT (tied): block = 12h² + 13h; total = L·block + V·h + (2048 + 2)·h + 2h.
//   opt-125m: 12·7,087,872 + 38,608,896 + 1,574,400 + 1,536 = 125,239,296   num_parameters()
//   opt-1.3b: 24·50,358,272 + 102,957,056 + 4,198,400 + 4,096 = 1,315,758,080 num_parameters()
// BLOOM (tied): block = 12h² + 13h; total = L·block + V·h + 2h (word_embeddings_layernorm) + 2h (ln_f).
//   bloom-560m: 24·12,596,224 + 256,901,120 + 4,096 = 559,214,592            num_parameters()
//   bloom-7b1:  30·201,388,032 + 1,027,604,480 + 16,384 = 7,069,016,064      num_parameters()
TEST_CASE("dense-family HF configs import with HF's parameter counts", "[model][hf][families]") {
  const std::vector<std::pair<std::string, int64_t>> expected = {
      {"gemma-2b", 2'506'172'416},
      {"gemma-7b", 8'537'680'896},
      {"gemma-2-2b", 2'614'341'888},
      {"gemma-2-9b", 9'241'705'984},
      {"gemma-2-27b", 27'227'128'320},
      {"gemma-3-1b-pt", 999'885'952},
      {"Phi-3-mini-4k-instruct", 3'821'079'552},
      {"Phi-3-medium-4k-instruct", 13'960'238'080},
      {"Qwen3-0.6B", 596'049'920},
      {"Qwen3-8B", 8'190'735'360},
      {"pythia-160m", 162'322'944},
      {"pythia-1b", 1'011'781'632},
      {"pythia-6.9b", 6'857'302'016},
      {"falcon-7b", 6'921'720'704},
      {"falcon-40b", 41'303'293'952},
      {"falcon-rw-1b", 1'311'625'216},
      {"gpt-j-6b", 6'050'882'784},
      {"opt-125m", 125'239'296},
      {"opt-1.3b", 1'315'758'080},
      {"bloom-560m", 559'214'592},
      {"bloom-7b1", 7'069'016'064},
  };
  for (const auto& [name, count] : expected) {
    INFO(name);
    ModelSpec m = config(name);
    CHECK(m.name == name);
    CHECK(parameter_count(m) == count);
    CHECK(trainable_parameter_count(m) == count);
    // Identical blocks, and the table's totals add up: L·block + what lies outside the blocks.
    int64_t outer = 0;
    for (const auto& t : tensor_table(m))
      if (t.layer < 0 && !t.tied) outer += t.params;
    CHECK(m.layers * block_params(m) + outer == count);
  }
}

// DeepSpeed's largest_layer_params: the largest module's direct parameters, a tied head counted as its module
// holds it. GPT-J's head carries a bias, so it outweighs the embedding.
TEST_CASE("dense families' largest_layer_params", "[model][hf][families]") {
  CHECK(largest_layer_params(config("gemma-2b")) == 256'000LL * 2048);                     // embed_tokens (= tied head)
  CHECK(largest_layer_params(config("pythia-160m")) == 50'304LL * 768);                    // embed_in, embed_out
  CHECK(largest_layer_params(config("gpt-j-6b")) == 50'400LL * 4096 + 50'400);             // lm_head weight + bias
  CHECK(largest_layer_params(config("falcon-40b")) == 65'024LL * 8192);                    // word_embeddings
  CHECK(largest_layer_params(config("Phi-3-medium-4k-instruct")) == 2LL * 17'920 * 5120);  // gate_up_proj
  CHECK(largest_layer_params(config("opt-125m")) == 50'272LL * 768);
}

// Each family's first block against HF's named_parameters(): the same names (HF registers a block's norms after
// its attention and MLP, so its listing order differs), in the order forward runs them.
TEST_CASE("dense families' tensor names follow HF, in forward order", "[model][hf][families]") {
  auto same_names = [](std::vector<std::string> ours, std::vector<std::string> hf) {
    std::sort(ours.begin(), ours.end());
    std::sort(hf.begin(), hf.end());
    CHECK(ours == hf);
  };
  SECTION("qwen3: q_norm after q_proj, k_norm after k_proj") {
    ModelSpec m = config("Qwen3-0.6B");
    std::vector<std::string> names = block_names(m, 0, "model.layers.0.");
    CHECK(names == std::vector<std::string>{"input_layernorm.weight", "self_attn.q_proj.weight",
                                            "self_attn.q_norm.weight", "self_attn.k_proj.weight",
                                            "self_attn.k_norm.weight", "self_attn.v_proj.weight",
                                            "self_attn.o_proj.weight", "post_attention_layernorm.weight",
                                            "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight"});
    same_names(names, {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
                       "self_attn.o_proj.weight", "self_attn.q_norm.weight", "self_attn.k_norm.weight",
                       "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight", "input_layernorm.weight",
                       "post_attention_layernorm.weight"});
    auto t = tensor_table(m);
    CHECK(tensor(t, "model.layers.0.self_attn.q_norm.weight").shape == std::vector<int64_t>{128});
    CHECK(tensor(t, "model.layers.0.self_attn.k_proj.weight").shape == std::vector<int64_t>{1024, 1024});
    CHECK(tensor(t, "model.layers.0.self_attn.q_norm.weight").role == ModuleRole::norm);
  }
  SECTION("gemma3: sandwich norms, q_norm/k_norm after the projections") {
    CHECK(block_names(config("gemma-3-1b-pt"), 3, "model.layers.3.") ==
          std::vector<std::string>{"input_layernorm.weight", "self_attn.q_proj.weight", "self_attn.k_proj.weight",
                                   "self_attn.v_proj.weight", "self_attn.q_norm.weight", "self_attn.k_norm.weight",
                                   "self_attn.o_proj.weight", "post_attention_layernorm.weight",
                                   "pre_feedforward_layernorm.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight",
                                   "mlp.down_proj.weight", "post_feedforward_layernorm.weight"});
    CHECK(outer_names(config("gemma-3-1b-pt")) ==
          std::vector<std::string>{"model.embed_tokens.weight", "model.norm.weight", "lm_head.weight (tied)"});
  }
  SECTION("gemma2: four norms, no q/k norms") {
    std::vector<std::string> names = block_names(config("gemma-2-9b"), 0, "model.layers.0.");
    CHECK(names.size() == 11);
    CHECK(names[6] == "pre_feedforward_layernorm.weight");
    CHECK(names.back() == "post_feedforward_layernorm.weight");
  }
  SECTION("phi3: fused qkv_proj and gate_up_proj") {
    ModelSpec m = config("Phi-3-medium-4k-instruct");
    CHECK(block_names(m, 0, "model.layers.0.") ==
          std::vector<std::string>{"input_layernorm.weight", "self_attn.qkv_proj.weight", "self_attn.o_proj.weight",
                                   "post_attention_layernorm.weight", "mlp.gate_up_proj.weight",
                                   "mlp.down_proj.weight"});
    auto t = tensor_table(m);
    const TensorInfo& qkv = tensor(t, "model.layers.0.self_attn.qkv_proj.weight");
    CHECK(qkv.shape == std::vector<int64_t>{(40 + 2 * 10) * 128, 5120});
    CHECK(qkv.role == ModuleRole::qkv);
    const TensorInfo& gate_up = tensor(t, "model.layers.0.mlp.gate_up_proj.weight");
    CHECK(gate_up.shape == std::vector<int64_t>{2 * 17'920, 5120});
    CHECK(gate_up.role == ModuleRole::mlp_in);
    CHECK(outer_names(m) ==
          std::vector<std::string>{"model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"});
  }
  SECTION("gpt_neox") {
    ModelSpec m = config("pythia-160m");
    CHECK(block_names(m, 0, "gpt_neox.layers.0.") ==
          std::vector<std::string>{"input_layernorm.weight", "input_layernorm.bias", "attention.query_key_value.weight",
                                   "attention.query_key_value.bias", "attention.dense.weight", "attention.dense.bias",
                                   "post_attention_layernorm.weight", "post_attention_layernorm.bias",
                                   "mlp.dense_h_to_4h.weight", "mlp.dense_h_to_4h.bias", "mlp.dense_4h_to_h.weight",
                                   "mlp.dense_4h_to_h.bias"});
    CHECK(outer_names(m) == std::vector<std::string>{"gpt_neox.embed_in.weight", "gpt_neox.final_layer_norm.weight",
                                                     "gpt_neox.final_layer_norm.bias", "embed_out.weight"});
  }
  SECTION("falcon: three layouts") {
    CHECK(block_names(config("falcon-7b"), 0, "transformer.h.0.") ==
          std::vector<std::string>{"input_layernorm.weight", "input_layernorm.bias",
                                   "self_attention.query_key_value.weight", "self_attention.dense.weight",
                                   "mlp.dense_h_to_4h.weight", "mlp.dense_4h_to_h.weight"});
    CHECK(block_names(config("falcon-40b"), 0, "transformer.h.0.") ==
          std::vector<std::string>{"ln_attn.weight", "ln_attn.bias", "ln_mlp.weight", "ln_mlp.bias",
                                   "self_attention.query_key_value.weight", "self_attention.dense.weight",
                                   "mlp.dense_h_to_4h.weight", "mlp.dense_4h_to_h.weight"});
    CHECK(block_names(config("falcon-rw-1b"), 0, "transformer.h.0.") ==
          std::vector<std::string>{
              "input_layernorm.weight", "input_layernorm.bias", "self_attention.query_key_value.weight",
              "self_attention.query_key_value.bias", "self_attention.dense.weight", "self_attention.dense.bias",
              "post_attention_layernorm.weight", "post_attention_layernorm.bias", "mlp.dense_h_to_4h.weight",
              "mlp.dense_h_to_4h.bias", "mlp.dense_4h_to_h.weight", "mlp.dense_4h_to_h.bias"});
    auto t7 = tensor_table(config("falcon-7b"));  // multi-query: q (71 heads) + one k + one v head of 64
    CHECK(tensor(t7, "transformer.h.0.self_attention.query_key_value.weight").shape ==
          std::vector<int64_t>{4544 + 2 * 64, 4544});
    auto t40 = tensor_table(config("falcon-40b"));  // 128 query heads, 8 K/V heads, head_dim 64
    CHECK(tensor(t40, "transformer.h.0.self_attention.query_key_value.weight").shape ==
          std::vector<int64_t>{(128 + 2 * 8) * 64, 8192});
  }
  SECTION("gptj") {
    ModelSpec m = config("gpt-j-6b");
    CHECK(block_names(m, 0, "transformer.h.0.") ==
          std::vector<std::string>{"ln_1.weight", "ln_1.bias", "attn.q_proj.weight", "attn.k_proj.weight",
                                   "attn.v_proj.weight", "attn.out_proj.weight", "mlp.fc_in.weight", "mlp.fc_in.bias",
                                   "mlp.fc_out.weight", "mlp.fc_out.bias"});
    CHECK(outer_names(m) == std::vector<std::string>{"transformer.wte.weight", "transformer.ln_f.weight",
                                                     "transformer.ln_f.bias", "lm_head.weight", "lm_head.bias"});
  }
  SECTION("opt") {
    ModelSpec m = config("opt-125m");
    same_names(block_names(m, 0, "model.decoder.layers.0."),
               {"self_attn.k_proj.weight", "self_attn.k_proj.bias", "self_attn.v_proj.weight", "self_attn.v_proj.bias",
                "self_attn.q_proj.weight", "self_attn.q_proj.bias", "self_attn.out_proj.weight",
                "self_attn.out_proj.bias", "self_attn_layer_norm.weight", "self_attn_layer_norm.bias", "fc1.weight",
                "fc1.bias", "fc2.weight", "fc2.bias", "final_layer_norm.weight", "final_layer_norm.bias"});
    CHECK(block_names(m, 0, "model.decoder.layers.0.").front() == "self_attn_layer_norm.weight");
    CHECK(outer_names(m) == std::vector<std::string>{"model.decoder.embed_tokens.weight",
                                                     "model.decoder.embed_positions.weight",
                                                     "model.decoder.final_layer_norm.weight",
                                                     "model.decoder.final_layer_norm.bias", "lm_head.weight (tied)"});
    auto t = tensor_table(m);
    const TensorInfo& pos = tensor(t, "model.decoder.embed_positions.weight");  // 2048 positions + offset 2
    CHECK(pos.shape == std::vector<int64_t>{2050, 768});
    CHECK(pos.role == ModuleRole::positions);
  }
  SECTION("opt with word_embed_proj_dim: narrow embeddings, project_in and project_out") {
    // opt-125m's sizes with 512-wide embeddings (opt-350m's projection, on a pre-norm model):
    // 125,239,296 − 50,272·768 + 50,272·512 + 2·512·768 = 113,156,096 (derived here).
    std::string p = write_temp("opt-proj.json", R"({"model_type": "opt", "word_embed_proj_dim": 512})");
    ModelSpec m = must(import_hf_config(p));
    CHECK(m.embed_proj_dim == 512);
    CHECK(parameter_count(m) == 113'156'096);
    CHECK(outer_names(m) ==
          std::vector<std::string>{"model.decoder.embed_tokens.weight", "model.decoder.embed_positions.weight",
                                   "model.decoder.project_in.weight", "model.decoder.final_layer_norm.weight",
                                   "model.decoder.final_layer_norm.bias", "model.decoder.project_out.weight",
                                   "lm_head.weight (tied)"});
    auto t = tensor_table(m);
    CHECK(tensor(t, "model.decoder.embed_tokens.weight").shape == std::vector<int64_t>{50'272, 512});
    CHECK(tensor(t, "model.decoder.project_in.weight").shape == std::vector<int64_t>{768, 512});
    CHECK(tensor(t, "model.decoder.project_out.weight").shape == std::vector<int64_t>{512, 768});
    CHECK(tensor(t, "lm_head.weight").shape == std::vector<int64_t>{50'272, 512});
  }
  SECTION("bloom") {
    ModelSpec m = config("bloom-560m");
    CHECK(block_names(m, 0, "transformer.h.0.") ==
          std::vector<std::string>{
              "input_layernorm.weight", "input_layernorm.bias", "self_attention.query_key_value.weight",
              "self_attention.query_key_value.bias", "self_attention.dense.weight", "self_attention.dense.bias",
              "post_attention_layernorm.weight", "post_attention_layernorm.bias", "mlp.dense_h_to_4h.weight",
              "mlp.dense_h_to_4h.bias", "mlp.dense_4h_to_h.weight", "mlp.dense_4h_to_h.bias"});
    CHECK(outer_names(m) ==
          std::vector<std::string>{"transformer.word_embeddings.weight", "transformer.word_embeddings_layernorm.weight",
                                   "transformer.word_embeddings_layernorm.bias", "transformer.ln_f.weight",
                                   "transformer.ln_f.bias", "lm_head.weight (tied)"});
  }
}

TEST_CASE("dense families: tied heads are counted once", "[model][hf][families]") {
  SECTION("Qwen3-0.6B ties its head, Qwen3-8B does not (Qwen3Config defaults to untied)") {
    auto small = tensor_table(config("Qwen3-0.6B")), large = tensor_table(config("Qwen3-8B"));
    CHECK(tensor(small, "lm_head.weight").tied);
    CHECK_FALSE(tensor(large, "lm_head.weight").tied);
  }
  SECTION("Gemma ties by default (GemmaConfig: tie_word_embeddings=True, not written in the config)") {
    ModelSpec m = config("gemma-2b");
    CHECK(m.tied_embeddings);
  }
  SECTION("GPT-J tied: the weight is shared, the head's bias stays") {
    std::ifstream in(kConfigs + "gpt-j-6b.json");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string from = "\"tie_word_embeddings\": false";
    text.replace(text.find(from), from.size(), "\"tie_word_embeddings\": true");
    ModelSpec tied = must(import_hf_config(write_temp("gptj-tied.json", text)));
    CHECK(parameter_count(config("gpt-j-6b")) - parameter_count(tied) == 50'400LL * 4096);
    auto t = tensor_table(tied);
    CHECK(tensor(t, "lm_head.weight").tied);
    CHECK_FALSE(tensor(t, "lm_head.bias").tied);
  }
}

// A config that leaves a key out gets its HF class's default: each class's defaults describe a real checkpoint.
TEST_CASE("dense families read HF's class defaults", "[model][hf][families]") {
  auto bare = [](const std::string& type) {
    return must(import_hf_config(write_temp("bare-" + type + ".json", "{\"model_type\": \"" + type + "\"}")));
  };
  CHECK(parameter_count(bare("gemma")) == 8'537'680'896);   // GemmaConfig() is gemma-7b
  CHECK(parameter_count(bare("phi3")) == 3'821'079'552);    // Phi3Config() is Phi-3-mini
  CHECK(parameter_count(bare("falcon")) == 6'921'720'704);  // FalconConfig() is falcon-7b
  CHECK(parameter_count(bare("gptj")) == 6'050'882'784);    // GPTJConfig() is gpt-j-6b
  CHECK(parameter_count(bare("opt")) == 125'239'296);       // OPTConfig() is opt-125m
  ModelSpec falcon = bare("falcon");
  CHECK(falcon.max_seq_len == 2048);  // falcon-40b's config.json has no max_position_embeddings
  CHECK(falcon.kv_heads == 1);
  CHECK(bare("gemma2").head_dim == 256);
  CHECK(bare("qwen3").head_dim == 128);
}

TEST_CASE("dense families set the family fields", "[model][hf][families]") {
  ModelSpec g2 = config("gemma-2-9b");
  CHECK(g2.arch == Arch::gemma2);
  CHECK(g2.activation == Activation::swiglu);  // GeGLU: gated
  CHECK(g2.norm == Norm::rmsnorm);
  CHECK(g2.block_norms == 4);
  CHECK_FALSE(g2.qk_norm);
  CHECK(g2.head_dim == 256);
  CHECK_FALSE(g2.dropout);
  CHECK(config("gemma-3-1b-pt").qk_norm);
  CHECK(config("gemma-3-1b-pt").arch == Arch::gemma3);
  CHECK(config("Qwen3-8B").qk_norm);

  ModelSpec neox = config("pythia-1b");
  CHECK(neox.parallel_residual);
  CHECK(neox.qkv_bias);
  CHECK(neox.position == Position::rope);

  ModelSpec f7 = config("falcon-7b"), f40 = config("falcon-40b"), frw = config("falcon-rw-1b");
  CHECK((f7.kv_heads == 1 && f7.block_norms == 1 && f7.parallel_residual && !f7.qkv_bias));
  CHECK((f40.kv_heads == 8 && f40.block_norms == 2 && f40.parallel_residual));
  CHECK((frw.kv_heads == 32 && frw.block_norms == 2 && !frw.parallel_residual && frw.qkv_bias));
  CHECK(frw.position == Position::alibi);

  ModelSpec j = config("gpt-j-6b");
  CHECK((j.head_bias && j.parallel_residual && j.block_norms == 1 && j.mlp_bias && !j.qkv_bias));

  ModelSpec o = config("opt-125m");
  CHECK(o.dropout);  // OPTConfig dropout 0.1
  CHECK(o.position == Position::learned);
  CHECK(o.position_offset == 2);
  CHECK(o.embed_proj_dim == 0);  // word_embed_proj_dim == hidden_size

  ModelSpec b = config("bloom-7b1");
  CHECK(b.embedding_norm);
  CHECK(b.position == Position::alibi);
  CHECK(b.ffn_hidden == 4 * 4096);
  CHECK(b.max_seq_len == 2048);
}

TEST_CASE("dense families refuse layouts they do not reproduce, naming the key", "[model][hf][families][errors]") {
  SECTION("opt-350m: post-norm blocks drop the final layer norm") {
    const std::string p = kConfigs + "opt-350m.json";
    CHECK_THAT(error_of(import_hf_config(p)), Catch::StartsWith(p + ": do_layer_norm_before: false"));
  }
  SECTION("OPT LayerNorms without parameters") {
    std::string p = write_temp("opt-affine.json", R"({"model_type": "opt", "layer_norm_elementwise_affine": false})");
    CHECK_THAT(error_of(import_hf_config(p)), Catch::StartsWith(p + ": layer_norm_elementwise_affine: false"));
  }
  SECTION("Falcon's new decoder needs parallel attention") {
    std::string p = write_temp("falcon-seq.json", R"({"model_type": "falcon", "new_decoder_architecture": true,
      "parallel_attn": false, "num_kv_heads": 1})");
    CHECK_THAT(error_of(import_hf_config(p)), Catch::StartsWith(p + ": parallel_attn: false"));
  }
  SECTION("Falcon's two parallel norms belong to the new decoder") {
    std::string p = write_temp("falcon-ln.json", R"({"model_type": "falcon", "num_ln_in_parallel_attn": 2})");
    CHECK_THAT(error_of(import_hf_config(p)), Catch::StartsWith(p + ": num_ln_in_parallel_attn: 2"));
  }
  SECTION("messages use the config's own key names") {
    std::string p = write_temp("bloom-heads.json", R"({"model_type": "bloom", "hidden_size": 100, "n_head": 8})");
    CHECK(error_of(import_hf_config(p)) == p + ": n_head: 8 does not divide hidden_size 100");
    p = write_temp("falcon-kv.json", R"({"model_type": "falcon", "new_decoder_architecture": true,
      "num_attention_heads": 71, "num_kv_heads": 8})");
    CHECK(error_of(import_hf_config(p)) == p + ": num_kv_heads: 8 does not divide num_attention_heads 71");
    p = write_temp("gptj-rotary.json", R"({"model_type": "gptj", "rotary_dim": 512})");
    CHECK(error_of(import_hf_config(p)) == p + ": rotary_dim: 512 exceeds the head dimension 256");
    p = write_temp("qwen3-bias.json", R"({"model_type": "qwen3", "attention_bias": "yes"})");
    CHECK_THAT(error_of(import_hf_config(p)), Catch::StartsWith(p + ": attention_bias: \"yes\" is not a boolean"));
  }
}

// The HF configs shipped in models/ read as HF configs, with the checkpoints' exact counts.
TEST_CASE("models/ ships HF configs of the dense families", "[model][hf][families]") {
  CHECK(parameter_count(must(load_model_any(kModels + "gemma-2-9b.json"))) == 9'241'705'984);
  CHECK(parameter_count(must(load_model_any(kModels + "qwen3-8b.json"))) == 8'190'735'360);
  CHECK(parameter_count(must(load_model_any(kModels + "phi-3-mini.json"))) == 3'821'079'552);
}
