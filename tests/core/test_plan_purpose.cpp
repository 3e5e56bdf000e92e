// Op::purpose: the scheduler names what every op is for, and the name agrees with the op's kind, stream, phase and
// tensor kind. The engine dispatches on it (exec/engine_ops.cpp run_op), so a wrong or missing purpose is a wrong
// handler.
#include "tests/core/test_plan_helpers.h"

#include <map>
#include <optional>
#include <set>
#include <tuple>

using namespace plan_test;

namespace {

using TK = TensorKind;

// What an op of a purpose may look like. `tensors` empty: the op covers no tensor (tensor −1).
struct Shape {
  std::set<OpKind> kinds;
  std::set<Stream> streams;
  std::set<Phase> phases;
  std::set<TK> tensors;
  bool no_tensor = false;  // tensor −1 allowed (alone, or besides `tensors`)
};

const std::map<Purpose, Shape>& shapes() {
  const std::set<Phase> fb = {Phase::forward, Phase::backward};
  const std::set<Phase> bwd = {Phase::backward}, opt = {Phase::optimizer};
  const std::set<TK> states = {TK::fp32_master, TK::adam_m, TK::adam_v};
  static const std::map<Purpose, Shape> m = {
      {Purpose::compute, {{OpKind::forward, OpKind::backward, OpKind::recompute}, {Stream::compute}, fb,
                          {TK::lp_param}, true}},
      {Purpose::checkpoint_out, {{OpKind::d2h}, {Stream::d2h}, {Phase::forward}, {TK::activation}}},
      {Purpose::checkpoint_in, {{OpKind::h2d}, {Stream::h2d}, bwd, {TK::activation}}},
      {Purpose::release_activations, {{OpKind::release}, {Stream::compute}, fb, {TK::activation}}},
      {Purpose::read_params, {{OpKind::nvme_read}, {Stream::nvme_read}, fb, {TK::lp_param}}},
      {Purpose::upload_params, {{OpKind::h2d}, {Stream::h2d}, fb, {TK::lp_param}}},
      {Purpose::gather_params, {{OpKind::allgather}, {Stream::comm, Stream::compute}, fb, {TK::lp_param}}},
      {Purpose::release_params, {{OpKind::release}, {Stream::compute}, fb, {TK::lp_param}}},
      {Purpose::release_grads, {{OpKind::release}, {Stream::compute}, bwd, {TK::lp_grad}}},
      {Purpose::reduce_grads, {{OpKind::reduce_scatter}, {Stream::comm, Stream::compute}, bwd, {TK::lp_grad}}},
      {Purpose::alloc_allreduce_bucket, {{OpKind::alloc}, {Stream::comm}, bwd, {}, true}},
      {Purpose::allreduce_grads, {{OpKind::allreduce}, {Stream::comm, Stream::compute}, bwd, {TK::lp_grad}}},
      {Purpose::release_allreduce_bucket, {{OpKind::release}, {Stream::comm}, bwd, {}, true}},
      {Purpose::alloc_reduce_temporaries, {{OpKind::alloc}, {Stream::compute}, bwd, {}, true}},
      {Purpose::release_reduce_temporaries, {{OpKind::release}, {Stream::compute}, bwd, {}, true}},
      {Purpose::offload_grads, {{OpKind::d2h, OpKind::h2d}, {Stream::d2h, Stream::h2d}, bwd, {TK::lp_grad}}},
      {Purpose::fp32_grads_to_host, {{OpKind::d2h}, {Stream::d2h, Stream::compute}, bwd, {TK::fp32_grad}}},
      {Purpose::cast_fp32_grads, {{OpKind::cast_cpu}, {Stream::compute}, bwd, {TK::fp32_grad}}},
      {Purpose::write_grads, {{OpKind::nvme_write}, {Stream::nvme_write}, bwd, {TK::fp32_grad}}},
      {Purpose::grad_norm, {{OpKind::allreduce}, {Stream::comm}, opt, {}, true}},
      {Purpose::swap_state_in, {{OpKind::nvme_read}, {Stream::nvme_read}, opt,
                                {TK::fp32_master, TK::adam_m, TK::adam_v, TK::fp32_grad}}},
      {Purpose::swap_state_out, {{OpKind::nvme_write}, {Stream::nvme_write}, opt, states}},
      {Purpose::alloc_fp32_grads, {{OpKind::alloc}, {Stream::compute}, opt, {TK::fp32_grad}}},
      {Purpose::release_fp32_grads, {{OpKind::release}, {Stream::compute}, opt, {TK::fp32_grad}}},
      {Purpose::adam, {{OpKind::adam_cpu, OpKind::adam_gpu}, {Stream::cpu_adam, Stream::compute}, opt,
                       {TK::fp32_master}}},
      {Purpose::cast_params, {{OpKind::cast_cpu}, {Stream::cpu_adam}, opt, {TK::lp_param}}},
      {Purpose::upload_updated_params, {{OpKind::h2d}, {Stream::h2d}, opt, {TK::lp_param}}},
      {Purpose::updated_params_to_host, {{OpKind::d2h}, {Stream::d2h}, opt, {TK::lp_param}}},
      {Purpose::write_updated_params, {{OpKind::nvme_write}, {Stream::nvme_write}, opt, {TK::lp_param}}},
      {Purpose::gather_updated_params, {{OpKind::allgather}, {Stream::comm}, opt, {TK::lp_param}}},
      {Purpose::gather_persistent_params, {{OpKind::allgather}, {Stream::comm}, opt, {}, true}},
  };
  return m;
}

struct Case {
  std::string label;
  Plan plan;
};

Strategy shipped(const std::string& name, const ModelSpec& m, int64_t gpus, bool ckpt) {
  RunSettings run;
  run.gpus_per_node = gpus;
  run.seq_len = m.max_seq_len;
  run.hidden = m.hidden;
  run.checkpoint_activations = ckpt;
  auto s = load_strategy(name, run);
  INFO(name);
  REQUIRE(s.ok());
  return *s;
}

Strategy at_version(const std::string& json, const ModelSpec& m, const DeepSpeedVersion& v) {
  RunSettings run;
  run.gpus_per_node = 4;
  run.seq_len = 1024;
  run.hidden = m.hidden;
  run.deepspeed_version = v;
  auto s = parse_ds_config_text(json, "inline.json", run);
  if (!s.ok()) FAIL(s.error().message);
  return *s;
}

// Every shipped config with both models (with and without checkpointing), the dpu and overlap schedules on the
// offload configs, and the corners the shipped files miss: stage 1-2 without reduce_scatter, cpu_checkpointing,
// ZeRO-3 with GPU Adam, DeepSpeed before v0.19.5's blocking fp32 gradient copy.
std::vector<Case> cases() {
  const Hardware hw = hardware("dgx-a100-80gb");
  std::vector<Case> out;
  auto add = [&](const std::string& label, const ModelSpec& m, const Strategy& s, Schedule sch) {
    PlanOptions o;
    o.schedule = sch;
    out.push_back({label + " " + to_string(sch), make_plan(m, hw, s, o)});
  };
  const std::vector<std::string> configs = {"zero0",     "zero1",           "zero2", "zero2-offload-cpu",
                                            "zero3",     "zero3-hf-auto",   "zero3-offload-cpu",
                                            "zero3-offload-nvme"};
  for (const char* model_name : {"gpt2-124m", "gpt2-1.5b"}) {
    const ModelSpec m = model(model_name);
    for (const auto& c : configs) {
      for (bool ckpt : {false, true}) {
        const std::string label = std::string(model_name) + " " + c + (ckpt ? " ckpt" : "");
        const Strategy s = shipped(c, m, 4, ckpt);
        add(label, m, s, Schedule::deepspeed);
        if (c.find("offload") != std::string::npos) {
          add(label, m, s, Schedule::overlap);
          add(label, m, s, Schedule::dpu);
        }
      }
    }
  }
  const ModelSpec m = model("gpt2-124m");
  const std::string ga2 =
      R"("train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 2, "bf16": {"enabled": true})";
  add("stage 1 all-reduce", m,
      strategy("{" + ga2 + R"(, "zero_optimization": {"stage": 1, "reduce_scatter": false}})", m, 4),
      Schedule::deepspeed);
  add("stage 2 all-reduce offload", m,
      strategy("{" + ga2 + R"(, "zero_optimization": {"stage": 2, "reduce_scatter": false,
               "offload_optimizer": {"device": "cpu"}}})", m, 4),
      Schedule::deepspeed);
  const std::string nvme = R"({"device": "nvme", "nvme_path": "/nvme"})";
  const std::string nvme_params = R"({"device": "nvme", "nvme_path": "/nvme", "max_in_cpu": 0})";
  add("cpu_checkpointing", m,
      strategy("{" + ga2 + R"(, "zero_optimization": {"stage": 3, "offload_param": )" + nvme_params +
                   R"(, "offload_optimizer": )" + nvme +
                   R"(}, "activation_checkpointing": {"cpu_checkpointing": true}})",
               m, 4, 1, true),
      Schedule::deepspeed);
  add("stage 3 GPU Adam", m, strategy("{" + ga2 + R"(, "zero_optimization": {"stage": 3}})", m, 4),
      Schedule::deepspeed);
  add("stage 3 GPU Adam, params on NVMe", m,
      strategy("{" + ga2 + R"(, "zero_optimization": {"stage": 3, "offload_param": )" + nvme_params + "}}", m, 4),
      Schedule::deepspeed);
  add("v0.13.3 blocking fp32 grads", m,
      at_version(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
          "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "pin_memory": true}}})",
                 m, {0, 13, 3}),
      Schedule::deepspeed);
  return out;
}

