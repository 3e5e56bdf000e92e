// One change to a ds_config, as a path and a value: what `--set zero_optimization.stage=3` says, and what a fit
// suggestion applies. The same changes, applied to the same file, give the same Strategy everywhere (fit's
// evaluation, `--apply-fix --write-config`, a later `fit` of the written file).
//   auto c = parse_config_change("zero_optimization.offload_param.device=nvme");   // value parsed as JSON, else text
//   Status st = apply_config_changes(root, {*c}, "ds.json");
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace zs::core {

struct ConfigChange {
  std::string path;      // dotted ds_config path: "zero_optimization.offload_param.device"
  nlohmann::json value;  // null: remove the key
  bool operator==(const ConfigChange&) const = default;
};

// "a.b.c=VALUE": VALUE is read as JSON when it parses (3, true, 5e8, "x", {...}), otherwise as a string (nvme).
// An empty path, an empty path segment or a missing '=' is bad input naming the flag's text.
Result<ConfigChange> parse_config_change(const std::string& text);

// Sets (or removes) each path in order, creating objects on the way. A segment that meets a non-object value is
// bad input naming `source` and the path ("zero_optimization.stage is 3, not an object").
Status apply_config_changes(nlohmann::json& root, const std::vector<ConfigChange>& changes, const std::string& source);

// "zero_optimization.offload_param.device = \"nvme\"" / "zero_optimization.offload_param: removed".
std::string describe(const ConfigChange& c);

// The changes as one JSON array of {"path": ..., "value": ...}, for `fit --json`.
nlohmann::json to_json(const std::vector<ConfigChange>& changes);

}  // namespace zs::core
