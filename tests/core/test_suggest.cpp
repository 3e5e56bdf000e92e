// Fixes a program can use (core/suggest.cpp, core/patch.h): each suggestion is a ds_config patch plus run-setting
// changes whose re-read is exactly the configuration it was evaluated with; labels name every key changed; hardware
// facts are limits, not fixes; the TIGHT verdict; the patched file keeps the original's order and "auto" values.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/hardware.h"
#include "core/json_reader.h"
#include "core/memory.h"
#include "core/model.h"
#include "core/patch.h"
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
RunSettings run_for(const ModelSpec& m, int64_t gpus, int64_t nodes = 1) {
  RunSettings run;
  run.nodes = nodes;
  run.gpus_per_node = gpus;
  run.seq_len = std::min<int64_t>(m.max_seq_len, 4096);
  run.hidden = m.hidden;
  return run;
}
Strategy shipped(const char* name, const RunSettings& run) {
  auto s = load_strategy(name, run);
  REQUIRE(s.ok());
  return *s;
}
Strategy inline_config(const std::string& json, const RunSettings& run) {
  auto s = parse_ds_config_text(json, "inline.json", run);
  INFO(json);
  REQUIRE(s.ok());
  return *s;
}

// Two strategies read the same: every resolved key, the run settings, the batch, the notes.
void check_same(const Strategy& a, const Strategy& b) {
  CHECK(resolved_config_json(a) == resolved_config_json(b));
  CHECK(a.run.nodes == b.run.nodes);
  CHECK(a.run.gpus_per_node == b.run.gpus_per_node);
  CHECK(a.run.checkpoint_activations == b.run.checkpoint_activations);
  CHECK(a.run.config_changes == b.run.config_changes);
  CHECK(a.activation_checkpointing.enabled == b.activation_checkpointing.enabled);
  CHECK(a.micro_batch_per_gpu == b.micro_batch_per_gpu);
  CHECK(a.gradient_accumulation_steps == b.gradient_accumulation_steps);
  CHECK(a.train_batch_size == b.train_batch_size);
  CHECK(a.notes == b.notes);
}

// Every fix of (m, hw, s): its strategy is the re-read of its patch, its report the model of that strategy, its
// label names every key and flag it changes, and none is a hardware fact.
void check_fixes(const ModelSpec& m, const Hardware& hw, const Strategy& s) {
  const MemoryReport base = memory_model(m, hw, s);
  REQUIRE_FALSE(base.fits);
  const auto fixes = suggest_fixes(m, hw, s);
  REQUIRE_FALSE(fixes.empty());
  for (const auto& f : fixes) {
    INFO(f.text);
    CHECK((f.changes.size() + f.run_changes.size()) > 0);
    auto again = evaluate_patch(s, f.changes, f.run_changes);
    REQUIRE(again.ok());
    check_same(f.strategy, *again);
    const MemoryReport r = memory_model(m, hw, *again);
    for (Tier t : kTiers) CHECK(f.report.tier(t).required_bytes == r.tier(t).required_bytes);
    CHECK(f.fits == r.fits);
    CHECK(f.verdict == verdict(r));
    for (const auto& c : f.changes) CHECK_THAT(f.text, Catch::Contains(describe(c)));
    for (const auto& c : f.run_changes) CHECK_THAT(f.text, Catch::Contains(describe(c)));
    CHECK(f.text.rfind("needs ", 0) == std::string::npos);
  }
}

