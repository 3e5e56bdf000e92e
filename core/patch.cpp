// Fixes as patches: run-setting changes, evaluation by re-reading, the patched file (see patch.h).
#include "core/patch.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "core/json_reader.h"

namespace zs::core {
namespace {

using OJ = nlohmann::ordered_json;

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  std::stringstream ss(path);
  std::string part;
  while (std::getline(ss, part, '.')) parts.push_back(part);
  return parts;
}

// apply_config_changes (config_change.cpp) on an order-keeping document. The caller checks that both give the same
// JSON, so a difference between the two can never reach a written file unnoticed.
Status apply_ordered(OJ& root, const std::vector<ConfigChange>& changes, const std::string& source) {
  if (changes.empty()) return {};
  if (!root.is_object()) return bad_input(source + ": the top level is not a JSON object");
  for (const auto& c : changes) {
    const auto parts = split_path(c.path);
    if (parts.empty()) return bad_input(source + ": \"" + c.path + "\" is not a ds_config key path");
    OJ* node = &root;
    std::string walked;
    for (size_t i = 0; node && i + 1 < parts.size(); ++i) {
      walked += (walked.empty() ? "" : ".") + parts[i];
      auto it = node->find(parts[i]);
      if (it == node->end())
        node = c.value.is_null() ? nullptr : &((*node)[parts[i]] = OJ::object());
      else if (!it->is_object())
        return bad_input(source + ": cannot set " + c.path + ": " + walked + " is " + it->dump() + ", not an object");
      else
        node = &*it;
    }
    if (!node) continue;
    if (c.value.is_null())
      node->erase(parts.back());
    else
      (*node)[parts.back()] = OJ::parse(c.value.dump());
  }
  return {};
}

// The indentation of the file's first indented line ("  ", "    ", "\t"); two spaces when there is none.
std::pair<int, char> indentation(const std::string& text) {
  const size_t nl = text.find('\n');
  if (nl == std::string::npos) return {2, ' '};
  size_t i = nl + 1, n = 0;
  const char c = i < text.size() && text[i] == '\t' ? '\t' : ' ';
  while (i + n < text.size() && text[i + n] == c) ++n;
  return {n == 0 ? 2 : static_cast<int>(n), n == 0 ? ' ' : c};
}

}  // namespace

std::string flag(RunSetting s) {
  switch (s) {
    case RunSetting::checkpoint_activations:
      return "--checkpoint-activations";
    case RunSetting::nodes:
      return "--nodes";
    case RunSetting::gpus_per_node:
      return "--gpus-per-node";
    case RunSetting::micro_batch:
      return "--micro-batch";
    case RunSetting::grad_accum:
      return "--grad-accum";
  }
  return "?";
}

std::string describe(const RunChange& c) {
  if (c.setting == RunSetting::checkpoint_activations) return flag(c.setting);
  return flag(c.setting) + " " + std::to_string(c.value);
}

std::string describe(const std::vector<RunChange>& changes) {
  std::string out;
  for (const auto& c : changes) out += (out.empty() ? "" : " ") + describe(c);
  return out;
}

nlohmann::json to_json(const std::vector<RunChange>& changes) {
  auto out = nlohmann::json::array();
  for (const auto& c : changes) {
    const nlohmann::json value =
        c.setting == RunSetting::checkpoint_activations ? nlohmann::json(c.value != 0) : nlohmann::json(c.value);
    out.push_back({{"flag", flag(c.setting)}, {"value", value}});
  }
  return out;
}

void apply_run_changes(RunSettings& run, const std::vector<RunChange>& changes) {
  for (const auto& c : changes) {
    switch (c.setting) {
      case RunSetting::checkpoint_activations:
        run.checkpoint_activations = c.value != 0;
        break;
      case RunSetting::nodes:
        run.nodes = c.value;
        break;
      case RunSetting::gpus_per_node:
        run.gpus_per_node = c.value;
        break;
      case RunSetting::micro_batch:
        run.hf_micro_batch = c.value;
        break;
      case RunSetting::grad_accum:
        run.hf_grad_accum = c.value;
        break;
    }
  }
}

std::vector<RunChange> merge_run_changes(std::vector<RunChange> changes, const std::vector<RunChange>& more) {
  for (const auto& m : more) {
    bool replaced = false;
    for (auto& c : changes)
      if (c.setting == m.setting) c = m, replaced = true;
    if (!replaced) changes.push_back(m);
  }
  return changes;
}

Result<Strategy> evaluate_patch(const Strategy& base, const std::vector<ConfigChange>& changes,
                                const std::vector<RunChange>& run_changes) {
  RunSettings run = base.run;
  apply_run_changes(run, run_changes);
  if (run.hf_micro_batch != base.run.hf_micro_batch || run.hf_grad_accum != base.run.hf_grad_accum) {
    // --micro-batch / --grad-accum override the file through the changes they make to it, first in the list
    // (cli/inputs.cpp): the old flags' changes give way to the new ones', the rest (--set) stays.
    auto root = parse_json_text(base.config_text, base.source);
    if (!root) return root.error();
    const auto old_batch = batch_setting_changes(*root, base.run);
    auto rest = run.config_changes;
    if (rest.size() >= old_batch.size() && std::equal(old_batch.begin(), old_batch.end(), rest.begin()))
      rest.erase(rest.begin(), rest.begin() + static_cast<long>(old_batch.size()));
    run.config_changes = batch_setting_changes(*root, run);
    run.config_changes.insert(run.config_changes.end(), rest.begin(), rest.end());
  }
  run.config_changes.insert(run.config_changes.end(), changes.begin(), changes.end());
  return reload_strategy(base, run);
}

Result<nlohmann::json> effective_config(const Strategy& base) {
  auto j = parse_json_text(base.config_text, base.source);
  if (!j) return j.error();
  ZS_TRY(apply_config_changes(*j, base.run.config_changes, base.source));
  return std::move(*j);
}

Result<std::string> patched_config_file(const Strategy& base, const std::vector<ConfigChange>& changes) {
  std::ifstream in(base.source, std::ios::binary);
  if (!in) return io_error(base.source + ": cannot open the ds_config to patch it");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  OJ doc = OJ::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || nlohmann::json::parse(doc.dump()) != nlohmann::json::parse(base.config_text))
    return bad_input(base.source + ": the file changed on disk since it was read; run the command again");
  std::vector<ConfigChange> all = base.run.config_changes;
  all.insert(all.end(), changes.begin(), changes.end());
  ZS_TRY(apply_ordered(doc, all, base.source));
  // The written file must read exactly as the evaluated one did.
  auto expected = parse_json_text(base.config_text, base.source);
  if (!expected) return expected.error();
  ZS_TRY(apply_config_changes(*expected, all, base.source));
  if (nlohmann::json::parse(doc.dump()) != *expected)
    return internal_error(base.source + ": the patched file differs from the evaluated configuration");
  const auto [width, ch] = indentation(text);
  return doc.dump(width, ch) + "\n";
}

Result<Strategy> fold_config_changes(const Strategy& s) {
  auto j = effective_config(s);
  if (!j) return j.error();
  Strategy out = s;
  out.config_text = j->dump();
  out.run.config_changes.clear();
  return out;
}

}  // namespace zs::core
