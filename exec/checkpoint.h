// Checkpoints: a training state on disk, written so a crash at any instant leaves the previous one loadable.
// Layout (docs/ENGINE.md "Checkpoints"):
//   DIR/latest                       "step-00000030\n" (replaced by rename)
//   DIR/step-00000030/manifest.json  step, scalar state (loss scaler, data position, RNG, optimizer step),
//                                    and per tensor: name, dtype, numel, offset, bytes, CRC32C
//   DIR/step-00000030/tensors.bin    the tensors back to back (lp params, fp32 master, exp_avg, exp_avg_sq, ...)
// A save writes DIR/.tmp-step-00000030.<pid>/, fsyncs both files and the folder, renames it into place, fsyncs
// DIR, then replaces `latest` the same way; the oldest step folders beyond `keep` are removed afterwards.
// A load verifies every checksum; if `latest` or its folder is damaged it falls back to the newest intact step.
//   std::vector<CheckpointTensor> t = {{"wte.weight", "bf16", n, 2 * n, [&](void* dst) { ...; return Status{}; }}};
//   Status s = save_checkpoint("/ckpt", {.step = 30, .state = j}, t);
//   auto c = open_checkpoint("/ckpt");   c->read("wte.weight", dst, 2 * n);
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"

namespace zs::exec {

struct CheckpointTensor {
  std::string name;
  std::string dtype;  // "bf16", "fp16", "fp32"
  int64_t numel = 0;
  int64_t bytes = 0;
  std::function<core::Status(void* dst)> fill;  // writes `bytes` bytes into dst (host memory)
};

struct CheckpointInfo {
  int64_t step = 0;
  nlohmann::json state = nlohmann::json::object();  // scalar training state, owned by the engine
};

struct CheckpointOptions {
  int keep = 2;       // step folders kept (the newest ones)
  bool fsync = true;  // off only for tests that measure nothing durable
};

core::Status save_checkpoint(const std::string& dir, const CheckpointInfo& info,
                             const std::vector<CheckpointTensor>& tensors, const CheckpointOptions& o = {});

class Checkpoint {
 public:
  const std::string& path() const { return path_; }  // the step folder
  const CheckpointInfo& info() const { return info_; }
  const std::string& note() const { return note_; }  // why an older step was loaded, if one was
  bool has(const std::string& name) const { return index_.count(name) > 0; }
  int64_t bytes_of(const std::string& name) const;
  // Reads a tensor into dst (`bytes` must match) and verifies its checksum.
  core::Status read(const std::string& name, void* dst, int64_t bytes) const;

 private:
  friend core::Result<Checkpoint> open_checkpoint(const std::string& dir);
  friend core::Result<Checkpoint> open_step_folder(const std::string& folder);
  struct Entry {
    int64_t offset = 0, bytes = 0;
    uint32_t crc = 0;
  };
  std::string path_, note_;
  CheckpointInfo info_;
  std::map<std::string, Entry> index_;
};

// The checkpoint `latest` names, or the newest intact step folder; every tensor's checksum is verified.
core::Result<Checkpoint> open_checkpoint(const std::string& dir);
core::Result<Checkpoint> open_step_folder(const std::string& folder);

}  // namespace zs::exec
