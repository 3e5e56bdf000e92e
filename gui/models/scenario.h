// Scenario: the three inputs the app holds at any time (model, hardware, resolved strategy) plus the op schedule,
// and the knobs a person turns. Every edit goes through core: the strategy is written back to ds_config text,
// changed there and re-read by core's parser, so DeepSpeed's rules (stage checks, batch inference) apply once.
//   Result<Scenario> s = load_scenario({.model = "gpt2-1.5b", .hardware = "dgx2", .ds_config = "zero2"});
//   Result<Scenario> t = with_knob(*s, Knob::micro_batch, "8");   // or an error naming the bad value
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/hardware.h"
#include "core/memory.h"
#include "core/model.h"
#include "core/plan.h"
#include "core/status.h"
#include "core/strategy.h"

namespace zs::gui {

// What the person picked: shipped names or paths, as the CLI takes them.
struct InputRefs {
  std::string model;
  std::string hardware = "dgx2";
  std::string ds_config = "zero3-offload-cpu";
};

// Run flags outside ds_config (the CLI's --nodes, --gpus-per-node, --seq-len, --checkpoint-activations);
// 0 means "from the hardware profile / the model".
struct RunOverrides {
  int64_t nodes = 0;
  int64_t gpus_per_node = 0;
  int64_t seq_len = 0;
  bool checkpoint_activations = false;
};

struct Scenario {
  InputRefs refs;
  core::ModelSpec model;
  core::Hardware hardware;
  core::Strategy strategy;
  core::Schedule schedule = core::Schedule::deepspeed;
};

// Loads the three inputs the way `zerosim fit` does (cli/inputs.cpp): run settings from the hardware profile and
// the model unless overridden.
core::Result<Scenario> load_scenario(const InputRefs& refs, const RunOverrides& run = {});
// Same with the model or hardware already in hand (an imported HF config, a profile edited field by field).
core::Result<Scenario> make_scenario(InputRefs refs, core::ModelSpec model, core::Hardware hw, const RunOverrides& run);

// The knobs of the strategy form and the sweep. Values travel as strings ("cpu", "8", "on") so one path serves
// the form, the sweep axes and the session file.
enum class Knob {
  stage, offload_optimizer, offload_param, precision, micro_batch, grad_accum, nodes, gpus_per_node, seq_len,
  checkpointing, schedule, reduce_bucket_size, allgather_bucket_size, prefetch_bucket_size, sub_group_size,
  max_live_parameters
};
struct KnobInfo {
  Knob knob;
  const char* key;    // stable identifier (session files, sweep specs): "micro_batch"
  const char* label;  // for people: "micro batch per GPU"
  std::vector<std::string> choices;  // categorical knobs; empty for integers
};
const std::vector<KnobInfo>& knobs();
const KnobInfo& knob_info(Knob k);
std::optional<Knob> parse_knob(const std::string& key);

// The knob's current value in `s` ("cpu", "8", "on").
std::string knob_value(const Scenario& s, Knob k);
// `s` with one knob changed, re-validated by core. A value core rejects is an error naming it.
core::Result<Scenario> with_knob(const Scenario& s, Knob k, const std::string& value);
// `s` with another model: the same strategy re-read for it (sequence length follows the model unless it was set).
core::Result<Scenario> with_model(const Scenario& s, const core::ModelSpec& m);
// `s` with a new hardware profile (edited or another file); run GPUs per node clamped to what it has.
core::Result<Scenario> with_hardware(const Scenario& s, const core::Hardware& hw);
// `s` with a whole strategy replaced (a suggested fix: "applicable with one click").
Scenario with_strategy(const Scenario& s, const core::Strategy& strategy);
// `s` with a ds_config read from text (a loaded file, a session), under the scenario's run settings.
core::Result<Scenario> with_ds_config_text(const Scenario& s, const std::string& text, const std::string& source);

// The strategy as a runnable ds_config.json: every resolved key, the activation_checkpointing block only when
// checkpointing is on (zerosim reads the block as "on"), train_batch_size consistent with micro × GA × world.
std::string ds_config_text(const core::Strategy& s);
// Writes ds_config_text(s) to `path` atomically.
core::Status save_ds_config(const core::Strategy& s, const std::string& path);
// Writes the profile (core::hardware_to_json) to `path` atomically; load_hardware reads it back.
core::Status save_hardware(const core::Hardware& h, const std::string& path);

// The fit verdict in one line, in fit's words: "FITS — tightest tier gpu, 12.3 GiB headroom" / "TIGHT — …" (under
// 3% headroom, core::verdict) / "DOES NOT FIT — gpu needs …".
std::string verdict_text(const core::MemoryReport& r);

}  // namespace zs::gui
