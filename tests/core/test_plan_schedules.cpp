// Schedules and DeepSpeed mechanics in the plan: dpu, overlap, Twin-Flow's ratio, NVMe optimizer swapping with
// pipeline_read/pipeline_write, the ZeRO-3 fetch throttle and persistence, and symmetry at 1024 GPUs.
#include <algorithm>

#include "core/param_coordinator.h"
#include "tests/core/test_plan_helpers.h"

using namespace plan_test;

namespace {

std::vector<uint32_t> ops_of(const Plan& p, OpKind k) {
  std::vector<uint32_t> v;
  for (const auto& op : p.ops)
    if (op.kind == k) v.push_back(op.id);
  return v;
}
uint32_t last_of(const Plan& p, OpKind k) {
  const auto v = ops_of(p, k);
  REQUIRE_FALSE(v.empty());
  return v.back();
}

}  // namespace

TEST_CASE("dpu: CPU Adam of the previous step runs beside forward and backward", "[plan][schedule]") {
  ModelSpec m = model("gpt2-1.5b");
  Hardware h = hardware("v100-32gb-workstation");
  Strategy s = strategy(R"({"train_micro_batch_size_per_gpu": 1, "fp16": {"enabled": true},
    "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}})", m, 1, 1, true, 1024);
  PlanOptions o;
  o.schedule = Schedule::dpu;
  Plan p = make_plan(m, h, s, o);
  Ancestry anc(p);
  const auto adam = ops_of(p, OpKind::adam_cpu);
  REQUIRE(adam.size() == 1);
  const uint32_t a = adam[0];
  // No compute op of this step precedes the Adam op: it overlaps the whole forward and backward.
  for (const auto& op : p.ops)
    if (op.kind == OpKind::forward || op.kind == OpKind::backward) CHECK_FALSE(anc.reaches(op.id, a));
  // Its update lands after backward; this step's gradients wait until Adam has read the buffer.
  const uint32_t last_bwd = last_of(p, OpKind::backward);
  for (const auto& op : p.ops) {
    if (op.kind == OpKind::h2d && tensor_kind(p, op) == TensorKind::lp_param) CHECK(anc.reaches(last_bwd, op.id));
    if (op.kind == OpKind::d2h && tensor_kind(p, op) == TensorKind::fp32_grad) CHECK(anc.reaches(a, op.id));
  }
  CHECK_FALSE(p.notes.empty());
  // Same bytes as the deepspeed schedule: only the order changes.
  Plan d = make_plan(m, h, s);
  CHECK(d.per_step.h2d == p.per_step.h2d);
  CHECK(d.per_step.d2h == p.per_step.d2h);
  CHECK(d.peak_bytes == p.peak_bytes);
}

TEST_CASE("overlap: a layer's CPU Adam starts once its gradients are offloaded, during backward", "[plan][schedule]") {
  ModelSpec m = model("llama2-7b");
  Hardware h = hardware("dgx-a100-80gb");
  Strategy s = strategy(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
    "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}, "reduce_bucket_size": 5e7}})", m, 1, 1,
                        true, 512);
  PlanOptions o;
  o.schedule = Schedule::overlap;
  Plan p = make_plan(m, h, s, o);
  Plan d = make_plan(m, h, s);
  const auto adam = ops_of(p, OpKind::adam_cpu);
  CHECK(adam.size() >= static_cast<size_t>(m.layers));  // one per layer at least
  CHECK(ops_of(d, OpKind::adam_cpu).size() < adam.size());
  // Most updates are issued before the last backward op and do not wait for it.
  Ancestry anc(p);
  const uint32_t last_bwd = last_of(p, OpKind::backward);
  size_t early = 0;
  for (uint32_t a : adam) early += !anc.reaches(last_bwd, a);
  CHECK(early >= static_cast<size_t>(m.layers - 1));
  // In the deepspeed schedule every update waits for the whole backward (the global norm).
  Ancestry danc(d);
  const uint32_t dlast = last_of(d, OpKind::backward);
  for (uint32_t a : ops_of(d, OpKind::adam_cpu)) CHECK(danc.reaches(dlast, a));
  CHECK(d.per_step.d2h == p.per_step.d2h);
  CHECK(d.peak_bytes == p.peak_bytes);
}

