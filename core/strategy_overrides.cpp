// Run settings that override the ds_config file: --micro-batch / --grad-accum as ds_config changes, and the notes
// that say what each change replaced. See strategy.h (batch_setting_changes) and docs/DS_CONFIG.md "Run settings".
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <tuple>

#include "core/strategy.h"

namespace zs::core {
namespace {

using Json = nlohmann::json;

const char* const kMicro = "train_micro_batch_size_per_gpu";
const char* const kGradAccum = "gradient_accumulation_steps";
const char* const kTrainBatch = "train_batch_size";

bool is_auto(const Json& j) { return j.is_string() && j.get<std::string>() == "auto"; }

// A whole number (4 or 4.0) as DeepSpeed would use it; nullopt for anything else.
std::optional<int64_t> whole(const Json* j) {
  if (!j || j->is_boolean() || !j->is_number()) return std::nullopt;
  const double d = j->get<double>();
  if (j->is_number_float() && (std::floor(d) != d || std::fabs(d) > 9e18)) return std::nullopt;
  return j->is_number_float() ? static_cast<int64_t>(d) : j->get<int64_t>();
}

// The value at a dotted path, or nullptr when a segment is missing (or not an object on the way).
const Json* at_path(const Json& root, const std::string& path) {
  const Json* node = &root;
  size_t start = 0;
  while (node) {
    const size_t dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!node->is_object()) return nullptr;
    auto it = node->find(key);
    node = it == node->end() ? nullptr : &*it;
    if (dot == std::string::npos) return node;
    start = dot + 1;
  }
  return nullptr;
}

bool given(const Json* j) { return j && !j->is_null(); }  // DeepSpeed reads a null value as unset

}  // namespace

std::vector<ConfigChange> batch_setting_changes(const Json& root, const RunSettings& run) {
  std::vector<ConfigChange> out;
  if (!root.is_object()) return out;  // the reader reports it
  bool decided = false;               // a flag gives a value the file did not already give
  const std::pair<const char*, std::optional<int64_t>> flags[] = {{kMicro, run.hf_micro_batch},
                                                                  {kGradAccum, run.hf_grad_accum}};
  for (const auto& [key, value] : flags) {
    if (!value) continue;
    const Json* in_file = at_path(root, key);
    if (given(in_file) && is_auto(*in_file)) {  // the HF pass fills it with the same value
      decided = true;
      continue;
    }
    if (whole(in_file) == value) continue;  // the file already says it
    out.push_back({key, *value});
    decided = true;
  }
  // DeepSpeed asserts train_batch_size == micro × GA × world; a file's explicit total would contradict the flags.
  const Json* tbs = at_path(root, kTrainBatch);
  if (decided && given(tbs) && !is_auto(*tbs)) out.push_back({kTrainBatch, nullptr});
  return out;
}

namespace detail {

void note_config_changes(const Json& original, const Json& changed, const RunSettings& run,
                         std::vector<std::string>& notes) {
  auto text = [](const Json* j) { return given(j) ? j->dump() : std::string("unset"); };
  // The batch keys a flag set: said in the flag's words.
  std::vector<std::string> covered;
  const std::tuple<const char*, const char*, std::optional<int64_t>> flags[] = {
      {kMicro, "--micro-batch", run.hf_micro_batch}, {kGradAccum, "--grad-accum", run.hf_grad_accum}};
  size_t flag_note = notes.size();  // index of the last flag note, if any
  for (const auto& [key, flag, value] : flags) {
    const Json* before = at_path(original, key);
    const auto after = whole(at_path(changed, key));
    if (!value || after != value || whole(before) == after || (given(before) && is_auto(*before))) continue;
    const std::string v = std::to_string(*value);
    notes.push_back(given(before) ? flag + (" " + v) + " overrides " + key + " " + before->dump() + " from the file"
                                  : flag + (" " + v) + " sets " + key + " (the file has none)");
    flag_note = notes.size() - 1;
    covered.push_back(key);
  }
  // An explicit train_batch_size the flags removed (batch_setting_changes): said with the flags' note.
  const Json* tbs_before = at_path(original, kTrainBatch);
  if ((run.hf_micro_batch || run.hf_grad_accum) && given(tbs_before) && !is_auto(*tbs_before) &&
      !given(at_path(changed, kTrainBatch))) {
    const std::string why = "train_batch_size recomputed (the file's " + tbs_before->dump() + " is dropped)";
    if (flag_note < notes.size()) {
      notes[flag_note] += "; " + why;
    } else {  // the flags filled "auto": no override note to extend
      std::string given_flags;
      if (run.hf_micro_batch) given_flags += "--micro-batch " + std::to_string(*run.hf_micro_batch);
      if (run.hf_grad_accum)
        given_flags += (given_flags.empty() ? "" : " and ") + ("--grad-accum " + std::to_string(*run.hf_grad_accum));
      notes.push_back(given_flags + ": " + why);
    }
    covered.push_back(kTrainBatch);
  }
  // Every other changed path (--set, an applied fix), once, with what the file had.
  for (size_t i = 0; i < run.config_changes.size(); ++i) {
    const std::string& path = run.config_changes[i].path;
    bool later = false;  // described at its last change
    for (size_t k = i + 1; k < run.config_changes.size(); ++k) later = later || run.config_changes[k].path == path;
    if (later || std::find(covered.begin(), covered.end(), path) != covered.end()) continue;
    const Json* before = at_path(original, path);
    const Json* after = at_path(changed, path);
    if (text(before) == text(after)) continue;
    notes.push_back(path + (given(after) ? " = " + after->dump() : std::string(": removed")) +
                    " (a ds_config change, e.g. --set; the file: " + text(before) + ")");
  }
}

}  // namespace detail
}  // namespace zs::core
