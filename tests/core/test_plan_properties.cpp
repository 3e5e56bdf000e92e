// Properties every plan holds, over many random models, hardware and DeepSpeed configs (issue 3, Must show 1):
// parameters resident on the GPU before each compute op through its deps; fetched tensors released after their
// last use unless persistent; no ledger below zero; every gradient partition reaches its optimizer before its
// Adam op; deps acyclic; byte-identical determinism.
#include <random>
#include <sstream>

#include "core/paths.h"
#include "tests/core/test_plan_helpers.h"

using namespace plan_test;

namespace {

struct Case {
  ModelSpec m;
  Hardware h;
  Strategy s;
  Schedule schedule = Schedule::deepspeed;
  std::string text;  // for failure messages
};

ModelSpec random_model(std::mt19937& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  ModelSpec m;
  m.name = "random";
  m.arch = pick(0, 1) ? Arch::llama : Arch::gpt;
  m.layers = pick(1, 4);
  m.heads = 1 << pick(0, 3);
  m.head_dim = 8 * pick(1, 4);
  m.hidden = m.heads * m.head_dim;
  m.kv_heads = m.arch == Arch::llama ? m.heads >> pick(0, 2) : m.heads;
  if (m.kv_heads < 1) m.kv_heads = 1;
  m.ffn_hidden = m.hidden * pick(2, 4);
  m.vocab = pick(50, 700);
  m.max_seq_len = 8 * pick(2, 16);
  m.tied_embeddings = pick(0, 1);
  m.activation = m.arch == Arch::llama ? Activation::swiglu : Activation::gelu;
  m.norm = m.arch == Arch::llama ? Norm::rmsnorm : Norm::layernorm;
  m.norm_bias = m.norm == Norm::layernorm;
  m.position = m.arch == Arch::llama ? Position::rope : Position::learned;
  m.qkv_bias = pick(0, 1);
  m.mlp_bias = m.arch == Arch::gpt;
  m.attn_out_bias = m.arch == Arch::gpt;
  return m;
}

Case random_case(std::mt19937& rng, const std::vector<std::string>& hws) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Case c;
  c.m = random_model(rng);
  REQUIRE(validate_model(c.m, "random").ok());
  c.h = hardware(hws[static_cast<size_t>(pick(0, static_cast<int>(hws.size()) - 1))]);
  const int stage = pick(0, 3);
  const char* devs[] = {"none", "cpu", "nvme"};
  const std::string opt = stage >= 1 ? devs[pick(0, 2)] : "none";
  const std::string par = stage == 3 ? devs[pick(0, 2)] : "none";
  const bool pr = pick(0, 1), pw = pick(0, 1);
  const double ratio = (stage == 3 && opt != "none" && pick(0, 2) == 0) ? 0.25 * pick(1, 3) : 1.0;
  const int64_t ga = pick(1, 3);
  std::ostringstream j;
  j << R"({"train_micro_batch_size_per_gpu": )" << pick(1, 2) << R"(, "gradient_accumulation_steps": )" << ga;
  j << (pick(0, 1) ? R"(, "bf16": {"enabled": true})" : R"(, "fp16": {"enabled": true})");
  j << R"(, "zero_optimization": {"stage": )" << stage;
  j << R"(, "reduce_bucket_size": )" << 200 * pick(1, 50);
  j << R"(, "allgather_bucket_size": )" << 1000 * pick(1, 50);
  if (stage >= 1 && opt != "none") {
    j << R"(, "offload_optimizer": {"device": ")" << opt << R"(", "nvme_path": "/nvme", "buffer_count": 12)";
    if (stage == 3) j << R"(, "pipeline_read": )" << (pr ? "true" : "false") << R"(, "pipeline_write": )" << (pw ? "true" : "false");
    if (ratio < 1.0) j << R"(, "ratio": )" << ratio;
    j << "}";
  }
  if (stage == 3) {
    if (par != "none")
      j << R"(, "offload_param": {"device": ")" << par << R"(", "nvme_path": "/nvme", "buffer_size": 1e9, "max_in_cpu": )"
        << 100 * pick(0, 30) << "}";
    j << R"(, "sub_group_size": )" << 500 * pick(1, 40);
    j << R"(, "stage3_prefetch_bucket_size": )" << 300 * pick(0, 40);
    j << R"(, "stage3_max_live_parameters": )" << 2000 * pick(1, 50);
    j << R"(, "stage3_max_reuse_distance": )" << 1000 * pick(0, 20);
    j << R"(, "stage3_param_persistence_threshold": )" << 10 * pick(0, 40);
  }
  j << "}";
  const bool ckpt = pick(0, 1);
  if (ckpt) {
    j << R"(, "activation_checkpointing": {"cpu_checkpointing": )" << (pick(0, 2) == 0 ? "true" : "false");
    if (pick(0, 1)) j << R"(, "number_checkpoints": )" << pick(1, static_cast<int>(c.m.layers));
    j << "}";
  }
  j << "}";
  c.text = j.str();
  const int64_t gpus = std::min<int64_t>(c.h.gpus_per_node, pick(1, 4));
  c.s = strategy(c.text, c.m, gpus, pick(1, 2), ckpt, 8 * pick(1, 2));
  c.schedule = static_cast<Schedule>(pick(0, 2));
  std::ostringstream d;
  d << to_string(c.m.arch) << " L" << c.m.layers << " h" << c.m.hidden << " a" << c.m.heads << "/" << c.m.kv_heads
    << " V" << c.m.vocab << (c.m.tied_embeddings ? " tied" : "") << " on " << c.h.name << " x" << c.s.world()
    << " schedule " << to_string(c.schedule) << ": " << c.text;
  c.text = d.str();
  return c;
}