std::string temp_file(const std::string& text) {
  std::string path = "/tmp/zs_test_suggest_" + std::to_string(::getpid()) + ".json";
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("each fix's strategy is the re-read of its patch", "[suggest]") {
  const ModelSpec m70 = model("llama2-70b"), m13 = model("llama2-13b"), m7 = model("llama2-7b");
  SECTION("70B, ZeRO-2 on a V100 workstation") {
    const auto run = run_for(m70, 1);
    check_fixes(m70, hardware("v100-32gb-workstation"), shipped("zero2", run));
  }
  SECTION("70B, ZeRO-3 on an RTX 4090 workstation") {
    const auto run = run_for(m70, 1);
    check_fixes(m70, hardware("rtx4090-workstation"), shipped("zero3", run));
  }
  SECTION("13B, ZeRO-3 on 8 A100s: fixes that fit, run flags among them") {
    const auto run = run_for(m13, 8);
    const Hardware hw = hardware("dgx-a100-80gb");
    const Strategy s = shipped("zero3", run);
    check_fixes(m13, hw, s);
    const auto fixes = suggest_fixes(m13, hw, s);
    REQUIRE(fixes.front().fits);
    bool flags = false;
    for (const auto& f : fixes) flags = flags || !f.run_changes.empty();
    CHECK(flags);
  }
  SECTION("an HF config with \"auto\" batch: the micro batch fix is the HF flags, not the file") {
    const auto run = run_for(m7, 1);
    const Strategy s = shipped("zero3-hf-auto", run);
    check_fixes(m7, hardware("rtx4090-workstation"), s);
    for (const auto& f : suggest_fixes(m7, hardware("rtx4090-workstation"), s))
      for (const auto& c : f.changes) CHECK(c.path.find("micro_batch") == std::string::npos);
  }
  SECTION("an explicit train_batch_size grows with the world; the micro batch stays") {
    const auto run = run_for(m7, 2);
    const Strategy s = inline_config(R"({"train_batch_size": 64, "train_micro_batch_size_per_gpu": 8,
      "bf16": {"enabled": true}, "zero_optimization": {"stage": 2}})",
                                     run);
    const Hardware hw = hardware("dgx-a100-80gb");
    check_fixes(m7, hw, s);
    bool all_gpus = false;
    for (const auto& f : suggest_fixes(m7, hw, s)) {
      if (f.run_changes != std::vector<RunChange>{{RunSetting::gpus_per_node, 8}}) continue;
      all_gpus = true;
      REQUIRE(f.changes.size() == 1);
      CHECK(f.changes[0] == ConfigChange{"train_batch_size", 256});
      CHECK(f.strategy.micro_batch_per_gpu == 8);
      CHECK(f.strategy.gradient_accumulation_steps == 4);
    }
    CHECK(all_gpus);
  }
}

TEST_CASE("labels name every key a fix changes: offload_param → nvme does not move the optimizer silently",
          "[suggest]") {
  const ModelSpec m = model("llama2-70b");
  const auto run = run_for(m, 1);
  const auto fixes = suggest_fixes(m, hardware("v100-32gb-workstation"), shipped("zero2", run));
  bool param_nvme = false;
  for (const auto& f : fixes) {
    bool to_nvme = false, moves_optimizer = false;
    for (const auto& c : f.changes) {
      to_nvme = to_nvme || (c.path == "zero_optimization.offload_param.device" && c.value == "nvme");
      moves_optimizer = moves_optimizer || c.path.rfind("zero_optimization.offload_optimizer", 0) == 0;
    }
    if (!to_nvme) continue;
    param_nvme = true;
    INFO(f.text);
    // DeepSpeed needs the NVMe folder and stage 3 (strategy_zero.cpp): the label says both.
    CHECK_THAT(f.text, Catch::Contains("zero_optimization.offload_param.nvme_path = \"/local_nvme\""));
    CHECK_THAT(f.text, Catch::Contains("zero_optimization.stage = 3"));
    if (!moves_optimizer) {
      CHECK(f.strategy.zero.offload_optimizer.device == OffloadDevice::none);
      CHECK_THAT(f.text, !Catch::Contains("offload_optimizer"));
    } else {
      CHECK_THAT(f.text, Catch::Contains("zero_optimization.offload_optimizer.device"));
    }
  }
  CHECK(param_nvme);
}

TEST_CASE("hardware facts are limits, not fixes", "[suggest]") {
  const ModelSpec m = model("llama2-70b");
  const auto run = run_for(m, 1);
  const Hardware hw = hardware("v100-32gb-workstation");
  const Strategy s = shipped("zero2", run);
  const MemoryReport r = memory_model(m, hw, s);
  for (const auto& f : suggest_fixes(m, hw, s)) CHECK_THAT(f.text, !Catch::Contains("GPU memory per GPU, has"));
  const auto limits = memory_limits(r);
  REQUIRE_FALSE(limits.empty());
  CHECK(limits.front().tier == Tier::gpu);
  CHECK(limits.front().required_bytes == r.tier(Tier::gpu).required_bytes);
  CHECK_THAT(limits.front().text, Catch::StartsWith("needs ") && Catch::Contains("GPU memory per GPU, has 32.0 GiB"));
  // A config that fits has neither.
  const ModelSpec small = model("gpt2-124m");
  const Strategy fits = shipped("zero2", run_for(small, 8));
  CHECK(suggest_fixes(small, hardware("dgx-a100-80gb"), fits).empty());
  CHECK(memory_limits(memory_model(small, hardware("dgx-a100-80gb"), fits)).empty());
}

TEST_CASE("a patch the reader refuses is not offered", "[suggest]") {
  // stage3_* keys under stage 2 are refused (strategy_zero.cpp check_stage3_keys): no fix may produce them, and the
  // reuse-distance fix writes the name the file uses.
  const ModelSpec m = model("gpt2-1.5b");
  const auto run = run_for(m, 1);
  const Strategy s = inline_config(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
    "zero_optimization": {"stage": 3, "max_reuse_distance": 1000000000,
      "offload_param": {"device": "nvme", "nvme_path": "/nvme"}, "offload_optimizer": {"device": "cpu"}}})",
                                   run);
  const Hardware hw = hardware("v100-32gb-workstation");
  if (memory_model(m, hw, s).fits) return;
  for (const auto& f : suggest_fixes(m, hw, s)) {
    INFO(f.text);
    for (const auto& c : f.changes) CHECK(c.path != "zero_optimization.stage3_max_reuse_distance");
    CHECK(evaluate_patch(s, f.changes, f.run_changes).ok());
  }
}

