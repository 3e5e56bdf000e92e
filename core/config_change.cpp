// ds_config changes by dotted path (see config_change.h).
#include "core/config_change.h"

namespace zs::core {
namespace {

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    parts.push_back(path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) return parts;
    start = dot + 1;
  }
}

bool valid_path(const std::string& path) {
  if (path.empty()) return false;
  for (const auto& part : split_path(path))
    if (part.empty()) return false;
  return true;
}

}  // namespace

Result<ConfigChange> parse_config_change(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos)
    return bad_input("--set \"" + text + "\": expected KEY.PATH=VALUE, e.g. zero_optimization.stage=3");
  ConfigChange c;
  c.path = text.substr(0, eq);
  if (!valid_path(c.path))
    return bad_input("--set \"" + text + "\": \"" + c.path +
                     "\" is not a ds_config key path (dot-separated names, e.g. zero_optimization.stage)");
  const std::string value = text.substr(eq + 1);
  c.value = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (c.value.is_discarded()) c.value = value;  // a bare word: nvme, cpu, auto
  return c;
}

Status apply_config_changes(nlohmann::json& root, const std::vector<ConfigChange>& changes, const std::string& source) {
  if (changes.empty()) return {};
  if (!root.is_object()) return bad_input(source + ": top level: expected a JSON object to apply --set to");
  for (const auto& c : changes) {
    if (!valid_path(c.path)) return bad_input(source + ": \"" + c.path + "\" is not a ds_config key path");
    const auto parts = split_path(c.path);
    nlohmann::json* node = &root;
    std::string walked;
    for (size_t i = 0; node && i + 1 < parts.size(); ++i) {
      walked += (walked.empty() ? "" : ".") + parts[i];
      auto it = node->find(parts[i]);
      if (it == node->end()) {
        // removing under a missing block: nothing to do
        node = c.value.is_null() ? nullptr : &((*node)[parts[i]] = nlohmann::json::object());
      } else if (!it->is_object()) {
        return bad_input(source + ": cannot set " + c.path + ": " + walked + " is " + it->dump() + ", not an object");
      } else {
        node = &*it;
      }
    }
    if (!node) continue;
    if (c.value.is_null())
      node->erase(parts.back());
    else
      (*node)[parts.back()] = c.value;
  }
  return {};
}

std::string describe(const ConfigChange& c) {
  return c.value.is_null() ? c.path + ": removed" : c.path + " = " + c.value.dump();
}

nlohmann::json to_json(const std::vector<ConfigChange>& changes) {
  auto out = nlohmann::json::array();
  for (const auto& c : changes) out.push_back({{"path", c.path}, {"value", c.value}});
  return out;
}

}  // namespace zs::core