// Returns the violated properties (empty when all hold).
std::vector<std::string> violations(const Plan& p, const Strategy& s) {
  std::vector<std::string> bad;
  auto fail = [&](const std::string& what) {
    if (bad.size() < 8) bad.push_back(what);
  };
  const size_t np = param_count(p);
  Ancestry anc(p);
  const int32_t lp0 = 0, grad0 = static_cast<int32_t>(np), master0 = static_cast<int32_t>(2 * np),
                grad32_0 = static_cast<int32_t>(5 * np);
  // Ids in order, deps strictly backwards (so the graph is acyclic and program order is topological).
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const Op& op = p.ops[i];
    if (op.id != i) fail("op " + std::to_string(i) + " has id " + std::to_string(op.id));
    for (uint32_t d : op.deps)
      if (d >= op.id) fail("op " + std::to_string(i) + " depends on later op " + std::to_string(d));
    if (op.bytes < 0 || op.elements < 0 || op.mem_bound_bytes < 0 || op.gemm_flops < 0) fail("negative size at op " + std::to_string(i));
    if ((op.kind == OpKind::allgather || op.kind == OpKind::reduce_scatter || op.kind == OpKind::allreduce) &&
        op.group_ranks != s.world())
      fail("collective " + std::to_string(i) + " over " + std::to_string(op.group_ranks) + " ranks");
  }
  // Ledger: running sums of the deltas, never below zero, back to zero at the end of the step (steady state).
  std::array<int64_t, 3> run{}, top{};
  for (size_t i = 0; i < p.ops.size(); ++i)
    for (size_t t = 0; t < 3; ++t) {
      run[t] += p.ops[i].mem_delta[t];
      top[t] = std::max(top[t], run[t]);
      if (p.ledger[i][t] != run[t]) fail("ledger disagrees with deltas at op " + std::to_string(i));
      if (run[t] < 0) fail("tier " + std::to_string(t) + " ledger negative after op " + std::to_string(i));
    }
  for (size_t t = 0; t < 3; ++t) {
    if (run[t] != 0) fail("tier " + std::to_string(t) + " ends the step at " + std::to_string(run[t]));
    if (p.peak_bytes[t] != std::max(p.static_bytes[t] + top[t], p.init_bytes[t])) fail("peak != static + ledger max");
  }
  // Residency (ZeRO-3): an lp tensor is resident between the all-gather that fetched it and its release.
  std::vector<int64_t> gathered(np, -1), last_use(np, -1);
  int32_t micro = 0;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const Op& op = p.ops[i];
    if (op.phase != Phase::optimizer && op.micro_step != micro) {
      for (size_t t = 0; t < np; ++t)
        if (gathered[t] >= 0) fail(p.tensors[t].name + " still gathered at the end of micro-step " + std::to_string(micro));
      micro = op.micro_step;
    }
    const bool lp_range = op.tensor >= lp0 && op.tensor < static_cast<int32_t>(np);
    if (op.kind == OpKind::allgather && op.phase != Phase::optimizer && lp_range) {
      for (int32_t t = op.tensor; t < op.tensor + op.tensor_count; ++t) {
        if (p.tensors[t].persistent) fail("persistent " + p.tensors[t].name + " fetched at op " + std::to_string(i));
        if (gathered[t] >= 0) fail(p.tensors[t].name + " fetched twice without release, op " + std::to_string(i));
        gathered[t] = static_cast<int64_t>(i);
        last_use[t] = -1;
      }
    } else if (op.kind == OpKind::release && lp_range) {
      for (int32_t t = op.tensor; t < op.tensor + op.tensor_count; ++t) {
        if (gathered[t] < 0) fail(p.tensors[t].name + " released while not gathered, op " + std::to_string(i));
        if (last_use[t] >= 0 && !anc.reaches(static_cast<uint32_t>(last_use[t]), op.id))
          fail(p.tensors[t].name + " released at op " + std::to_string(i) + " before its last use " +
               std::to_string(last_use[t]) + " completed");
        gathered[t] = -1;
      }
    } else if (op.kind == OpKind::forward || op.kind == OpKind::backward || op.kind == OpKind::recompute) {
      for (int32_t t = op.tensor; t >= 0 && t < op.tensor + op.tensor_count; ++t) {
        if (p.tensors[t].persistent || s.zero.stage < 3) continue;
        if (gathered[t] < 0)
          fail(p.tensors[t].name + " not resident at compute op " + std::to_string(i));
        else if (!anc.reaches(static_cast<uint32_t>(gathered[t]), op.id))
          fail("compute op " + std::to_string(i) + " does not wait for the fetch of " + p.tensors[t].name);
        last_use[t] = static_cast<int64_t>(i);
      }
    }
  }
  for (size_t t = 0; t < np; ++t)
    if (gathered[t] >= 0) fail(p.tensors[t].name + " never released");
  // Optimizer: every partition stepped exactly once, after its gradient arrived where that optimizer reads it.
  std::vector<int> stepped(np, 0);
  const bool dpu = p.schedule == Schedule::dpu;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const Op& a = p.ops[i];
    if (a.kind != OpKind::adam_cpu && a.kind != OpKind::adam_gpu) continue;
    for (int32_t t = a.tensor; t < a.tensor + a.tensor_count; ++t) {
      const int32_t prm = t - master0;
      ++stepped[static_cast<size_t>(prm)];
      const Tier tier = p.tensors[t].home;
      // The last op before the Adam op that touches this parameter's gradient (lp or fp32).
      int64_t last = -1;
      for (size_t k = 0; k < i; ++k) {
        const Op& op = p.ops[k];
        if (op.kind == OpKind::release || op.kind == OpKind::forward || op.kind == OpKind::backward) continue;
        if (covers(op, grad0 + prm) || covers(op, grad32_0 + prm)) last = static_cast<int64_t>(k);
      }
      if (dpu && a.kind == OpKind::adam_cpu) {
        // The step's own gradient lands after the Adam op that consumed the previous one.
        bool ordered = false;
        for (size_t k = i + 1; k < p.ops.size() && !ordered; ++k) {
          const Op& op = p.ops[k];
          if ((op.kind == OpKind::d2h || op.kind == OpKind::nvme_write) && covers(op, grad32_0 + prm))
            ordered = anc.reaches(a.id, op.id);
        }
        if (!ordered) fail("dpu: gradient of " + p.tensors[t].name + " may overwrite its buffer before Adam op " + std::to_string(i));
        continue;
      }
      if (last < 0) {
        fail("no gradient reaches the optimizer for " + p.tensors[t].name + " (Adam op " + std::to_string(i) + ")");
        continue;
      }
      const Op& d = p.ops[static_cast<size_t>(last)];
      if (tier == Tier::cpu && !(d.kind == OpKind::d2h && covers(d, grad32_0 + prm)))
        fail("CPU Adam op " + std::to_string(i) + " reads " + p.tensors[t].name + " without an fp32 grad D2H");
      if (tier == Tier::nvme && !(d.kind == OpKind::nvme_read && covers(d, grad32_0 + prm)))
        fail("NVMe group Adam op " + std::to_string(i) + " without a gradient swap-in");
      if (!anc.reaches(d.id, a.id))
        fail("Adam op " + std::to_string(i) + " does not wait for the gradient of " + p.tensors[t].name + " (op " +
             std::to_string(d.id) + ")");
    }
  }
  for (size_t t = 0; t < np; ++t)
    if (stepped[t] != 1) fail(p.tensors[t].name + " stepped " + std::to_string(stepped[t]) + " times");
  // Bytes per link direction are the sums of the ops.
  if (p.per_step.h2d != bytes_of(p, OpKind::h2d) || p.per_step.d2h != bytes_of(p, OpKind::d2h) ||
      p.per_step.nvme_read != bytes_of(p, OpKind::nvme_read) || p.per_step.nvme_write != bytes_of(p, OpKind::nvme_write))
    fail("per_step bytes disagree with the ops");
  return bad;
}

}  // namespace

