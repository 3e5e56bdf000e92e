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
// or hub snapshot); otherwise a shipped file by name (with or without .json). Any other directory, or a name that
// is none of these, is bad input naming the path, what was expected and the shipped names.
Result<std::string> resolve_input(const std::string& name_or_path, InputKind kind);
// Shipped files of a kind (absolute paths, sorted by name).
std::vector<std::string> shipped_inputs(InputKind kind);

}  // namespace zs::core