std::string describe(const Plan& p, const Op& op) {
  const std::string tk = op.tensor < 0 ? "none" : to_string(p.tensors[static_cast<size_t>(op.tensor)].kind);
  return "op " + std::to_string(op.id) + ": " + to_string(op.purpose) + " is " + to_string(op.kind) + " on " +
         to_string(op.stream) + " in " + to_string(op.phase) + " over " + tk;
}

}  // namespace

TEST_CASE("every op's purpose agrees with its kind, stream, phase and tensor kind", "[plan][purpose]") {
  std::set<Purpose> seen;
  // The purpose is a function of (kind, stream, phase, tensor kind) in every plan: one purpose per combination.
  std::map<std::tuple<OpKind, Stream, Phase, int>, Purpose> by_shape;
  for (const Case& c : cases()) {
    INFO(c.label);
    REQUIRE(!c.plan.ops.empty());
    for (const Op& op : c.plan.ops) {
      INFO(describe(c.plan, op));
      REQUIRE(op.purpose != Purpose::unset);
      const auto it = shapes().find(op.purpose);
      REQUIRE(it != shapes().end());
      const Shape& sh = it->second;
      CHECK(sh.kinds.count(op.kind) == 1);
      CHECK(sh.streams.count(op.stream) == 1);
      CHECK(sh.phases.count(op.phase) == 1);
      if (op.tensor < 0) {
        CHECK(sh.no_tensor);
      } else {
        CHECK(sh.tensors.count(c.plan.tensors[static_cast<size_t>(op.tensor)].kind) == 1);
      }
      // Directions that the kind alone does not pin down.
      if (op.purpose == Purpose::offload_grads)
        CHECK(op.stream == (op.kind == OpKind::d2h ? Stream::d2h : Stream::h2d));
      if (op.purpose == Purpose::adam)
        CHECK(op.stream == (op.kind == OpKind::adam_cpu ? Stream::cpu_adam : Stream::compute));
      if (op.purpose == Purpose::fp32_grads_to_host && op.stream == Stream::compute) CHECK(op.pageable_host);
      const int tk = op.tensor < 0 ? -1 : static_cast<int>(c.plan.tensors[static_cast<size_t>(op.tensor)].kind);
      const auto key = std::make_tuple(op.kind, op.stream, op.phase, tk);
      const auto [at, fresh] = by_shape.emplace(key, op.purpose);
      if (!fresh) CHECK(to_string(at->second) == to_string(op.purpose));
      seen.insert(op.purpose);
    }
  }
  // The sweep reaches every purpose, so each row of the table above is exercised.
  for (const auto& [p, sh] : shapes()) {
    INFO(to_string(p));
    CHECK(seen.count(p) == 1);
  }
}

TEST_CASE("a default op has no purpose; every purpose has a name", "[plan][purpose]") {
  CHECK(Op{}.purpose == Purpose::unset);
  CHECK(to_string(Purpose::unset) == "unset");
  CHECK(shapes().size() == static_cast<size_t>(Purpose::gather_persistent_params));  // all but unset
  for (const auto& [p, sh] : shapes()) CHECK(to_string(p) != "?");
}