TEST_CASE("plan properties hold over random models, hardware and configs", "[plan][property]") {
  std::mt19937 rng(20240611);
  std::vector<std::string> hws;
  for (const auto& f : shipped_inputs(InputKind::hardware)) hws.push_back(f);
  int stages[4] = {}, schedules[3] = {}, offloaded = 0, nvme = 0;
  for (int n = 0; n < 160; ++n) {
    Case c = random_case(rng, hws);
    PlanOptions o;
    o.schedule = c.schedule;
    const Plan p = make_plan(c.m, c.h, c.s, o);
    INFO("case " << n << ": " << c.text);
    const auto bad = violations(p, c.s);
    for (const auto& b : bad) UNSCOPED_INFO(b);
    CHECK(bad.empty());
    // The ledger's peaks are fit's (docs/PLAN.md, "Memory ledger").
    const MemoryReport r = memory_model(c.m, c.h, c.s);
    for (Tier t : kTiers)
      CHECK(static_cast<double>(p.peak_bytes[static_cast<size_t>(t)]) ==
            Approx(static_cast<double>(r.tier(t).required_bytes)).epsilon(0.01));
    // Same inputs, same plan, byte for byte.
    CHECK(plan_to_json(make_plan(c.m, c.h, c.s, o)) == plan_to_json(p));
    ++stages[c.s.zero.stage];
    ++schedules[static_cast<int>(c.schedule)];
    offloaded += c.s.zero.offload_optimizer.device != OffloadDevice::none;
    nvme += c.s.zero.offload_param.device == OffloadDevice::nvme || c.s.zero.offload_optimizer.device == OffloadDevice::nvme;
  }
  // The generator covers what it should.
  for (int k : stages) CHECK(k >= 20);
  for (int k : schedules) CHECK(k >= 30);
  CHECK(offloaded >= 40);
  CHECK(nvme >= 20);
}

