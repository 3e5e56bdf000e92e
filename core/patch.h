// A fix as a program can use it: the ds_config changes (config_change.h) plus the run settings outside the file
// (flags such as --checkpoint-activations, --nodes), evaluated by reading the same file again with the changes
// applied, so the configuration a fix promises is exactly what the patched file gives under DeepSpeed's reading
// rules; and the patched file itself, written with the original file's key order and "auto" values.
//   auto s = evaluate_patch(base, {{"zero_optimization.stage", 3}}, {{RunSetting::checkpoint_activations, true}});
//   auto text = patched_config_file(base, changes);   // for `fit --apply-fix N --write-config FILE`
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/config_change.h"
#include "core/status.h"
#include "core/strategy.h"

namespace zs::core {

// The run settings a fix may change, each with its command-line flag (cli/inputs.cpp).
enum class RunSetting {
  checkpoint_activations,  // --checkpoint-activations (HF gradient_checkpointing); value true
  nodes,                   // --nodes N
  gpus_per_node,           // --gpus-per-node N
  micro_batch,  // --micro-batch N: fills "auto" train_micro_batch_size_per_gpu (HF per_device_train_batch_size)
  grad_accum,   // --grad-accum N: fills "auto" gradient_accumulation_steps (HF gradient_accumulation_steps)
};

struct RunChange {
  RunSetting setting = RunSetting::checkpoint_activations;
  int64_t value = 1;  // the switch: 1 (on)
  bool operator==(const RunChange&) const = default;
};

std::string flag(RunSetting s);            // "--nodes"
std::string describe(const RunChange& c);  // "--nodes 2", "--checkpoint-activations"
// The flags on one line, as the user adds them to the command: "--nodes 2 --checkpoint-activations".
std::string describe(const std::vector<RunChange>& changes);
// [{"flag": "--nodes", "value": 2}, {"flag": "--checkpoint-activations", "value": true}], for `fit --json`.
nlohmann::json to_json(const std::vector<RunChange>& changes);
void apply_run_changes(RunSettings& run, const std::vector<RunChange>& changes);
// `changes` followed by `more`; a later change of a setting replaces the earlier one.
std::vector<RunChange> merge_run_changes(std::vector<RunChange> changes, const std::vector<RunChange>& more);

// `base`'s file read again with `changes` appended to its run's config_changes and `run_changes` applied to its
// run settings, as `fit` reads the file with those flags (a new --micro-batch / --grad-accum replaces the changes
// the old one made, batch_setting_changes): the Strategy the patch produces, or the reader's refusal of it.
Result<Strategy> evaluate_patch(const Strategy& base, const std::vector<ConfigChange>& changes,
                                const std::vector<RunChange>& run_changes);

// The ds_config JSON `base` was read from (base.config_text) with its run's config_changes applied: what the
// reader saw, before "auto" resolution and defaults.
Result<nlohmann::json> effective_config(const Strategy& base);

// base.source as it is on disk, keys in their order and "auto" values kept, with base.run.config_changes and then
// `changes` applied; pretty-printed with the file's indentation. Bad input when the file no longer holds what was
// read (changed on disk) or when a change does not apply.
Result<std::string> patched_config_file(const Strategy& base, const std::vector<ConfigChange>& changes);

// The same Strategy with its run.config_changes written into config_text and cleared, so a caller that edits the
// resolved config and reads it again (the GUI's knobs) does not apply them a second time.
Result<Strategy> fold_config_changes(const Strategy& s);

}  // namespace zs::core
