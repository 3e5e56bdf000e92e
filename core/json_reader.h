// Strict JSON reading with error paths: every message names the file, the JSON path, the bad value and
// what is allowed, and unknown keys are rejected with the nearest valid key (DeepSpeed's extra="forbid").
//   ObjectReader r(json, "configs/deepspeed/z3.json", "zero_optimization");
//   int stage = r.integer("stage", 0, 0, 3);   // default 0, range [0,3]
//   Status s = r.finish();                     // first error, or the first unknown key
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace zs::core {

using Json = nlohmann::json;

// Parses a file; a syntax error reads "FILE:LINE:COL: malformed JSON: ...". A missing file is bad input.
Result<Json> read_json_file(const std::string& path);
// Same for text already in memory; `source` stands in for the file name in messages.
Result<Json> parse_json_text(const std::string& text, const std::string& source);

// Writes `text` to `path` atomically (temp file in the same folder, fsync, rename).
Status write_file_atomic(const std::string& path, const std::string& text);

// The candidate closest to `word` by edit distance, or "" when nothing is reasonably close.
std::string nearest_word(const std::string& word, const std::vector<std::string>& candidates);

// Reads one JSON object. Getters return the value (or the default) and record the first error; children
// share the parent's error slot, so one finish() at the top reports the first problem anywhere.
class ObjectReader {
 public:
  // `path` is the object's JSON path ("" for the root). A non-object records an error.
  ObjectReader(const Json& j, std::string file, std::string path);

  const std::string& file() const { return n_->file; }
  const std::string& path() const { return n_->path; }
  std::string key_path(const std::string& key) const;  // "zero_optimization.stage"

  // A key is "present" under any of its names (name first, then aliases); all names count as known.
  bool has(std::initializer_list<const char*> names) const;
  bool has(const char* name) const { return has({name}); }
  bool is_auto(const char* name) const;  // value is the string "auto"
  const Json* raw(std::initializer_list<const char*> names);  // marks known; nullptr when absent

  // Integers accept whole-valued numbers written as floats (5e8), as pydantic does.
  int64_t integer(std::initializer_list<const char*> names, int64_t dflt, int64_t min, int64_t max);
  std::optional<int64_t> opt_integer(std::initializer_list<const char*> names, int64_t min, int64_t max);
  double number(std::initializer_list<const char*> names, double dflt, double min, double max);
  std::optional<double> opt_number(std::initializer_list<const char*> names, double min, double max);
  bool boolean(std::initializer_list<const char*> names, bool dflt);
  std::optional<bool> opt_boolean(std::initializer_list<const char*> names);
  std::string string(std::initializer_list<const char*> names, const std::string& dflt);
  std::optional<std::string> opt_string(std::initializer_list<const char*> names);
  // A string that must be one of `allowed`; the message lists them.
  std::string choice(std::initializer_list<const char*> names, const std::string& dflt,
                     const std::vector<std::string>& allowed);
  // Required variants: a missing key is an error ("missing required key").
  int64_t req_integer(const char* name, int64_t min, int64_t max);
  double req_number(const char* name, double min, double max);
  bool req_boolean(const char* name);
  std::string req_string(const char* name);
  std::string req_choice(const char* name, const std::vector<std::string>& allowed);

  // Child object; absent → an empty reader with `present() == false`.
  ObjectReader object(std::initializer_list<const char*> names);
  ObjectReader req_object(const char* name);
  bool present() const { return n_->present; }

  // Declares keys as known without reading them (accepted and ignored, e.g. keys of other tools).
  void accept(std::initializer_list<const char*> names);
  // Keys present in the object but never read or accepted.
  std::vector<std::string> unknown_keys() const;
  // For blocks DeepSpeed reads key by key (get_scalar_param), where other keys are ignored, not refused: each key
  // present but never read or accepted, marked accepted, with the nearest known key ("" when none is close).
  struct IgnoredKey {
    std::string key, nearest;
  };
  std::vector<IgnoredKey> accept_unknown();

  // Records an error of the caller's own (cross-field checks). Keeps the first one.
  void fail(const std::string& key, const std::string& what);
  void fail_message(const std::string& message);
  bool failed() const { return n_->error->has_value(); }

  // Checks this object and every child created from it for unknown keys; returns the first error.
  Status finish();

 private:
  // Readers are cheap handles: copies share one node, so keys read through a copy count as known.
  struct Node {
    const Json* j = nullptr;
    std::string file, path;
    bool present = false;
    std::set<std::string> known;
    std::vector<std::shared_ptr<Node>> children;
    std::shared_ptr<std::optional<Error>> error;  // shared by the whole tree
  };
  explicit ObjectReader(std::shared_ptr<Node> n) : n_(std::move(n)) {}
  ObjectReader child(const Json* j, const std::string& key);
  const Json* find(std::initializer_list<const char*> names, std::string* used);
  void check_unknown(const Node& n);

  std::shared_ptr<Node> n_;
};

}  // namespace zs::core