TEST_CASE("plan properties hold for every shipped config on shipped models", "[plan][property]") {
  for (const char* mname : {"tiny", "gpt2-124m", "llama2-7b"}) {
    ModelSpec m = model(mname);
    Hardware h = hardware("dgx-a100-80gb");
    for (const auto& cp : shipped_inputs(InputKind::deepspeed)) {
      for (Schedule sc : {Schedule::deepspeed, Schedule::dpu, Schedule::overlap}) {
        RunSettings run;
        run.gpus_per_node = 8;
        run.seq_len = std::min<int64_t>(m.max_seq_len, 512);
        run.hidden = m.hidden;
        auto s = load_ds_config(cp, run);
        REQUIRE(s.ok());
        PlanOptions o;
        o.schedule = sc;
        const Plan p = make_plan(m, h, *s, o);
        INFO(mname << " " << cp << " " << to_string(sc));
        const auto bad = violations(p, *s);
        for (const auto& b : bad) UNSCOPED_INFO(b);
        CHECK(bad.empty());
      }
    }
  }
}

TEST_CASE("every compute op carries its module's role, recompute and the plan's JSON included", "[plan]") {
  ModelSpec m = model("gpt2-124m");
  Hardware h = hardware("dgx-a100-80gb");
  Strategy s = strategy(R"({"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 2,
    "bf16": {"enabled": true}, "zero_optimization": {"stage": 3}})",
                        m, 2, 1, true, 128);
  const Plan p = make_plan(m, h, s);
  const auto mods = module_table(m);
  std::vector<ModuleRole> fwd, bwd;
  int recompute = 0;
  for (const auto& op : p.ops) {
    const bool compute = op.kind == OpKind::forward || op.kind == OpKind::backward || op.kind == OpKind::recompute;
    if (!compute) {
      CHECK(op.role == ModuleRole::none);
      continue;
    }
    CHECK(op.role != ModuleRole::none);
    if (op.kind == OpKind::recompute) ++recompute;
    if (op.micro_step != 0) continue;
    if (op.kind == OpKind::forward) fwd.push_back(op.role);
    if (op.kind == OpKind::backward) bwd.insert(bwd.begin(), op.role);
  }
  CHECK(recompute > 0);
  REQUIRE(fwd.size() == mods.size());
  REQUIRE(bwd.size() == mods.size());
  for (size_t i = 0; i < mods.size(); ++i) {
    CHECK(fwd[i] == module_role(mods[i]));
    CHECK(bwd[i] == module_role(mods[i]));
  }
  const std::string j = plan_to_json(p);
  CHECK(j.find(R"("role":"attn_out")") != std::string::npos);
  CHECK(j.find(R"("role":"none")") == std::string::npos);
}

