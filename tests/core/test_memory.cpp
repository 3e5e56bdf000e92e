// The memory model: the seed's claims, DeepSpeed's allocation table (DEEPSPEED.md §1.3) item by item, activations
// against Korthikanti et al., verdicts and fixes.
#include <catch2/catch.hpp>

#include "core/hardware.h"
#include "core/memory.h"
#include "core/model.h"
#include "core/paths.h"
#include "core/strategy.h"

using namespace zs::core;

namespace {

ModelSpec model(const char* name) {
  auto m = load_model(name);
  REQUIRE(m.ok());
  return *m;
}
Hardware hardware(const char* name) {
  auto h = load_hardware(name);
  REQUIRE(h.ok());
  return *h;
}
Strategy strategy(const std::string& json, const ModelSpec& m, int64_t gpus, int64_t nodes = 1, bool ckpt = false) {
  RunSettings run;
  run.nodes = nodes;
  run.gpus_per_node = gpus;
  run.seq_len = m.max_seq_len;
  run.hidden = m.hidden;
  run.checkpoint_activations = ckpt;
  auto s = parse_ds_config_text(json, "inline.json", run);
  INFO(json);
  REQUIRE(s.ok());
  return *s;
}
Strategy shipped(const char* name, const ModelSpec& m, int64_t gpus, bool ckpt = false) {
  RunSettings run;
  run.gpus_per_node = gpus;
  run.seq_len = m.max_seq_len;
  run.hidden = m.hidden;
  run.checkpoint_activations = ckpt;
  auto s = load_strategy(name, run);
  REQUIRE(s.ok());
  return *s;
}

int64_t optimizer_state_bytes(const TierReport& t) { return t.item("fp32_master") + t.item("adam_m_v"); }

}  // namespace

TEST_CASE("seed: ZeRO-1 over 8 GPUs takes GPT-2 1.5B's fp32 Adam states from ~18 GB to ~2.25 GB per GPU", "[memory][seed]") {
  ModelSpec m = model("gpt2-1.5b");
  Hardware h = hardware("dgx-a100-80gb");
  const int64_t P = parameter_count(m);  // 1,557,611,200
  auto z0 = memory_model(m, h, strategy(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}})", m, 1));
  auto z1 = memory_model(
      m, h, strategy(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}, "zero_optimization": {"stage": 1}})", m, 8));
  const int64_t before = optimizer_state_bytes(z0.tier(Tier::gpu));
  const int64_t after = optimizer_state_bytes(z1.tier(Tier::gpu));
  CHECK(before == 12 * P);                   // fp32 master + m + v
  CHECK(after == 12 * ((P + 7) / 8));        // one partition of 8
  CHECK(before == Approx(18e9).epsilon(0.04));   // "~18 GB" (the seed rounds 1.5B)
  CHECK(after == Approx(2.25e9).epsilon(0.04));  // "~2.25 GB"
  // Stage 1 partitions only optimizer states: lp params and grads stay whole.
  CHECK(z1.tier(Tier::gpu).item("lp_params") == 2 * P);
  CHECK(z1.tier(Tier::gpu).item("lp_grads") == 2 * P);
}

TEST_CASE("seed: 10B ZeRO-Offload on one V100-32GB needs far more host DRAM than 32 GB", "[memory][seed]") {
  ModelSpec m = model("gpt2-10b");
  Hardware h = hardware("v100-32gb-workstation");
  Strategy s = shipped("zero2-offload-cpu", m, 1, /*ckpt=*/true);
  auto r = memory_model(m, h, s);
  const int64_t P = parameter_count(m);
  const auto& cpu = r.tier(Tier::cpu);
  // DeepSpeed's ZeRO-2 offload allocations on the host: fp32 master 4P, fp32 grads 4P, m+v 8P, lp copy-back 2P.
  CHECK(cpu.item("fp32_master") == 4 * P);
  CHECK(cpu.item("fp32_grads") == 4 * P);
  CHECK(cpu.item("adam_m_v") == 8 * P);
  CHECK(cpu.item("lp_copy_back") == 2 * P);
  CHECK(cpu.required_bytes > int64_t{18} * P);
  CHECK(cpu.required_bytes > 170 * kGiB);
  CHECK(r.tier(Tier::gpu).fits());  // the GPU holds 2P of fp16 params plus buckets: ZeRO-Offload's point
  CHECK(r.fits);                    // on the 256 GiB workstation
  Hardware small = h;
  small.cpu.memory_GiB = 32;
  auto r32 = memory_model(m, small, s);
  CHECK_FALSE(r32.fits);
  REQUIRE(r32.binding);
  CHECK(*r32.binding == Tier::cpu);
  // No single change fixes a 32 GB host short of NVMe for parameters and optimizer; the limit says what it lacks.
  auto fixes = suggest_fixes(m, small, s);
  REQUIRE_FALSE(fixes.empty());
  CHECK_FALSE(memory_limits(r32).empty());
}