TEST_CASE("verdict: under 3% headroom on any used tier is TIGHT", "[suggest][verdict]") {
  const std::array<int64_t, 3> cap{1000, 2000, 0};
  CHECK(verdict(true, {900, 100, 0}, cap) == Verdict::fits);
  CHECK(verdict(true, {970, 100, 0}, cap) == Verdict::fits);    // exactly 3% headroom
  CHECK(verdict(true, {971, 100, 0}, cap) == Verdict::tight);   // 2.9%
  CHECK(verdict(true, {1000, 100, 0}, cap) == Verdict::tight);  // full
  CHECK(verdict(true, {500, 1990, 0}, cap) == Verdict::tight);  // the CPU is the tight one
  CHECK(verdict(false, {500, 100, 0}, cap) == Verdict::does_not_fit);
  CHECK(to_string(Verdict::tight) == "tight");
  CHECK(verdict_word(Verdict::does_not_fit) == "DOES NOT FIT");
  CHECK(kTightHeadroomFraction == 0.03);
}

TEST_CASE("the patched file keeps the original's key order and \"auto\" values", "[suggest][patch]") {
  const std::string text = R"({
    "zero_optimization": {"stage": 2, "overlap_comm": true, "cpu_offload": false},
    "train_micro_batch_size_per_gpu": "auto",
    "bf16": {"enabled": "auto"},
    "gradient_accumulation_steps": 2
})";
  const std::string path = temp_file(text);
  RunSettings run = run_for(model("llama2-7b"), 1);
  run.config_changes = {{"gradient_accumulation_steps", 4}};  // a --set of this run: written too
  auto s = load_ds_config(path, run);
  REQUIRE(s.ok());
  const std::vector<ConfigChange> fix = {{"zero_optimization.cpu_offload", nullptr},
                                         {"zero_optimization.offload_optimizer.device", "cpu"}};
  auto out = patched_config_file(*s, fix);
  REQUIRE(out.ok());
  CHECK(*out == R"({
    "zero_optimization": {
        "stage": 2,
        "overlap_comm": true,
        "offload_optimizer": {
            "device": "cpu"
        }
    },
    "train_micro_batch_size_per_gpu": "auto",
    "bf16": {
        "enabled": "auto"
    },
    "gradient_accumulation_steps": 4
}
)");
  // Read again, it is what the fix evaluated.
  RunSettings plain = run;
  plain.config_changes.clear();
  auto written = parse_ds_config_text(*out, path, plain);
  REQUIRE(written.ok());
  auto evaluated = evaluate_patch(*s, fix, {});
  REQUIRE(evaluated.ok());
  CHECK(resolved_config_json(*written) == resolved_config_json(*evaluated));
  // A file changed on disk since it was read is not patched.
  std::ofstream(path) << R"({"zero_optimization": {"stage": 1}})";
  CHECK_FALSE(patched_config_file(*s, fix).ok());
  std::remove(path.c_str());
}

TEST_CASE("run changes: flags, JSON, and folding a patch into the config text", "[suggest][patch]") {
  const std::vector<RunChange> rc = {{RunSetting::checkpoint_activations, 1}, {RunSetting::nodes, 2}};
  CHECK(describe(rc) == "--checkpoint-activations --nodes 2");
  CHECK(to_json(rc).dump() == R"([{"flag":"--checkpoint-activations","value":true},{"flag":"--nodes","value":2}])");
  CHECK(merge_run_changes(rc, {{RunSetting::nodes, 4}}) ==
        std::vector<RunChange>{{RunSetting::checkpoint_activations, 1}, {RunSetting::nodes, 4}});
  const ModelSpec m = model("llama2-7b");
  const Strategy s = shipped("zero2", run_for(m, 8));
  auto p = evaluate_patch(s, {{"zero_optimization.stage", 3}}, rc);
  REQUIRE(p.ok());
  CHECK(p->zero.stage == 3);
  CHECK(p->run.nodes == 2);
  CHECK(p->activation_checkpointing.enabled);
  auto folded = fold_config_changes(*p);
  REQUIRE(folded.ok());
  CHECK(folded->run.config_changes.empty());
  auto again = reload_strategy(*folded, folded->run);
  REQUIRE(again.ok());
  CHECK(again->zero.stage == 3);
  CHECK(resolved_config_json(*again) == resolved_config_json(*p));
}