TEST_CASE("the property checker catches broken plans", "[plan][property]") {
  ModelSpec m = model("gpt2-124m");
  Hardware h = hardware("dgx-a100-80gb");
  Strategy s = strategy(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
    "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}, "offload_param": {"device": "cpu"},
      "stage3_max_reuse_distance": 0, "stage3_prefetch_bucket_size": 0, "reduce_bucket_size": 1e7}})", m, 4, 1,
    false, 128);
  const Plan good = make_plan(m, h, s);
  REQUIRE(violations(good, s).empty());
  auto first = [&](const Plan& p, OpKind k) {
    for (const auto& op : p.ops)
      if (op.kind == k && op.tensor >= 0) return op.id;
    FAIL("no op of that kind");
    return uint32_t{0};
  };
  SECTION("a compute op that does not wait for its fetch") {
    Plan p = good;
    for (auto& op : p.ops)
      if (op.kind == OpKind::forward && op.layer == 3 &&
          std::any_of(op.deps.begin(), op.deps.end(), [&](uint32_t d) { return p.ops[d].kind == OpKind::allgather; })) {
        op.deps.erase(std::remove_if(op.deps.begin(), op.deps.end(),
                                     [&](uint32_t d) { return p.ops[d].kind == OpKind::allgather; }),
                      op.deps.end());
        break;
      }
    CHECK_FALSE(violations(p, s).empty());
  }
  SECTION("a release that does not wait for the last use") {
    Plan p = good;
    p.ops[first(p, OpKind::release)].deps.clear();
    CHECK_FALSE(violations(p, s).empty());
  }
  SECTION("an Adam op that does not wait for its gradient") {
    Plan p = good;
    p.ops[first(p, OpKind::adam_cpu)].deps.clear();
    CHECK_FALSE(violations(p, s).empty());
  }
  SECTION("a gradient that never reaches the host") {
    Plan p = good;
    for (auto& op : p.ops)
      if (op.kind == OpKind::d2h && op.tensor >= 0 && p.tensors[op.tensor].kind == TensorKind::fp32_grad) op.tensor = -1;
    CHECK_FALSE(violations(p, s).empty());
  }
  SECTION("a leaked gathered parameter and a negative ledger") {
    Plan p = good;
    const uint32_t r = first(p, OpKind::release);
    p.ops[r].kind = OpKind::alloc;  // no longer releases: leak; and its negative delta now comes first
    p.ledger.clear();
    std::array<int64_t, 3> run{};
    for (const auto& op : p.ops) {
      for (size_t t = 0; t < 3; ++t) run[t] += op.mem_delta[t];
      p.ledger.push_back(run);
    }
    CHECK_FALSE(violations(p, s).empty());
  }
  SECTION("a dependency on a later op") {
    Plan p = good;
    p.ops[5].deps.push_back(9);
    CHECK_FALSE(violations(p, s).empty());
  }
}
