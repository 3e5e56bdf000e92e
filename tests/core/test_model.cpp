// Model loading, HF import, and the exact counts derived from the tensor table.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "core/model.h"
#include "core/paths.h"

namespace fs = std::filesystem;
using namespace zs::core;

namespace {

const std::string kHf = std::string(ZS_TEST_DATA) + "/hf/";

// A scratch folder per test process for the bad-input files, removed when the binary exits.
const fs::path& temp_dir() {
  struct Dir {
    fs::path path = fs::temp_directory_path() / ("zs_test_model_" + std::to_string(::getpid()));
    ~Dir() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  };
  static const Dir dir;
  return dir.path;
}

std::string write_temp(const std::string& rel, const std::string& text) {
  fs::path p = temp_dir() / rel;
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
  return p.string();
}

ModelSpec must(Result<ModelSpec> r) {
  INFO((r.ok() ? std::string() : r.error().message));
  REQUIRE(r.ok());
  return std::move(r).value();
}

std::string error_of(const Result<ModelSpec>& r) {
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == ErrorKind::bad_input);
  return r.error().message;
}

// A complete, valid zerosim model file with one line replaced or appended, for the bad-input cases.
std::string tiny_with(const std::string& extra_or_replaced) {
  std::string base = R"({
  "name": "t", "arch": "gpt", "layers": 2, "hidden": 64, "heads": 4, "kv_heads": 4,
  "ffn_hidden": 256, "vocab": 256, "max_seq_len": 64, "tied_embeddings": true,
  "activation": "gelu", "norm": "layernorm", "qkv_bias": true, "position": "learned")";
  return base + extra_or_replaced + "\n}\n";
}

}  // namespace

