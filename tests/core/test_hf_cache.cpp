// A model id resolved in a fake local HuggingFace hub cache: the cache folder from the environment as
// huggingface_hub finds it, the snapshot refs/main names or else the newest, and a miss naming where it looked.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "core/model.h"
#include "core/paths.h"

namespace fs = std::filesystem;
using namespace zs::core;
using Catch::Matchers::Contains;

namespace {

// Sets (or unsets, with nullopt) an environment variable for one scope.
class EnvVar {
 public:
  EnvVar(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      ::setenv(name, value->c_str(), 1);
    else
      ::unsetenv(name);
  }
  ~EnvVar() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }
  EnvVar(const EnvVar&) = delete;
  EnvVar& operator=(const EnvVar&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// A temp folder removed at the end of the scope.
struct TempDir {
  fs::path path = fs::temp_directory_path() / ("zs_test_hf_cache_" + std::to_string(::getpid()));
  TempDir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

std::string config(int layers) {
  return R"({"model_type": "llama", "hidden_size": 256, "intermediate_size": 688, "num_attention_heads": 4,
             "num_hidden_layers": )" +
         std::to_string(layers) + R"(, "vocab_size": 1000, "max_position_embeddings": 512})";
}

// The cache variables cleared, HF_HOME at `home`.
struct CacheEnv {
  EnvVar hub{"HF_HUB_CACHE", std::nullopt}, legacy{"HUGGINGFACE_HUB_CACHE", std::nullopt};
  EnvVar home;
  explicit CacheEnv(const fs::path& h) : home("HF_HOME", h.string()) {}
};

}  // namespace

TEST_CASE("the hub cache folder follows huggingface_hub's environment rules", "[hf_cache]") {
  EnvVar hub("HF_HUB_CACHE", std::nullopt), legacy("HUGGINGFACE_HUB_CACHE", std::nullopt);
  EnvVar home("HF_HOME", std::nullopt), xdg("XDG_CACHE_HOME", std::nullopt), user("HOME", "/home/u");
  CHECK(hf_hub_cache_dir().path == "/home/u/.cache/huggingface/hub");
  {
    EnvVar x("XDG_CACHE_HOME", "/xdg");
    CHECK(hf_hub_cache_dir().path == "/xdg/huggingface/hub");
    EnvVar h("HF_HOME", "~/hf");
    CHECK(hf_hub_cache_dir().path == "/home/u/hf/hub");
    CHECK(hf_hub_cache_dir().origin == "$HF_HOME/hub");
    EnvVar l("HUGGINGFACE_HUB_CACHE", "/legacy");
    CHECK(hf_hub_cache_dir().path == "/legacy");
    EnvVar c("HF_HUB_CACHE", "/hubcache");
    CHECK(hf_hub_cache_dir().path == "/hubcache");
    CHECK(hf_hub_cache_dir().origin == "$HF_HUB_CACHE");
  }
}

TEST_CASE("model ids have huggingface_hub's shape", "[hf_cache]") {
  CHECK(is_hf_model_id("meta-llama/Llama-3.1-8B"));
  CHECK(is_hf_model_id("gpt2"));
  CHECK_FALSE(is_hf_model_id("a/b/c"));
  CHECK_FALSE(is_hf_model_id("./models/x"));
  CHECK_FALSE(is_hf_model_id("org--x/y"));
  CHECK_FALSE(is_hf_model_id("/abs/path"));
}

TEST_CASE("a model id resolves to the snapshot refs/main names, else the newest", "[hf_cache]") {
  TempDir tmp;
  CacheEnv env(tmp.path);
  const fs::path repo = tmp.path / "hub" / "models--acme--tiny-llama";
  write(repo / "snapshots" / "aaaa" / "config.json", config(2));
  write(repo / "snapshots" / "bbbb" / "config.json", config(3));
  fs::last_write_time(repo / "snapshots" / "aaaa", fs::file_time_type::clock::now() - std::chrono::hours(2));
  fs::last_write_time(repo / "snapshots" / "bbbb", fs::file_time_type::clock::now() - std::chrono::hours(1));

  SECTION("no refs/main: the newest snapshot") {
    auto p = resolve_input("acme/tiny-llama", InputKind::model);
    REQUIRE(p);
    CHECK(*p == (repo / "snapshots" / "bbbb" / "config.json").string());
  }
  SECTION("refs/main names the older one") {
    write(repo / "refs" / "main", "aaaa");
    auto m = load_model("acme/tiny-llama");
    REQUIRE(m);
    CHECK(m->layers == 2);
    CHECK(m->source == (repo / "snapshots" / "aaaa" / "config.json").string());
  }
  SECTION("refs/main names a snapshot without config.json: the newest that has one") {
    write(repo / "refs" / "main", "cccc\n");
    fs::create_directories(repo / "snapshots" / "cccc");
    auto m = load_model("acme/tiny-llama");
    REQUIRE(m);
    CHECK(m->layers == 3);
  }
}

TEST_CASE("shipped names and paths keep resolving before the cache", "[hf_cache]") {
  TempDir tmp;
  CacheEnv env(tmp.path);
  write(tmp.path / "hub" / "models--llama2-7b" / "snapshots" / "x" / "config.json", config(2));
  auto p = resolve_input("llama2-7b", InputKind::model);
  REQUIRE(p);
  CHECK(fs::path(*p).filename() == "llama2-7b.json");
  CHECK(fs::path(*p).parent_path().filename() == "models");
}

TEST_CASE("a model id not in the cache names every place looked in", "[hf_cache]") {
  TempDir tmp;
  CacheEnv env(tmp.path);
  auto p = resolve_input("acme/absent-model", InputKind::model);
  REQUIRE_FALSE(p);
  CHECK(p.error().kind == ErrorKind::bad_input);
  const std::string& e = p.error().message;
  CHECK_THAT(e, Contains("acme/absent-model: no such file"));
  CHECK_THAT(e, Contains((tmp.path / "hub" / "models--acme--absent-model" / "snapshots").string()));
  CHECK_THAT(e, Contains("$HF_HOME/hub"));
  CHECK_THAT(e, Contains("hf download acme/absent-model config.json"));
  // A folder downloaded without config.json says so.
  fs::create_directories(tmp.path / "hub" / "models--acme--empty" / "snapshots" / "r1");
  auto q = resolve_input("acme/empty", InputKind::model);
  REQUIRE_FALSE(q);
  CHECK_THAT(q.error().message, Contains("has no snapshot holding config.json"));
}
