#include "core/paths.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

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
      return "a shipped model name, a zerosim model JSON, a HuggingFace config.json, or a HuggingFace model folder "
             "holding config.json";
    case InputKind::hardware: return "a shipped hardware name or a hardware profile JSON";
    case InputKind::deepspeed: return "a shipped config name or a DeepSpeed ds_config JSON";
  }
  return "";
}

}  // namespace

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
  std::string names;
  for (const auto& p : shipped_inputs(kind)) names += (names.empty() ? "" : ", ") + fs::path(p).stem().string();
  return bad_input(name_or_path + ": no such file" +
                   (looks_like_path ? std::string("") : " and no shipped " + input_subdir(kind) + " entry of that name") +
                   "; expected " + expected(kind) + (names.empty() ? std::string("") : " (shipped: " + names + ")"));
}

}  // namespace zs::core