TEST_CASE("Twin-Flow offload_optimizer.ratio steps whole sub-groups on the GPU, as fit counts them",
          "[plan][schedule]") {
  ModelSpec m = model("gpt2-1.5b");
  Hardware h = hardware("dgx-a100-80gb");
  // sub_group_size 2e7 cuts the ~390M-element partition into ~20 sub-groups; the first int(0.4 n) step on the GPU.
  Strategy s = strategy(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
    "zero_optimization": {"stage": 3, "sub_group_size": 2e7,
      "offload_optimizer": {"device": "cpu", "ratio": 0.6}}})", m, 4, 1, false, 512);
  const MemoryReport r = memory_model(m, h, s);
  const int64_t fit_gpu = r.tier(Tier::gpu).item("adam_m_v") / 8;  // fp32 m and v: 8 B per element
  REQUIRE(fit_gpu > 0);
  for (Schedule sc : {Schedule::deepspeed, Schedule::dpu, Schedule::overlap}) {
    PlanOptions o;
    o.schedule = sc;
    Plan p = make_plan(m, h, s, o);
    int64_t gpu = 0, cpu = 0;
    for (const auto& op : p.ops) {
      if (op.kind == OpKind::adam_gpu) gpu += op.elements;
      if (op.kind == OpKind::adam_cpu) cpu += op.elements;
    }
    INFO(to_string(sc));
    CHECK(gpu == fit_gpu);
    CHECK(static_cast<double>(gpu) / static_cast<double>(gpu + cpu) == Approx(0.4).margin(0.06));
    // GPU groups' gradients never cross PCIe as fp32.
    CHECK(bytes_of(p, OpKind::d2h, TensorKind::fp32_grad) == 4 * cpu);
    REQUIRE(p.notes.size() >= 1);
    CHECK(std::any_of(p.notes.begin(), p.notes.end(),
                      [](const std::string& n) { return n.find("offload_optimizer.ratio 0.6: the first") == 0; }));
  }
  // One sub-group (the default sub_group_size 1e9 here): ratio < 1 changes nothing, and the plan says why.
  Plan one = make_plan(m, h, strategy(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
    "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "ratio": 0.6}}})", m, 4, 1, false, 512));
  CHECK(ops_of(one, OpKind::adam_gpu).empty());
  CHECK(std::any_of(one.notes.begin(), one.notes.end(), [](const std::string& n) {
    return n.find("with 1 sub-group: DeepSpeed keeps all sub-groups on CPU") != std::string::npos;
  }));
}

