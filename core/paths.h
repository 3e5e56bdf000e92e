// Where shipped inputs live, and how a name ("gpt2-1.5b") or a path resolves to a file.
//   Result<std::string> p = resolve_input("gpt2-1.5b", InputKind::model);  // → <root>/models/gpt2-1.5b.json
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace zs::core {

enum class InputKind { model, hardware, deepspeed };

// Roots searched in order: $ZEROSIM_DATA_DIR, the folder above the executable's bin/ (and two above, for
// build/bin), the source tree the binary was built from.
std::vector<std::string> data_roots();
// models/, configs/hardware/, configs/deepspeed/ below a root.
std::string input_subdir(InputKind kind);
// An existing file is returned as is; a model folder (InputKind::model) as its config.json (a HuggingFace checkpoint
// or hub snapshot); otherwise a shipped file by name (with or without .json); otherwise, for a model, a hub model
// id in the local HF cache (resolve_hf_cache_model). Any other directory, or a name that
// is none of these, is bad input naming the path, what was expected and the shipped names.
Result<std::string> resolve_input(const std::string& name_or_path, InputKind kind);
// The local HuggingFace hub cache, as huggingface_hub's constants.py finds it: $HF_HUB_CACHE, else the legacy
// $HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub.
struct HfCacheDir {
  std::string path;
  std::string origin;  // "$HF_HOME/hub", ... : which rule gave it, for messages
};
HfCacheDir hf_hub_cache_dir();
// Whether `s` has the shape of a hub model id, "NAME" or "ORG/NAME" (huggingface_hub's validate_repo_id).
bool is_hf_model_id(const std::string& s);
// A model id's config.json in the local hub cache, without the network: models--ORG--NAME/snapshots/<rev>/config.json
// for the revision refs/main names, else the newest snapshot holding config.json. Bad input naming the place
// looked in when there is none.
Result<std::string> resolve_hf_cache_model(const std::string& model_id);
// Shipped files of a kind (absolute paths, sorted by name).
std::vector<std::string> shipped_inputs(InputKind kind);

}  // namespace zs::core