TEST_CASE("seed: 100B on one GPU fits only with ZeRO-3 + NVMe for params and optimizer", "[memory][seed]") {
  ModelSpec m = model("gpt-100b");
  Hardware h = hardware("dgx2");
  for (const char* c : {"zero0", "zero1", "zero2", "zero3", "zero2-offload-cpu", "zero3-offload-cpu"}) {
    INFO(c);
    CHECK_FALSE(memory_model(m, h, shipped(c, m, 1)).fits);
  }
  Strategy s = shipped("zero3-offload-nvme", m, 1);
  auto r = memory_model(m, h, s);
  INFO(r.problems.size());
  CHECK(r.fits);
  const int64_t P = parameter_count(m);
  // NVMe: fp32 master, m, v and fp32 grads (16 B/param) plus the lp params beyond max_in_cpu.
  const auto& nv = r.tier(Tier::nvme);
  CHECK(nv.item("fp32_master") + nv.item("adam_m_v") + nv.item("fp32_grads") == Approx(16.0 * P).epsilon(1e-4));
  CHECK(nv.item("lp_params") == Approx(2.0 * (P - s.zero.offload_param.max_in_cpu)).epsilon(0.01));
  CHECK(nv.required_bytes > int64_t{1600} * 1000 * 1000 * 1000);
  // CPU: the pinned grad partitions dominate (2 B/param), far below the 1.5 TB the CPU-offload variant needs.
  const auto& cpu = r.tier(Tier::cpu);
  CHECK(cpu.item("lp_grads") == 2 * P);
  CHECK(cpu.required_bytes < memory_model(m, h, shipped("zero3-offload-cpu", m, 1)).tier(Tier::cpu).required_bytes / 4);
}

TEST_CASE("ZeRO-2/3 model states match DeepSpeed's allocation table", "[memory]") {
  ModelSpec m = model("gpt2-1.5b");
  Hardware h = hardware("dgx-a100-80gb");
  const int64_t P = parameter_count(m), p = (P + 7) / 8;
  SECTION("ZeRO-2, no offload, overlap_comm doubles the IPG bucket") {
    auto r = memory_model(m, h, strategy(R"({"train_micro_batch_size_per_gpu": 1, "fp16": {"enabled": true},
      "zero_optimization": {"stage": 2, "overlap_comm": true, "reduce_bucket_size": 2e8}})", m, 8));
    const auto& g = r.tier(Tier::gpu);
    CHECK(g.item("lp_params") == 2 * P);
    CHECK(g.item("lp_grads") == 2 * p);
    CHECK(g.item("fp32_grads") == 4 * p);
    CHECK(g.item("fp32_master") == 4 * p);
    CHECK(g.item("adam_m_v") == 8 * p);
    CHECK(g.item("comm_buckets") == 2 * 2 * 200000000);
  }
  SECTION("ZeRO-3 + CPU offload of optimizer: grad partitions pinned on the host") {
    auto r = memory_model(m, h, strategy(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
      "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}}})", m, 8));
    const auto& g = r.tier(Tier::gpu);
    const auto& c = r.tier(Tier::cpu);
    CHECK(g.item("lp_params") == 2 * p);
    CHECK(g.item("adam_m_v") == 0);
    CHECK(c.item("adam_m_v") == 8 * 8 * p);  // 8 local ranks
    CHECK(c.item("lp_grads") == 8 * 2 * p);
    // Pinned: the grad partitions and the sub-groups' fp32 gradient buffers (offload_optimizer.pin_memory); the
    // fp32 master is a plain clone() (stage3.py _create_fp32_partitions), pageable.
    CHECK(c.pinned_bytes >= 8 * (4 * p + 2 * p));
    for (const auto& i : c.items)
      if (i.key == "fp32_master") CHECK_FALSE(i.pinned);
    CHECK(r.zero3_peak_live_numel > 0);
    CHECK(g.item("zero3_working_set") == 2 * r.zero3_peak_live_numel);
  }
  SECTION("bf16 optimizer states halve m and v") {
    auto r = memory_model(m, h, strategy(R"({"train_micro_batch_size_per_gpu": 1,
      "bf16": {"enabled": true, "bf16_master_weights_and_grads": true, "bf16_optimizer_states": true},
      "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}}})", m, 8));
    CHECK(r.tier(Tier::cpu).item("adam_m_v") == 8 * 4 * p);
  }
  SECTION("Twin-Flow ratio keeps the first int((1 - ratio) x n) sub-groups on the GPU") {
    // DeepSpeed v0.19 (stage3.py subgroup_to_device) assigns whole sub-groups. With sub_group_size 2e7 the
    // ~195M-element partition makes several sub-groups; built here the way _create_fp16_sub_groups does.
    std::vector<int64_t> groups;
    int64_t acc = 0;
    for (const auto& t : tensor_table(m)) {
      if (t.tied) continue;
      acc += (t.numel + 7) / 8;
      if (acc >= 20000000) {
        groups.push_back(acc);
        acc = 0;
      }
    }
    if (acc > 0) groups.push_back(acc);
    REQUIRE(groups.size() >= 8);
    const auto k = static_cast<size_t>(0.25 * static_cast<double>(groups.size()));
    REQUIRE(k >= 2);
    int64_t on_gpu = 0;
    for (size_t g = 0; g < k; ++g) on_gpu += groups[g];
    auto r = memory_model(m, h, strategy(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
      "zero_optimization": {"stage": 3, "sub_group_size": 2e7,
        "offload_optimizer": {"device": "cpu", "ratio": 0.75}}})", m, 8));
    CHECK(r.tier(Tier::gpu).item("adam_m_v") == 8 * on_gpu);
    CHECK(r.tier(Tier::gpu).item("fp32_master") == 4 * on_gpu);
    CHECK(r.tier(Tier::cpu).item("adam_m_v") == 8 * 8 * (p - on_gpu));  // 8 local ranks
    bool noted = false;
    for (const auto& n : r.notes)
      noted |= n.find("offload_optimizer.ratio 0.75: the first " + std::to_string(k) + " of " +
                      std::to_string(groups.size()) + " sub-groups") == 0;
    CHECK(noted);
  }
  SECTION("Twin-Flow ratio with one sub-group does nothing, and says so") {
    // The default sub_group_size (1e9) exceeds the partition: one sub-group, int(0.25 x 1) = 0 on the GPU.
    auto r = memory_model(m, h, strategy(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
      "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "ratio": 0.75}}})", m, 8));
    CHECK(r.tier(Tier::gpu).item("adam_m_v") == 0);
    CHECK(r.tier(Tier::cpu).item("adam_m_v") == 8 * 8 * p);
    bool noted = false;
    for (const auto& n : r.notes)
      noted |= n.find("offload_optimizer.ratio 0.75 with 1 sub-group: DeepSpeed keeps all sub-groups on CPU") == 0 &&
               n.find("lower sub_group_size") != std::string::npos;
    CHECK(noted);
  }
}

