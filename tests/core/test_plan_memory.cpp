// The memory ledger (issue 3, Must show 3): plan peaks equal `fit`'s per tier for every shipped model ×
// hardware × config; an infeasible plan names the op where a tier overflows.
#include <cstdio>

#include "core/memory.h"
#include "core/paths.h"
#include "tests/core/test_plan_helpers.h"

using namespace plan_test;

// Every shipped combination as shipped, and with activation checkpointing forced on one hardware profile (the
// random property test covers checkpointing variants on the others).
TEST_CASE("plan peaks equal fit's per tier for every shipped model x hardware x config", "[plan][memory]") {
  double worst = 0;
  std::string worst_case;
  int n = 0;
  for (const auto& mp : shipped_inputs(InputKind::model)) {
    auto m = load_model_any(mp);
    REQUIRE(m.ok());
    for (const auto& hp : shipped_inputs(InputKind::hardware)) {
      auto h = load_hardware_file(hp);
      REQUIRE(h.ok());
      for (const auto& cp : shipped_inputs(InputKind::deepspeed)) {
        for (bool ckpt : {false, true}) {
          if (ckpt && hp.find("dgx-a100") == std::string::npos) continue;
          RunSettings run;
          run.gpus_per_node = h->gpus_per_node;
          run.seq_len = m->max_seq_len;
          run.hidden = m->hidden;
          run.checkpoint_activations = ckpt;
          auto s = load_ds_config(cp, run);
          REQUIRE(s.ok());
          const Plan p = make_plan(*m, *h, *s);
          const MemoryReport r = memory_model(*m, *h, *s);
          ++n;
          for (Tier t : kTiers) {
            const auto i = static_cast<size_t>(t);
            const double fit = static_cast<double>(r.tier(t).required_bytes);
            const double plan = static_cast<double>(p.peak_bytes[i]);
            const double err = fit > 0 ? std::abs(plan - fit) / fit : plan;
            if (err > worst) {
              worst = err;
              worst_case = mp + " " + hp + " " + cp + " " + to_string(t);
            }
            INFO(mp << " " << hp << " " << cp << (ckpt ? " ckpt " : " ") << to_string(t));
            CHECK(plan == Approx(fit).epsilon(0.01));
          }
          CHECK(p.feasible == r.fits);
        }
      }
    }
  }
  CHECK(n >= 700);
  std::printf("plan vs fit: %d combinations, worst relative difference %.2e %s\n", n, worst, worst_case.c_str());
}

TEST_CASE("the ledger is the running sum of the ops' deltas; peaks sit on an op", "[plan][memory]") {
  ModelSpec m = model("gpt2-1.5b");
  Plan p = make_plan(m, hardware("dgx-a100-80gb"),
                     strategy(R"({"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 2,
                       "bf16": {"enabled": true}, "zero_optimization": {"stage": 3,
                       "offload_optimizer": {"device": "cpu"}}})", m, 8, 1, true, 1024));
  std::array<int64_t, 3> run{};
  for (size_t i = 0; i < p.ops.size(); ++i)
    for (size_t t = 0; t < 3; ++t) {
      run[t] += p.ops[i].mem_delta[t];
      REQUIRE(p.ledger[i][t] == run[t]);
    }
  REQUIRE(p.peak_op[0] >= 0);
  CHECK(p.static_bytes[0] + p.ledger[static_cast<size_t>(p.peak_op[0])][0] == p.peak_bytes[0]);
  // The GPU peaks in backward, where activations, gathered parameters and full gradients meet.
  CHECK(p.ops[static_cast<size_t>(p.peak_op[0])].phase == Phase::backward);
  // The framework's fixed bytes within static_bytes: fit's CUDA context and allocator reserve on the GPU, the
  // Python processes on the host; none in a plan with the engine's options (no framework).
  const auto s = strategy(R"({"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 2,
                       "bf16": {"enabled": true}, "zero_optimization": {"stage": 3,
                       "offload_optimizer": {"device": "cpu"}}})",
                          m, 8, 1, true, 1024);
  const MemoryReport r = memory_model(m, hardware("dgx-a100-80gb"), s);
  CHECK(p.overhead_bytes[0] == r.tier(Tier::gpu).item("cuda_context") + r.tier(Tier::gpu).item("allocator_reserve"));
  CHECK(p.overhead_bytes[0] > int64_t{1} << 30);
  CHECK(p.overhead_bytes[1] == r.tier(Tier::cpu).item("host_process"));
  CHECK(p.overhead_bytes[1] == 8 * (int64_t{3} << 30));  // per node: 3 GiB for each of its 8 ranks
  CHECK(p.overhead_bytes[2] == 0);
  PlanOptions bare;
  bare.memory.cuda_context_GiB = bare.memory.allocator_reserve_frac = bare.memory.host_process_GiB = 0;
  const Plan q = make_plan(m, hardware("dgx-a100-80gb"), s, bare);
  CHECK(q.overhead_bytes == std::array<int64_t, 3>{0, 0, 0});
  CHECK(q.static_bytes[0] == p.static_bytes[0] - p.overhead_bytes[0]);
}

