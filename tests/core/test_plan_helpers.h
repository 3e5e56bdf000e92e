// Shared by tests/core/test_plan*.cpp: inputs by name or inline JSON, and plan queries (ancestry through deps,
// bytes by kind and tensor kind).
#pragma once

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/hardware.h"
#include "core/model.h"
#include "core/plan.h"
#include "core/strategy.h"

namespace plan_test {

using namespace zs::core;

inline ModelSpec model(const std::string& name) {
  auto m = load_model(name);
  REQUIRE(m.ok());
  return *m;
}
inline Hardware hardware(const std::string& name) {
  auto h = load_hardware(name);
  REQUIRE(h.ok());
  return *h;
}
inline Strategy strategy(const std::string& json, const ModelSpec& m, int64_t gpus, int64_t nodes = 1,
                         bool ckpt = false, int64_t seq_len = 0) {
  RunSettings run;
  run.nodes = nodes;
  run.gpus_per_node = gpus;
  run.seq_len = seq_len > 0 ? seq_len : m.max_seq_len;
  run.hidden = m.hidden;
  run.checkpoint_activations = ckpt;
  auto s = parse_ds_config_text(json, "inline.json", run);
  INFO(json);
  if (!s.ok()) FAIL(s.error().message);
  return *s;
}

// Is `a` reachable from `b` through deps (a is b or an ancestor of b)? Deps point backwards, so the search
// never looks below a.
class Ancestry {
 public:
  explicit Ancestry(const Plan& p) : p_(p), mark_(p.ops.size(), 0) {}
  bool reaches(uint32_t a, uint32_t b) {
    if (a == b) return true;
    if (a > b) return false;
    ++epoch_;
    if (epoch_ == 0) {
      std::fill(mark_.begin(), mark_.end(), 0);
      epoch_ = 1;
    }
    stack_.assign(1, b);
    while (!stack_.empty()) {
      const uint32_t x = stack_.back();
      stack_.pop_back();
      for (uint32_t d : p_.ops[x].deps) {
        if (d == a) return true;
        if (d < a || mark_[d] == epoch_) continue;
        mark_[d] = epoch_;
        stack_.push_back(d);
      }
    }
    return false;
  }

 private:
  const Plan& p_;
  std::vector<uint32_t> mark_;
  std::vector<uint32_t> stack_;
  uint32_t epoch_ = 0;
};

// A shipped ds_config (configs/deepspeed) by name.
inline Strategy shipped_strategy(const std::string& name, const ModelSpec& m, int64_t gpus) {
  RunSettings run;
  run.gpus_per_node = gpus;
  run.seq_len = m.max_seq_len;
  run.hidden = m.hidden;
  auto s = load_strategy(name, run);
  if (!s.ok()) FAIL(s.error().message);
  return *s;
}

inline bool covers(const Op& op, int32_t tensor) {
  return op.tensor >= 0 && tensor >= op.tensor && tensor < op.tensor + op.tensor_count;
}
inline TensorKind tensor_kind(const Plan& p, const Op& op) {
  return op.tensor >= 0 ? p.tensors[static_cast<size_t>(op.tensor)].kind : TensorKind::activation;
}

// Sum of op bytes of `kind` whose first tensor is of `tk` (optionally only in `phase`).
inline int64_t bytes_of(const Plan& p, OpKind kind, TensorKind tk, int phase = -1) {
  int64_t b = 0;
  for (const auto& op : p.ops)
    if (op.kind == kind && op.tensor >= 0 && tensor_kind(p, op) == tk &&
        (phase < 0 || static_cast<int>(op.phase) == phase))
      b += op.bytes;
  return b;
}
inline int64_t bytes_of(const Plan& p, OpKind kind) {
  int64_t b = 0;
  for (const auto& op : p.ops)
    if (op.kind == kind) b += op.bytes;
  return b;
}

// Number of lp_param tensors (parameters) in the plan: tensors are kind-major, lp_param first.
inline size_t param_count(const Plan& p) {
  size_t n = 0;
  while (n < p.tensors.size() && p.tensors[n].kind == TensorKind::lp_param) ++n;
  return n;
}

}  // namespace plan_test
