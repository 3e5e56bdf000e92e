#include "core/paths.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>

namespace fs = std::filesystem;

namespace zs::core {

std::vector<std::string> data_roots() {
  std::vector<std::string> roots;
  auto add = [&](const fs::path& p) {
    std::error_code ec;
    if (!fs::is_directory(p / "models", ec)) return;
    std::string s = fs::weakly_canonical(p, ec).string();
    if (std::find(roots.begin(), roots.end(), s) == roots.end()) roots.push_back(s);
  };
  if (const char* env = std::getenv("ZEROSIM_DATA_DIR")) add(env);
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    add(exe.parent_path().parent_path());
    add(exe.parent_path().parent_path().parent_path());
  }
#ifdef ZEROSIM_SOURCE_DIR
  add(ZEROSIM_SOURCE_DIR);
#endif
  return roots;
}

std::string input_subdir(InputKind kind) {
  switch (kind) {
    case InputKind::model: return "models";
    case InputKind::hardware: return "configs/hardware";
    case InputKind::deepspeed: return "configs/deepspeed";
  }
  return "";
}

std::vector<std::string> shipped_inputs(InputKind kind) {
  std::vector<std::string> out;
  auto roots = data_roots();
  if (roots.empty()) return out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(roots.front()) / input_subdir(kind), ec))
    if (e.path().extension() == ".json") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

// What a name or path of each kind may be, for the message when it is none of them.
std::string expected(InputKind kind) {
  switch (kind) {
    case InputKind::model:
      return "a shipped model name, a zerosim model JSON, a HuggingFace config.json, a HuggingFace model folder "
             "holding config.json, or a model id (ORG/NAME) in the local HuggingFace cache";
    case InputKind::hardware: return "a shipped hardware name or a hardware profile JSON";
    case InputKind::deepspeed: return "a shipped config name or a DeepSpeed ds_config JSON";
  }
  return "";
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string expand_user(const std::string& p) {  // os.path.expanduser's "~" and "~/..."
  if (p.empty() || p[0] != '~' || (p.size() > 1 && p[1] != '/')) return p;
  return env("HOME") + p.substr(1);
}

// The snapshot folder refs/main names, when it holds config.json.
std::optional<fs::path> main_snapshot(const fs::path& repo) {
  std::ifstream ref(repo / "refs" / "main");
  std::string commit;
  if (!(ref >> commit)) return std::nullopt;
  std::error_code ec;
  const fs::path snap = repo / "snapshots" / commit;
  if (fs::is_regular_file(snap / "config.json", ec)) return snap;
  return std::nullopt;
}

// The most recently written snapshot holding config.json (a revision fetched by hash or tag has no refs/main).
std::optional<fs::path> newest_snapshot(const fs::path& repo) {
  std::optional<fs::path> best;
  fs::file_time_type best_time{};
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(repo / "snapshots", ec)) {
    if (!fs::is_regular_file(e.path() / "config.json", ec)) continue;
    const auto t = fs::last_write_time(e.path(), ec);
    if (!best || t > best_time || (t == best_time && e.path() > *best)) best = e.path(), best_time = t;
  }
  return best;
}

}  // namespace

HfCacheDir hf_hub_cache_dir() {
  if (!env("HF_HUB_CACHE").empty()) return {expand_user(env("HF_HUB_CACHE")), "$HF_HUB_CACHE"};
  if (!env("HUGGINGFACE_HUB_CACHE").empty())
    return {expand_user(env("HUGGINGFACE_HUB_CACHE")), "$HUGGINGFACE_HUB_CACHE"};
  if (!env("HF_HOME").empty()) return {(fs::path(expand_user(env("HF_HOME"))) / "hub").string(), "$HF_HOME/hub"};
  if (!env("XDG_CACHE_HOME").empty())
    return {(fs::path(expand_user(env("XDG_CACHE_HOME"))) / "huggingface" / "hub").string(),
            "$XDG_CACHE_HOME/huggingface/hub"};
  return {(fs::path(env("HOME")) / ".cache" / "huggingface" / "hub").string(), "~/.cache/huggingface/hub"};
}

bool is_hf_model_id(const std::string& s) {
  static const std::regex id(R"(^([A-Za-z0-9][\w.-]*/)?[A-Za-z0-9][\w.-]*$)");
  return s.size() <= 96 && s.find("--") == std::string::npos && s.find("..") == std::string::npos &&
         std::regex_match(s, id);
}

Result<std::string> resolve_hf_cache_model(const std::string& model_id) {
  const HfCacheDir cache = hf_hub_cache_dir();
  std::string folder = "models--" + model_id;
  if (const auto slash = folder.find('/'); slash != std::string::npos) folder.replace(slash, 1, "--");
  const fs::path repo = fs::path(cache.path) / folder;
  std::optional<fs::path> snap = main_snapshot(repo);
  if (!snap) snap = newest_snapshot(repo);
  if (snap) return (*snap / "config.json").string();
  std::error_code ec;
  const bool downloaded = fs::is_directory(repo / "snapshots", ec);
  return bad_input(model_id + ": not in the local HuggingFace cache: " + (repo / "snapshots").string() +
                   (downloaded ? " has no snapshot holding config.json" : " does not exist") + " (the cache is " +
                   cache.origin + "; zerosim does not download: `hf download " + model_id +
                   " config.json` fetches it)");
}

Result<std::string> resolve_input(const std::string& name_or_path, InputKind kind) {
  std::error_code ec;
  if (fs::is_regular_file(name_or_path, ec)) return name_or_path;
  if (fs::is_directory(name_or_path, ec)) {
    // A HuggingFace model folder (a checkpoint or a hub snapshot) describes its architecture in config.json.
    const fs::path config = fs::path(name_or_path) / "config.json";
    if (kind == InputKind::model && fs::is_regular_file(config, ec)) return config.string();
    return bad_input(name_or_path + ": is a directory" +
                     (kind == InputKind::model ? std::string(" without config.json") : std::string("")) +
                     "; expected " + expected(kind));
  }
  const bool looks_like_path = name_or_path.find('/') != std::string::npos;
  if (!looks_like_path) {
    for (const auto& root : data_roots()) {
      fs::path base = fs::path(root) / input_subdir(kind);
      for (const auto& cand : {base / name_or_path, base / (name_or_path + ".json")})
        if (fs::is_regular_file(cand, ec)) return cand.string();
    }
  }
  std::string cache_miss;
  const bool json_name = name_or_path.size() > 5 && name_or_path.compare(name_or_path.size() - 5, 5, ".json") == 0;
  if (kind == InputKind::model && !json_name && is_hf_model_id(name_or_path)) {
    auto cached = resolve_hf_cache_model(name_or_path);
    if (cached) return cached;
    cache_miss = "; " + cached.error().message.substr(name_or_path.size() + 2);
  }
  std::string names;
  for (const auto& p : shipped_inputs(kind)) names += (names.empty() ? "" : ", ") + fs::path(p).stem().string();
  return bad_input(name_or_path + ": no such file" +
                   (looks_like_path ? std::string("") : " and no shipped " + input_subdir(kind) + " entry of that name") +
                   cache_miss + "; expected " + expected(kind) + (names.empty() ? std::string("") : " (shipped: " + names + ")"));
}

}  // namespace zs::core