TEST_CASE("an infeasible plan names the op where a tier overflows", "[plan][memory]") {
  ModelSpec m = model("gpt2-1.5b");
  Hardware h = hardware("rtx4090-workstation");
  SECTION("activations overflow the GPU during forward") {
    Strategy s = strategy(R"({"train_micro_batch_size_per_gpu": 8, "fp16": {"enabled": true},
      "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}})", m, 1, 1, false, 1024);
    Plan p = make_plan(m, h, s);
    REQUIRE_FALSE(p.feasible);
    REQUIRE(p.overflow_op >= 0);
    const auto k = static_cast<size_t>(p.overflow_op);
    CHECK(p.static_bytes[0] + p.ledger[k][0] > p.capacity_bytes[0]);
    if (k > 0) CHECK(p.static_bytes[0] + p.ledger[k - 1][0] <= p.capacity_bytes[0]);
    CHECK(p.ops[k].phase == Phase::forward);
    CHECK(p.infeasible_reason.find("gpu overflows at op " + std::to_string(k) + " (forward layer") == 0);
    CHECK(p.infeasible_reason.find("has 24.0 GiB") != std::string::npos);
    CHECK_FALSE(memory_model(m, h, s).fits);
  }
  SECTION("model states alone overflow before the first op") {
    Plan p = make_plan(m, h, strategy(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}})", m, 1));
    REQUIRE_FALSE(p.feasible);
    CHECK(p.overflow_op == -1);
    CHECK(p.infeasible_reason.find("gpu overflows before the first op") == 0);
  }
  SECTION("a config DeepSpeed refuses is infeasible with its reason") {
    ModelSpec big = model("gpt-100b");
    Plan p = make_plan(big, hardware("dgx2"), strategy(R"({"train_micro_batch_size_per_gpu": 1,
      "bf16": {"enabled": true}, "zero_optimization": {"stage": 3, "offload_param": {"device": "nvme",
      "nvme_path": "/n", "buffer_size": 1e6}, "offload_optimizer": {"device": "nvme", "nvme_path": "/n"}}})", big, 1));
    REQUIRE_FALSE(p.feasible);
    CHECK(p.infeasible_reason.find("buffer_size") != std::string::npos);
  }
}

TEST_CASE("cpu_checkpointing: checkpoints leave the GPU in forward and return for the recompute", "[plan][memory]") {
  ModelSpec m = model("gpt2-355m");
  Hardware h = hardware("dgx-a100-80gb");
  Strategy s = strategy(R"({"train_micro_batch_size_per_gpu": 4, "bf16": {"enabled": true},
    "activation_checkpointing": {"cpu_checkpointing": true},
    "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}})", m, 2, 1, true, 1024);
  Plan p = make_plan(m, h, s);
  const MemoryReport r = memory_model(m, h, s);
  const int64_t ckpt = r.activations.per_layer_checkpoint;
  int d2h = 0, h2d = 0;
  for (const auto& op : p.ops) {
    if (op.tensor < 0 || p.tensors[static_cast<size_t>(op.tensor)].kind != TensorKind::activation) continue;
    if (op.kind != OpKind::d2h && op.kind != OpKind::h2d) continue;
    ++(op.kind == OpKind::d2h ? d2h : h2d);
    CHECK(op.bytes == ckpt);
  }
  CHECK(d2h == m.layers);
  CHECK(h2d == m.layers);
  // The host peak holds every checkpoint of both local ranks, as fit's activation_checkpoints item says.
  CHECK(p.peak_bytes[1] == r.tier(Tier::cpu).required_bytes);
  CHECK(r.tier(Tier::cpu).item("activation_checkpoints") == 2 * m.layers * ckpt);
  CHECK(p.ledger.back()[1] == 0);
}