TEST_CASE("NVMe optimizer swapping: pipeline_read prefetches the next sub-group, pipeline_write defers writes",
          "[plan][schedule]") {
  ModelSpec m = model("gpt2-1.5b");
  Hardware h = hardware("dgx-a100-80gb");
  auto plan = [&](bool pr, bool pw) {
    std::string j = R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
      "zero_optimization": {"stage": 3, "sub_group_size": 1e8, "offload_optimizer": {"device": "nvme",
      "nvme_path": "/n", "buffer_count": 12, "pipeline_read": )" +
                    std::string(pr ? "true" : "false") + R"(, "pipeline_write": )" + (pw ? "true" : "false") + "}}}";
    return make_plan(m, h, strategy(j, m, 1, 1, false, 512));
  };
  auto reads_wait_for_previous_adam = [](const Plan& p) {
    Ancestry anc(p);
    const auto adam = ops_of(p, OpKind::adam_cpu);
    int waits = 0;
    for (size_t g = 1; g < adam.size(); ++g) {
      // the first swap-in of group g: the nvme_read right after Adam of g-1 in program order, or before it
      for (const auto& op : p.ops)
        if (op.kind == OpKind::nvme_read && op.phase == Phase::optimizer && op.tensor == p.ops[adam[g]].tensor) {
          waits += anc.reaches(adam[g - 1], op.id);
          break;
        }
    }
    return waits;
  };
  Plan sync = plan(false, false), pread = plan(true, false), both = plan(true, true);
  const size_t groups = ops_of(sync, OpKind::adam_cpu).size();
  REQUIRE(groups >= 10);
  CHECK(reads_wait_for_previous_adam(sync) == static_cast<int>(groups - 1));
  CHECK(reads_wait_for_previous_adam(pread) == 0);
  // Without pipeline_write each Adam waits for the previous group's swap-out; with it, it does not.
  auto adam_waits_for_writes = [](const Plan& p) {
    Ancestry anc(p);
    const auto adam = ops_of(p, OpKind::adam_cpu);
    const auto writes = ops_of(p, OpKind::nvme_write);
    int n = 0;
    for (size_t g = 1; g < adam.size(); ++g)
      for (uint32_t w : writes)
        if (w < adam[g] && w > adam[g - 1] && p.ops[w].phase == Phase::optimizer) {
          n += anc.reaches(w, adam[g]);
          break;
        }
    return n;
  };
  CHECK(adam_waits_for_writes(pread) == static_cast<int>(groups - 1));
  CHECK(adam_waits_for_writes(both) == 0);
  CHECK(sync.per_step.nvme_read == both.per_step.nvme_read);
  // step() swaps states in only when it runs, after the overflow check and the global norm: every optimizer-phase
  // NVMe read of the deepspeed schedule comes after the norm's all-reduce, the first group's included.
  for (const Plan* p : {&sync, &pread, &both}) {
    Ancestry anc(*p);
    const auto norm = ops_of(*p, OpKind::allreduce);
    REQUIRE_FALSE(norm.empty());
    int reads = 0, after_norm = 0;
    for (const auto& op : p->ops)
      if (op.kind == OpKind::nvme_read && op.phase == Phase::optimizer) {
        ++reads;
        after_norm += anc.reaches(norm.front(), op.id);
      }
    CHECK(reads >= 4 * static_cast<int>(groups));
    CHECK(after_norm == reads);
  }
}

TEST_CASE("ZeRO-3 fetches are issued from the module's pre-hook; persistent params never fetched",
          "[plan][schedule]") {
  ModelSpec m = model("gpt2-355m");
  Hardware h = hardware("dgx-a100-80gb");
  for (const char* reuse : {"0", "1e9"}) {
    Plan p = make_plan(m, h, strategy(std::string(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
      "zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"}, "stage3_prefetch_bucket_size": 5e7,
      "stage3_max_reuse_distance": )") + reuse + "}}", m, 8, 1, false, 512));
    INFO("reuse " << reuse);
    Ancestry anc(p);
    // Every op of a fetch (H2D of the partition, all-gather) waits for the compute op before it in program order:
    // the host reaches module s's pre-hook after module s − 1 (docs/PLAN.md), so prefetches cannot run ahead.
    int64_t prev_compute = -1;
    size_t fetch_ops = 0;
    for (const auto& op : p.ops) {
      if (op.phase == Phase::optimizer) break;
      if (op.kind == OpKind::forward || op.kind == OpKind::backward || op.kind == OpKind::recompute) {
        prev_compute = op.id;
        continue;
      }
      const bool fetch = op.kind == OpKind::allgather ||
                         (op.kind == OpKind::h2d && tensor_kind(p, op) == TensorKind::lp_param);
      if (!fetch || prev_compute < 0) continue;
      ++fetch_ops;
      CHECK(anc.reaches(static_cast<uint32_t>(prev_compute), op.id));
    }
    CHECK(fetch_ops > 50);
    int64_t persistent = 0;
    for (const auto& t : p.tensors)
      if (t.persistent) persistent += t.numel;
    CHECK(persistent > 0);  // biases and norms (≤ 1e5 elements)
    // _post_step re-gathers the persistent parameters after the optimizer step.
    const auto& post = p.ops[last_of(p, OpKind::allgather)];
    CHECK(post.phase == Phase::optimizer);
    CHECK(post.bytes == 2 * persistent);
  }
}