TEST_CASE("activations follow Korthikanti et al. for GPT-2 with eager attention", "[memory]") {
  ModelSpec m = model("gpt2-1.5b");
  Strategy s = strategy(R"({"train_micro_batch_size_per_gpu": 2, "fp16": {"enabled": true}})", m, 1);
  MemoryOptions eager;
  eager.flash_attention = false;
  auto a = activation_bytes(m, s, eager);
  const int64_t sbh = s.run.seq_len * 2 * m.hidden;
  // sbh(34 + 5as/h) bytes per layer
  CHECK(a.per_layer_full == 34 * sbh + 5 * m.heads * s.run.seq_len * s.run.seq_len * 2);
  CHECK(a.gpu_peak == m.layers * a.per_layer_full + a.embedding + a.head_and_loss);
  MemoryOptions flash;
  auto f = activation_bytes(m, s, flash);
  CHECK(f.per_layer_full == 34 * sbh + 4 * m.heads * s.run.seq_len * 2);
  Strategy ck = strategy(R"({"train_micro_batch_size_per_gpu": 2, "fp16": {"enabled": true}})", m, 1, 1, true);
  auto c = activation_bytes(m, ck, flash);
  CHECK(c.gpu_peak == m.layers * 2 * sbh + c.embedding + std::max(c.per_layer_full, c.head_and_loss));
  CHECK(c.gpu_peak < f.gpu_peak / 4);
}

TEST_CASE("offload_param nvme: buffer_size smaller than a partition is DeepSpeed's assert", "[memory]") {
  ModelSpec m = model("gpt-100b");
  Hardware h = hardware("dgx2");
  auto r = memory_model(m, h, strategy(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
    "zero_optimization": {"stage": 3, "offload_param": {"device": "nvme", "nvme_path": "/nvme"},
      "offload_optimizer": {"device": "nvme", "nvme_path": "/nvme"}}})", m, 1, 1, true));
  REQUIRE_FALSE(r.problems.empty());
  CHECK_THAT(r.problems.front(), Catch::Contains("buffer_size") && Catch::Contains("#3506"));
  CHECK_FALSE(r.fits);
  auto fixes = suggest_fixes(m, h, strategy(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
    "zero_optimization": {"stage": 3, "offload_param": {"device": "nvme", "nvme_path": "/nvme"},
      "offload_optimizer": {"device": "nvme", "nvme_path": "/nvme"}}})", m, 1, 1, true));
  REQUIRE_FALSE(fixes.empty());
  CHECK(fixes.front().fits);
  CHECK_THAT(fixes.front().text, Catch::Contains("offload_param.buffer_size"));
}