// Hand derivation (GPT-2 layout, h = hidden, L = layers, V = 50257, S = max_seq_len, biases everywhere):
//   block = ln_1 2h + c_attn (3h² + 3h) + c_proj (h² + h) + ln_2 2h + c_fc (4h² + 4h) + c_proj (4h² + h)
//         = 12h² + 13h
//   total = L·block + wte V·h + wpe S·h + ln_f 2h        (lm_head tied to wte: not counted again)
//   gpt2-1.5b: 48·30,740,800 + 80,411,200 + 1,638,400 + 3,200 = 1,557,611,200
//   gpt2-10b:  50·201,379,840 + 205,852,672 + 4,194,304 + 8,192 = 10,279,047,168
//   gpt3-1.3b: 24·50,358,272 + 102,926,336 + 4,194,304 + 4,096 = 1,315,723,264
//   gpt3-13b:  40·314,639,360 + 257,315,840 + 10,485,760 + 10,240 = 12,853,386,240
//   gpt-100b:  80·1,258,424,320 + 514,631,680 + 20,971,520 + 20,480 = 101,209,569,280
//   gpt3-175b: 96·1,812,099,072 + 617,558,016 + 25,165,824 + 24,576 = 174,604,259,328
//   tiny (V 256, S 64, h 64): 2·49,984 + 16,384 + 4,096 + 128 = 120,576
// LLaMA layout (no biases, RMSNorm, untied head): block = (2 + 2·kv/heads)·h² + 3·h·ffn + 2h;
//   total = L·block + 2·V·h + h.
//   llama2-7b:  32·202,383,360 + 262,144,000 + 4,096 = 6,738,415,616
//   llama2-13b: 40·317,204,480 + 327,680,000 + 5,120 = 13,015,864,320
//   llama2-70b: 80·855,654,400 + 524,288,000 + 8,192 = 68,976,648,192
TEST_CASE("shipped models have their exact parameter counts", "[model]") {
  const std::map<std::string, int64_t> expected = {
      {"tiny", 120'576},
      {"gpt2-124m", 124'439'808},
      {"gpt2-355m", 354'823'168},
      {"gpt2-774m", 774'030'080},
      {"gpt2-1.5b", 1'557'611'200},
      {"gpt2-10b", 10'279'047'168},
      {"gpt3-1.3b", 1'315'723'264},
      {"gpt3-13b", 12'853'386'240},
      {"gpt-100b", 101'209'569'280},
      {"gpt3-175b", 174'604'259'328},
      {"llama2-7b", 6'738'415'616},
      {"llama2-13b", 13'015'864'320},
      {"llama2-70b", 68'976'648'192},
      {"llama3-8b", 8'030'261'248},
      {"llama3-8b-bnb-4bit", 8'030'261'248},
      {"llama2-7b-bnb-4bit", 6'738'415'616},
      {"mixtral-8x7b", 46'702'792'704},
      {"qwen3-30b-a3b", 30'532'122'624},
      {"gemma-2-9b", 9'241'705'984},
      {"qwen3-8b", 8'190'735'360},
      {"phi-3-mini", 3'821'079'552},
  };
  for (const auto& [name, count] : expected) {
    INFO(name);
    ModelSpec m = must(load_model(name));
    CHECK(m.name == name);
    CHECK(parameter_count(m) == count);
  }
  // Every shipped file is in the table above, and each is named after its file.
  for (const auto& path : shipped_inputs(InputKind::model)) {
    INFO(path);
    ModelSpec m = must(load_model_any(path));
    CHECK(m.name == fs::path(path).stem().string());
    CHECK(expected.count(m.name) == 1);
  }
}

// The same formulas applied to the HF fixtures reproduce model.num_parameters():
//   gpt2-medium: 24·12,596,224 + 51,463,168 + 1,048,576 + 2,048 = 354,823,168
//   Mistral-7B:  32·(2·4096² + 2·4096·1024 + 3·4096·14336 + 8192) + 2·32000·4096 + 4096 = 7,241,732,096
//   Qwen2-0.5B (q/k/v biases, tied): 24·14,912,384 + 151,936·896 + 896 = 494,032,768
//   Qwen2-7B (q/k/v biases, untied): 28·233,057,792 + 2·152,064·3584 + 3584 = 7,615,616,512
TEST_CASE("HF configs import with HF's parameter counts", "[model][hf]") {
  const std::map<std::string, int64_t> expected = {
      {"gpt2", 124'439'808},           {"gpt2-medium", 354'823'168},       {"gpt2-large", 774'030'080},
      {"gpt2-xl", 1'557'611'200},      {"Llama-2-7b-hf", 6'738'415'616},   {"Llama-2-13b-hf", 13'015'864'320},
      {"Llama-2-70b-hf", 68'976'648'192}, {"Mistral-7B-v0.1", 7'241'732'096}, {"Qwen2-0.5B", 494'032'768},
      {"Qwen2-7B", 7'615'616'512},
  };
  for (const auto& [file, count] : expected) {
    INFO(file);
    ModelSpec m = must(import_hf_config(kHf + file + ".json"));
    CHECK(m.name == file);  // _name_or_path's last component, or the file stem
    CHECK(parameter_count(m) == count);
    CHECK(m.source == kHf + file + ".json");
  }
}

TEST_CASE("HF import maps each family's layout", "[model][hf]") {
  ModelSpec g = must(import_hf_config(kHf + "gpt2.json"));
  CHECK(g.arch == Arch::gpt);
  CHECK(g.ffn_hidden == 3072);  // n_inner: null → 4·n_embd
  CHECK(g.tied_embeddings);
  CHECK((g.qkv_bias && g.mlp_bias && g.attn_out_bias && g.norm_bias));
  CHECK(g.position == Position::learned);

  ModelSpec l = must(import_hf_config(kHf + "Llama-2-70b-hf.json"));
  CHECK(l.arch == Arch::llama);
  CHECK(l.kv_heads == 8);
  CHECK(l.head_dim == 128);
  CHECK(l.activation == Activation::swiglu);
  CHECK(l.norm == Norm::rmsnorm);
  CHECK_FALSE(l.norm_bias);
  CHECK_FALSE(l.tied_embeddings);
  CHECK(l.max_seq_len == 4096);

  ModelSpec q = must(import_hf_config(kHf + "Qwen2-0.5B.json"));
  CHECK(q.qkv_bias);
  CHECK_FALSE(q.attn_out_bias);
  CHECK(q.tied_embeddings);
  CHECK(q.kv_heads == 2);

  // HF and zerosim's own files describe the same tensors.
  auto same_tables = [](const ModelSpec& a, const ModelSpec& b) {
    auto ta = tensor_table(a), tb = tensor_table(b);
    REQUIRE(ta.size() == tb.size());
    for (size_t i = 0; i < ta.size(); ++i) {
      CHECK(ta[i].name == tb[i].name);
      CHECK(ta[i].shape == tb[i].shape);
      CHECK(ta[i].tied == tb[i].tied);
    }
  };
  same_tables(must(import_hf_config(kHf + "gpt2-xl.json")), must(load_model("gpt2-1.5b")));
  same_tables(must(import_hf_config(kHf + "Llama-2-7b-hf.json")), must(load_model("llama2-7b")));
}

TEST_CASE("largest_layer_params is DeepSpeed's biggest module", "[model]") {
  // The token embedding (V·h, and the tied head of the same size) dominates every GPT here.
  CHECK(largest_layer_params(must(load_model("gpt2-1.5b"))) == 80'411'200);
  CHECK(largest_layer_params(must(load_model("gpt2-10b"))) == 205'852'672);
  CHECK(largest_layer_params(must(load_model("gpt-100b"))) == 514'631'680);
  // LLaMA-2-70B: lm_head and embed_tokens are 32000·8192 = 262,144,000 > down_proj 8192·28672.
  CHECK(largest_layer_params(must(load_model("llama2-70b"))) == 262'144'000);
}

TEST_CASE("tensor and module tables add up to the parameter count", "[model]") {
  for (const auto& path : shipped_inputs(InputKind::model)) {
    INFO(path);
    ModelSpec m = must(load_model_any(path));
    auto tensors = tensor_table(m);
    int64_t untied = 0, all = 0;
    for (const auto& t : tensors) {
      int64_t prod = 1;
      for (int64_t d : t.shape) prod *= d;
      CHECK(prod == t.params);  // logical elements; numel is the storage (a 4-bit weight's is params / 4)
      CHECK(t.numel == (t.quant_bits == 4 ? (t.params + 3) / 4 : t.params));
      all += t.numel;
      if (!t.tied) untied += t.params;
    }
    CHECK(untied == parameter_count(m));
    int64_t by_module = 0;
    size_t tensor_refs = 0;
    for (const auto& mod : module_table(m)) {
      by_module += mod.direct_params;
      tensor_refs += mod.tensors.size();
      for (size_t i : mod.tensors) CHECK(tensors[i].module == mod.name);
    }
    CHECK(by_module == all);  // modules count tied tensors, as DeepSpeed does
    CHECK(tensor_refs == tensors.size());
    const int64_t final_norm = m.hidden * (m.norm_bias ? 2 : 1);
    CHECK(m.layers * block_params(m) + embedding_params(m) + final_norm == parameter_count(m));
  }
}

TEST_CASE("tiny's tables in forward order", "[model]") {
  ModelSpec m = must(load_model("tiny"));
  std::vector<std::string> names;
  for (const auto& mod : module_table(m)) names.push_back(mod.name);
  const std::vector<std::string> want = {
      "wte",        "wpe",          "h.0.ln_1", "h.0.attn.c_attn", "h.0.attn.c_proj", "h.0.ln_2",
      "h.0.mlp.c_fc", "h.0.mlp.c_proj", "h.1.ln_1", "h.1.attn.c_attn", "h.1.attn.c_proj", "h.1.ln_2",
      "h.1.mlp.c_fc", "h.1.mlp.c_proj", "ln_f",  "lm_head"};
  CHECK(names == want);
  auto t = tensor_table(m);
  CHECK(t.front().name == "wte.weight");
  CHECK(t.back().name == "lm_head.weight");
  CHECK(t.back().tied);
  CHECK(t.back().is_matmul);
  CHECK(t[3].name == "h.0.ln_1.bias");
  CHECK(t[4].shape == std::vector<int64_t>{64, 192});  // c_attn [h, 3h]
  CHECK(block_params(m) == 49'984);
  CHECK(embedding_params(m) == 256 * 64 + 64 * 64);  // wte + wpe; the tied head is not counted again
  CHECK(module_table(m).back().direct_params == 256 * 64);  // but its module still holds the weight
}

TEST_CASE("module roles from the names, GPT-2's and Llama's, and their names both ways", "[model]") {
  std::vector<std::string> got;
  for (const auto& mod : module_table(must(load_model("tiny")))) got.push_back(to_string(module_role(mod)));
  const std::vector<std::string> want = {"embedding", "positions", "norm", "qkv", "attn_out", "norm",
                                         "mlp_in",    "mlp_out",   "norm", "qkv", "attn_out", "norm",
                                         "mlp_in",    "mlp_out",   "norm", "head"};
  CHECK(got == want);
  auto role = [](const char* name) {
    ModuleInfo mod;
    mod.name = name;
    return module_role(mod);
  };
  CHECK(role("model.embed_tokens") == ModuleRole::embedding);
  CHECK(role("model.layers.3.input_layernorm") == ModuleRole::norm);
  CHECK(role("model.layers.3.self_attn.k_proj") == ModuleRole::qkv);
  CHECK(role("model.layers.3.self_attn.o_proj") == ModuleRole::attn_out);
  CHECK(role("model.layers.3.mlp.gate_proj") == ModuleRole::mlp_gate);
  CHECK(role("model.layers.3.mlp.up_proj") == ModuleRole::mlp_in);
  CHECK(role("model.layers.3.mlp.down_proj") == ModuleRole::mlp_out);
  CHECK(role("model.norm") == ModuleRole::norm);
  CHECK(role("h.0.attn.bias") == ModuleRole::none);
  for (int i = 0; i < kModuleRoles; ++i) {
    const auto r = static_cast<ModuleRole>(i);
    CHECK(module_role_from(to_string(r)) == r);
  }
  CHECK(module_role_from("attention") == ModuleRole::none);
}

TEST_CASE("FLOPs per token", "[model][flops]") {
  ModelSpec m = must(load_model("tiny"));
  // GEMM weights per block: c_attn 64·192 + c_proj 64·64 + c_fc 64·256 + c_proj 256·64 = 49,152;
  // two blocks plus the head 256·64 = 114,688 → 2× = 229,376.
  FlopsPerToken f = flops_per_token(m, 64);
  CHECK(f.forward_gemm == 229'376.0);
  CHECK(f.forward_attention == 4.0 * 2 * 64 * 4 * 16);  // 32,768
  CHECK(f.forward() == 262'144.0);
  CHECK(f.backward() == 524'288.0);
  CHECK(f.training(false) == 786'432.0);
  CHECK(f.training(true) == 1'048'576.0);

  // Large models: 2 × (non-embedding GEMM weights 12h²·L + head V·h), i.e. ≈ 2N.
  ModelSpec x = must(load_model("gpt2-1.5b"));
  FlopsPerToken fx = flops_per_token(x, 1024);
  const double h = 1600, L = 48, V = 50257;
  CHECK(fx.forward_gemm == 2.0 * (12 * h * h * L + V * h));
  CHECK(fx.forward_gemm == Approx(2.0 * parameter_count(x)).epsilon(0.01));
  CHECK(fx.forward_attention == 4.0 * L * 1024 * h);

  // GQA shrinks k/v GEMMs: llama2-70b per layer q,o 8192² each, k,v 8192·1024 each, MLP 3·8192·28672.
  ModelSpec l = must(load_model("llama2-70b"));
  const double per_layer = 2.0 * 8192 * 8192 + 2.0 * 8192 * 1024 + 3.0 * 8192 * 28672;
  CHECK(flops_per_token(l, 4096).forward_gemm == 2.0 * (80 * per_layer + 32000.0 * 8192));
}

TEST_CASE("layout variants", "[model]") {
  SECTION("explicit head_dim lifts hidden % heads") {
    std::string text = tiny_with(R"(, "head_dim": 32)");
    text.replace(text.find("\"hidden\": 64"), 12, "\"hidden\": 102");  // 102 % 4 != 0
    std::string p = write_temp("hd.json", text);
    ModelSpec m = must(load_model_file(p));
    CHECK(m.head_dim == 32);
    auto t = tensor_table(m);
    CHECK(t[4].shape == std::vector<int64_t>{102, 3 * 128});  // c_attn [h, 3·heads·head_dim]
    CHECK(t[6].shape == std::vector<int64_t>{128, 102});      // c_proj [heads·head_dim, h]
  }
  SECTION("gpt + swiglu fuses gate and up into c_fc") {
    std::string text = tiny_with("");
    text.replace(text.find("\"gelu\""), 6, "\"swiglu\"");
    ModelSpec m = must(load_model_file(write_temp("sw.json", text)));
    for (const auto& t : tensor_table(m))
      if (t.name == "h.0.mlp.c_fc.weight") CHECK(t.shape == std::vector<int64_t>{64, 512});
  }
  SECTION("llama + gelu has no gate; learned positions add embed_positions") {
    ModelSpec m = must(load_model("llama2-7b"));
    m.activation = Activation::gelu;
    m.position = Position::learned;
    bool gate = false, pos = false;
    for (const auto& mod : module_table(m)) {
      gate |= mod.name.find("gate_proj") != std::string::npos;
      pos |= mod.name == "model.embed_positions";
    }
    CHECK_FALSE(gate);
    CHECK(pos);
    CHECK(parameter_count(m) == 6'738'415'616 - 32LL * 4096 * 11008 + 4096LL * 4096);
  }
  SECTION("a hand-built spec with head_dim 0 derives it") {
    ModelSpec m = must(load_model("tiny"));
    m.head_dim = 0;
    CHECK(parameter_count(m) == 120'576);
    CHECK(validate_model(m, "x").ok());
  }
}

TEST_CASE("model_to_json round-trips an imported HF config", "[model][hf]") {
  for (const char* file : {"Qwen2-0.5B", "Llama-2-70b-hf", "gpt2"}) {
    INFO(file);
    ModelSpec hf = must(import_hf_config(kHf + file + ".json"));
    std::string p = write_temp(std::string("rt/") + file + ".json", model_to_json(hf));
    ModelSpec back = must(load_model_file(p));
    CHECK(model_to_json(back) == model_to_json(hf));
    CHECK(parameter_count(back) == parameter_count(hf));
  }
}

TEST_CASE("load_model_any and load_model find either format", "[model]") {
  CHECK(must(load_model_any(kHf + "Mistral-7B-v0.1.json")).kv_heads == 8);
  CHECK(must(load_model(kHf + "gpt2.json")).name == "gpt2");
  std::string shipped = *resolve_input("tiny", InputKind::model);
  CHECK(must(load_model_any(shipped)).name == "tiny");
  std::string msg = error_of(load_model("gpt2-13b-typo"));
  CHECK_THAT(msg, Catch::Contains("gpt2-13b-typo"));
  CHECK_THAT(msg, Catch::Contains("gpt2-1.5b"));  // the shipped names are listed
}

TEST_CASE("HF model name comes from _name_or_path or the checkpoint folder", "[model][hf]") {
  std::ifstream in(kHf + "gpt2.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(must(import_hf_config(write_temp("my-gpt/config.json", text))).name == "my-gpt");
  std::string named = text;
  named.replace(named.find('{'), 1, R"({"_name_or_path": "/data/ckpt/gpt2-finetuned/",)");
  CHECK(must(import_hf_config(write_temp("other/config.json", named))).name == "gpt2-finetuned");
}

TEST_CASE("bad zerosim model files name the file, key and what is allowed", "[model][errors]") {
  SECTION("malformed JSON gives file:line:col") {
    std::string p = write_temp("malformed.json", "{\n  \"name\": \"t\",\n  \"layers\": 2,,\n}\n");
    std::string msg = error_of(load_model_file(p));
    CHECK_THAT(msg, Catch::StartsWith(p + ":3:"));
    CHECK_THAT(msg, Catch::Contains("malformed JSON"));
  }
  SECTION("unknown key with the nearest one suggested") {
    std::string p = write_temp("unknown.json", tiny_with(R"(, "hiden": 64)"));
    std::string msg = error_of(load_model_file(p));
    CHECK_THAT(msg, Catch::Contains(p + ": hiden: unknown key"));
    CHECK_THAT(msg, Catch::Contains("did you mean \"hidden\""));
  }
  SECTION("wrong type") {
    std::string p = write_temp("type.json", tiny_with(R"(, "mlp_bias": "yes")"));
    CHECK_THAT(error_of(load_model_file(p)), Catch::Contains(p + ": mlp_bias: \"yes\" is not a boolean"));
    std::string text = tiny_with("");
    text.replace(text.find("\"layers\": 2"), 11, "\"layers\": \"2\"");
    std::string q = write_temp("type2.json", text);
    CHECK_THAT(error_of(load_model_file(q)), Catch::Contains(q + ": layers: \"2\" is not an integer"));
  }
  SECTION("out of range") {
    std::string text = tiny_with("");
    text.replace(text.find("\"layers\": 2"), 11, "\"layers\": 0");
    std::string p = write_temp("range.json", text);
    std::string msg = error_of(load_model_file(p));
    CHECK_THAT(msg, Catch::Contains(p + ": layers: 0 is out of range"));
    CHECK_THAT(msg, Catch::Contains("[1, 10000]"));
  }
  SECTION("bad choice lists the allowed values") {
    std::string text = tiny_with("");
    text.replace(text.find("\"layernorm\""), 11, "\"batchnorm\"");
    std::string p = write_temp("choice.json", text);
    CHECK_THAT(error_of(load_model_file(p)),
               Catch::Contains(p + ": norm: \"batchnorm\" is not one of layernorm, rmsnorm"));
  }
  SECTION("missing required key") {
    std::string text = tiny_with("");
    text.replace(text.find("\"vocab\": 256, "), 14, "");
    std::string p = write_temp("missing.json", text);
    CHECK_THAT(error_of(load_model_file(p)), Catch::Contains(p + ": vocab: missing required key"));
  }
  SECTION("heads not dividing hidden") {
    std::string text = tiny_with("");
    text.replace(text.find("\"heads\": 4"), 10, "\"heads\": 3");
    text.replace(text.find("\"kv_heads\": 4"), 13, "\"kv_heads\": 3");
    std::string p = write_temp("heads.json", text);
    std::string msg = error_of(load_model_file(p));
    CHECK_THAT(msg, Catch::Contains(p + ": heads: 3 does not divide hidden 64"));
    CHECK_THAT(msg, Catch::Contains("head_dim"));
  }
  SECTION("kv_heads not dividing heads") {
    std::string text = tiny_with("");
    text.replace(text.find("\"kv_heads\": 4"), 13, "\"kv_heads\": 3");
    std::string p = write_temp("kv.json", text);
    CHECK_THAT(error_of(load_model_file(p)), Catch::Contains(p + ": kv_heads: 3 does not divide heads 4"));
  }
  SECTION("rmsnorm with a bias") {
    std::string text = tiny_with(R"(, "norm_bias": true)");
    text.replace(text.find("\"layernorm\""), 11, "\"rmsnorm\"");
    std::string p = write_temp("rms.json", text);
    CHECK_THAT(error_of(load_model_file(p)), Catch::Contains(p + ": norm_bias: true is not allowed"));
  }
  SECTION("missing file") {
    CHECK_THAT(error_of(load_model_file("/nonexistent/m.json")), Catch::Contains("/nonexistent/m.json: cannot open"));
  }
}

TEST_CASE("bad HF configs name the file and HF's key", "[model][hf][errors]") {
  SECTION("unsupported model_type") {
    std::string p = kHf + "bert-base-uncased.json";
    const std::string msg = error_of(import_hf_config(p));
    CHECK_THAT(msg, Catch::StartsWith(p + ": model_type: \"bert\" is not supported; supported: gpt2, llama, mistral, "
                                          "qwen2, "));
    for (const auto& type : supported_hf_model_types()) CHECK_THAT(msg, Catch::Contains(type));
    CHECK(error_of(load_model_any(p)) == error_of(import_hf_config(p)));
  }
  SECTION("missing required key") {
    std::string p = kHf + "llama-missing-intermediate-size.json";
    CHECK_THAT(error_of(import_hf_config(p)), Catch::Contains(p + ": intermediate_size: missing required key"));
  }
  SECTION("wrong type for a key we read") {
    std::string p = write_temp("hf-type.json", R"({"model_type": "gpt2", "n_layer": 2, "n_embd": "64",
        "n_head": 4, "vocab_size": 256, "n_positions": 64})");
    CHECK_THAT(error_of(import_hf_config(p)), Catch::Contains(p + ": n_embd: \"64\" is not an integer"));
  }
  SECTION("cross-field errors use HF's key names") {
    std::string p = write_temp("hf-heads.json", R"({"model_type": "llama", "num_hidden_layers": 2,
        "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 3, "intermediate_size": 128,
        "vocab_size": 256, "max_position_embeddings": 64})");
    CHECK_THAT(error_of(import_hf_config(p)), Catch::Contains(p + ": num_key_value_heads: 3 does not divide heads 4"));
  }
  SECTION("model_type missing or not a string") {
    std::string p = write_temp("hf-none.json", R"({"model_type": 7})");
    CHECK_THAT(error_of(import_hf_config(p)), Catch::Contains(p + ": model_type: 7 is not a string"));
  }
  SECTION("HF's own keys are accepted, ours are still checked") {
    std::string p = write_temp("hf-extra.json", R"({"model_type": "gpt2", "n_layer": 2, "n_embd": 64,
        "n_head": 4, "vocab_size": 256, "n_positions": 64, "some_future_key": {"x": 1}, "n_inner": null})");
    ModelSpec m = must(import_hf_config(p));
    CHECK(parameter_count(m) == 120'576);  // the same shape as tiny
  }
}