TEST_CASE("ZeRO-3 fetch events: waiting on event e synchronises event e - 3", "[plan][schedule]") {
  // __max_ongoing_fetch_events = 2: before the host records a fetch event it synchronises the oldest when more
  // than 2 are outstanding, so everything issued after waiting on event e waits for event e − 3's all-gather.
  // With ≤ 2 params per module (GPT, LLaMA) the compute dep on module s − 1 already implies it; the prefetch
  // carries the host's synchronisation as a direct dep all the same, which this checks.
  ModelSpec m = model("gpt2-124m");
  Hardware h = hardware("dgx-a100-80gb");
  Strategy s = strategy(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
    "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 0, "stage3_max_reuse_distance": 0,
      "stage3_prefetch_bucket_size": 2e7}})", m, 8, 1, false, 256);
  Plan p = make_plan(m, h, s);
  const auto rep = replay_coordinator(m, module_trace(m, false), s.zero);
  Ancestry anc(p);
  // Fetch events in the host's order, and the all-gathers issued after each step's waits (its prefetch).
  std::vector<uint32_t> gather_of(param_count(p), 0), events;
  std::vector<uint32_t> compute;
  for (const auto& op : p.ops)
    if (op.kind == OpKind::forward || op.kind == OpKind::backward) compute.push_back(op.id);
  REQUIRE(compute.size() == rep.steps.size());
  size_t checked = 0;
  size_t next_op = 0;
  uint32_t synced = 0;
  for (size_t st = 0; st < rep.steps.size(); ++st) {
    std::vector<uint32_t> ags;  // this step's all-gathers, in program order
    for (; next_op < compute[st]; ++next_op)
      if (p.ops[next_op].kind == OpKind::allgather) ags.push_back(static_cast<uint32_t>(next_op));
    ++next_op;
    for (uint32_t a : ags)
      for (int32_t t = p.ops[a].tensor; t < p.ops[a].tensor + p.ops[a].tensor_count; ++t) gather_of[t] = a;
    for (size_t prm : rep.steps[st].waited) events.push_back(gather_of[prm]);
    if (events.size() < 4) continue;
    synced = std::max(synced, events[events.size() - 4]);
    // The own fetch is issued before the waits; the prefetch (the step's later all-gathers) after them.
    size_t own = 0;
    for (uint32_t a : ags) {
      if (own < rep.steps[st].fetched) {
        own += static_cast<size_t>(p.ops[a].tensor_count);
        continue;
      }
      CHECK(std::count(p.ops[a].deps.begin(), p.ops[a].deps.end(), synced) == 1);
      CHECK(anc.reaches(synced, a));
      ++checked;
    }
  }
  CHECK(checked > 20);
}

TEST_CASE("ZeRO-Infinity: each NVMe partition is read into a swap buffer before its all-gather, within "
          "buffer_count", "[plan][schedule]") {
  ModelSpec m = model("gpt2-1.5b");
  Hardware h = hardware("v100-32gb-workstation");
  for (const char* prefetch : {"0", "5e7"}) {
    Strategy s = strategy(std::string(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
      "zero_optimization": {"stage": 3, "stage3_max_reuse_distance": 0, "stage3_prefetch_bucket_size": )") +
                              prefetch + R"(,
        "offload_param": {"device": "nvme", "nvme_path": "/n", "buffer_count": 4, "max_in_cpu": 1e8},
        "offload_optimizer": {"device": "cpu"}}})", m, 1, 1, true, 512);
    Plan p = make_plan(m, h, s);
    INFO("prefetch " << prefetch << ": " << p.infeasible_reason);
    REQUIRE(p.feasible);
    Ancestry anc(p);
    const size_t np = param_count(p);
    std::vector<int64_t> read(np, -1);  // the read that holds the param's swap buffer
    int64_t held = 0, reads = 0;
    for (const auto& op : p.ops) {
      if (op.phase == Phase::optimizer) break;
      if (op.tensor < 0 || op.tensor >= static_cast<int32_t>(np)) continue;
      for (int32_t t = op.tensor; t < op.tensor + op.tensor_count; ++t) {
        if (p.tensors[t].home != Tier::nvme) continue;
        if (op.kind == OpKind::nvme_read) {
          CHECK(read[t] < 0);
          read[t] = op.id;
          ++held;
          ++reads;
        } else if (op.kind == OpKind::allgather) {
          REQUIRE(read[t] >= 0);
          CHECK(anc.reaches(static_cast<uint32_t>(read[t]), op.id));
        } else if (op.kind == OpKind::release && read[t] >= 0) {
          read[t] = -1;
          --held;
        }
      }
      CHECK(held <= 4);
    }
    CHECK(reads > 100);
  }
}

TEST_CASE("symmetry: a 1024-GPU ZeRO-3 plan lists one rank and collective descriptions", "[plan][schedule]") {
  ModelSpec m = model("gpt3-175b");
  Hardware h = hardware("dgx2");
  Strategy one = strategy(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
    "zero_optimization": {"stage": 3}})", m, 16, 1);
  Strategy big = strategy(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
    "zero_optimization": {"stage": 3}})", m, 16, 64);
  Plan p1 = make_plan(m, h, one), p = make_plan(m, h, big);
  CHECK(p.ranks == 1024);
  CHECK(p.represented_ranks == 1);
  CHECK(p.ops.size() < 2 * p1.ops.size());
  for (const auto& op : p.ops) {
    CHECK(op.rank == 0);
    if (op.kind == OpKind::allgather || op.kind == OpKind::reduce_scatter || op.kind == OpKind::allreduce)
      CHECK(op.group_ranks == 1024);
  }
  CHECK(p.tokens_per_step == 1024 * 2048);
}