TEST_CASE("offload_param nvme: parameters kept gathered hold every swap buffer is DeepSpeed's assert", "[memory]") {
  // GPT-2 1.5B on one GPU: 73 partitions beyond max_in_cpu live on NVMe, and the default reuse distance (1e9
  // elements, more than the model) keeps each gathered — with its swap buffer — until backward reuses it.
  ModelSpec m = model("gpt2-1.5b");
  Hardware h = hardware("v100-32gb-workstation");
  const Strategy s = shipped("zero3-offload-nvme", m, 1);
  auto r = memory_model(m, h, s);
  REQUIRE_FALSE(r.problems.empty());
  CHECK_THAT(r.problems.front(), Catch::Contains("offload_param.buffer_count 5 is too few") &&
                                     Catch::Contains("Not enough swap in buffers"));
  CHECK_FALSE(r.fits);
  auto fixes = suggest_fixes(m, h, s);
  REQUIRE_FALSE(fixes.empty());
  CHECK(fixes.front().fits);
  bool buffers = false;
  for (const auto& f : fixes)
    if (f.text.find("zero_optimization.offload_param.buffer_count = ") == 0) {
      buffers = true;
      CHECK(f.fits);
      CHECK(memory_model(m, h, f.strategy).fits);
    }
  CHECK(buffers);
}

TEST_CASE("fixes are ranked: cheapest change that fits comes first, with its effect", "[memory]") {
  ModelSpec m = model("llama2-7b");
  Hardware h = hardware("dgx-a100-80gb");
  Strategy s = strategy(R"({"train_micro_batch_size_per_gpu": 8, "bf16": {"enabled": true},
    "zero_optimization": {"stage": 0}})", m, 1);
  auto r = memory_model(m, h, s);
  REQUIRE_FALSE(r.fits);
  CHECK(*r.binding == Tier::gpu);
  auto fixes = suggest_fixes(m, h, s);
  REQUIRE(fixes.size() >= 2);
  CHECK(fixes.front().fits);
  for (size_t i = 1; i < fixes.size(); ++i)
    if (fixes[i].fits) CHECK(fixes[i - 1].cost_rank <= fixes[i].cost_rank);
  CHECK_THAT(fixes.front().text, Catch::Contains("GPU ") && Catch::Contains(" → "));
  // Applying the first fix really fits.
  CHECK(memory_model(m, h, fixes.front().strategy).fits);
}

TEST_CASE("NVMe capacity binds when the drives are too small", "[memory]") {
  ModelSpec m = model("gpt-100b");
  Hardware h = hardware("dgx2");
  h.nvme.drives = 1;
  h.nvme.capacity_GB_each = 500;
  auto r = memory_model(m, h, shipped("zero3-offload-nvme", m, 1));
  CHECK_FALSE(r.fits);
  CHECK(*r.binding == Tier::nvme);
  // What the drives lack is a limit (hardware), listed apart from the fixes.
  bool fact = false;
  for (const auto& l : memory_limits(r))
    if (l.tier == Tier::nvme && l.text.find("NVMe per node, has") != std::string::npos) fact = true;
  CHECK(fact);
  for (const auto& f : suggest_fixes(m, h, shipped("zero3-offload-nvme", m, 1)))
    CHECK(f.text.find("NVMe per node, has") == std::string::npos);
}

TEST_CASE("every shipped model x hardware x config evaluates", "[memory]") {
  for (const auto& mp : shipped_inputs(InputKind::model)) {
    auto m = load_model_any(mp);
    REQUIRE(m.ok());
    for (const auto& hp : shipped_inputs(InputKind::hardware)) {
      auto h = load_hardware_file(hp);
      REQUIRE(h.ok());
      for (const auto& cp : shipped_inputs(InputKind::deepspeed)) {
        RunSettings run;
        run.gpus_per_node = h->gpus_per_node;
        run.seq_len = m->max_seq_len;
        run.hidden = m->hidden;
        auto s = load_ds_config(cp, run);
        INFO(mp << " " << hp << " " << cp);
        REQUIRE(s.ok());
        auto r = memory_model(*m, *h, *s);
        int64_t sum = 0;
        for (const auto& i : r.tier(Tier::gpu).items) {
          CHECK(i.bytes > 0);
          sum += i.bytes;
        }
        CHECK(sum == r.tier(Tier::gpu).required_bytes);
        CHECK(r.binding.has_value());
      }
    }
  }
}
