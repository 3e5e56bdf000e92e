// Run settings from the command line as the HF Trainer takes them: --bf16 / --fp16 against fp16/bf16 "enabled"
// (transformers' integrations/deepspeed.py, accelerate's DeepSpeedPlugin.set_mixed_precision), --micro-batch and
// --grad-accum as overrides of the file (ds_config changes, DeepSpeed's batch rule kept), --set changes in order,
// the sequence-length default, and a HuggingFace model folder as --model.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/model.h"
#include "core/paths.h"
#include "core/strategy.h"

using namespace zs::core;
namespace fs = std::filesystem;

namespace {

RunSettings world_of(int64_t nodes, int64_t gpus, int64_t hidden = 0) {
  RunSettings r;
  r.nodes = nodes;
  r.gpus_per_node = gpus;
  r.hidden = hidden;
  return r;
}

Strategy parse_ok(const std::string& text, const RunSettings& run) {
  auto s = parse_ds_config_text(text, "cfg.json", run);
  INFO(text);
  if (!s) FAIL(s.error().message);
  return *s;
}

std::string parse_err(const std::string& text, const RunSettings& run) {
  auto s = parse_ds_config_text(text, "cfg.json", run);
  INFO(text);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().kind == ErrorKind::bad_input);
  CHECK(s.error().message.rfind("cfg.json", 0) == 0);
  return s.error().message;
}

bool has_note(const Strategy& s, const std::string& fragment) {
  return std::any_of(s.notes.begin(), s.notes.end(),
                     [&](const std::string& n) { return n.find(fragment) != std::string::npos; });
}

RunSettings with_precision(Precision p) {
  RunSettings r = world_of(1, 1);
  r.hf_precision = p;
  return r;
}

// What the CLI does for --micro-batch / --grad-accum and --set: the flags' changes first, then the --set ones.
Strategy read_with_flags(const std::string& text, RunSettings run, const std::vector<std::string>& sets = {}) {
  run.config_changes = batch_setting_changes(nlohmann::json::parse(text), run);
  for (const auto& t : sets) {
    auto c = parse_config_change(t);
    REQUIRE(c.ok());
    run.config_changes.push_back(*c);
  }
  return parse_ok(text, run);
}

const fs::path& temp_dir() {
  struct Dir {
    fs::path path = fs::temp_directory_path() / ("zs_test_run_settings_" + std::to_string(::getpid()));
    ~Dir() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  };
  static const Dir dir;
  return dir.path;
}

const std::string kMicro1 = R"("train_micro_batch_size_per_gpu": 1)";

}  // namespace

// transformers src/transformers/integrations/deepspeed.py, HfTrainerDeepSpeedConfig.trainer_config_process:
// fill_match("fp16.enabled", args.fp16 ...) and fill_match("bf16.enabled", args.bf16 ...) replace "auto" with the
// TrainingArguments value; fill_match records a mismatch for an explicit value that differs, and
// trainer_config_finalize raises "Please correct the following DeepSpeed config values that mismatch
// TrainingArguments values".
TEST_CASE("flags: --bf16 / --fp16 fill fp16/bf16.enabled \"auto\" as TrainingArguments does", "[strategy][run_settings]") {
  const std::string both_auto =
      "{" + kMicro1 + R"(, "fp16": {"enabled": "auto", "loss_scale": 0}, "bf16": {"enabled": "auto"}})";
  Strategy b = parse_ok(both_auto, with_precision(Precision::bf16));
  CHECK(b.bf16.enabled);
  CHECK_FALSE(b.fp16.enabled);
  CHECK(b.model_dtype() == Precision::bf16);
  CHECK(has_note(b, "bf16.enabled: \"auto\" → true (HF --bf16)"));
  CHECK(has_note(b, "fp16.enabled: \"auto\" → false (HF --bf16)"));

  Strategy f = parse_ok(both_auto, with_precision(Precision::fp16));
  CHECK(f.fp16.enabled);
  CHECK_FALSE(f.bf16.enabled);
  CHECK(has_note(f, "fp16.enabled: \"auto\" → true (HF --fp16)"));

  Strategy none = parse_ok(both_auto, world_of(1, 1));  // no flag: TrainingArguments' fp16 = bf16 = False
  CHECK(none.model_dtype() == Precision::fp32);
  CHECK(has_note(none, "bf16.enabled: \"auto\" → false (HF bf16 default false)"));

  // The old block name "bfloat16" is DeepSpeed's alias of "bf16".
  Strategy old = parse_ok("{" + kMicro1 + R"(, "bfloat16": {"enabled": "auto"}})", with_precision(Precision::bf16));
  CHECK(old.bf16.enabled);
}

TEST_CASE("flags: --bf16 against a file that enables fp16 (or disables bf16) is HF's mismatch error",
          "[strategy][run_settings]") {
  // fill_match("fp16.enabled", False): ds fp16.enabled=True vs hf False → mismatch; accelerate's
  // DeepSpeedPlugin.set_mixed_precision raises too ("`--mixed_precision` arg cannot be set to `bf16` when `fp16` is
  // set in the DeepSpeed config file").
  CHECK_THAT(parse_err("{" + kMicro1 + R"(, "fp16": {"enabled": true}})", with_precision(Precision::bf16)),
             Catch::Contains("cfg.json: fp16.enabled: true contradicts --bf16") && Catch::Contains("fill_match") &&
                 Catch::Contains("write \"auto\" or false"));
  CHECK_THAT(parse_err("{" + kMicro1 + R"(, "bf16": {"enabled": true}})", with_precision(Precision::fp16)),
             Catch::Contains("cfg.json: bf16.enabled: true contradicts --fp16"));
  // fill_match("bf16.enabled", True) against an explicit false: the same mismatch.
  CHECK_THAT(
      parse_err("{" + kMicro1 + R"(, "bf16": {"enabled": false}})", with_precision(Precision::bf16)),
      Catch::Contains("cfg.json: bf16.enabled: false contradicts --bf16") && Catch::Contains("write \"auto\" or true"));
  // An explicit value that agrees is fine, and without a flag an explicit value stands (plain DeepSpeed).
  CHECK(parse_ok("{" + kMicro1 + R"(, "bf16": {"enabled": true}})", with_precision(Precision::bf16)).bf16.enabled);
  CHECK(parse_ok("{" + kMicro1 + R"(, "fp16": {"enabled": true}})", world_of(1, 1)).fp16.enabled);
}

// accelerate src/accelerate/utils/dataclasses.py, DeepSpeedPlugin.set_mixed_precision (run by the Trainer's
// Accelerator): a missing "bf16" block becomes {"enabled": True}, a missing "fp16" block {"enabled": True,
// "auto_cast": True}; a block without "enabled" is left alone (fill_match fills only "auto").
TEST_CASE("flags: --bf16 / --fp16 add the missing block as accelerate does", "[strategy][run_settings]") {
  Strategy b = parse_ok("{" + kMicro1 + "}", with_precision(Precision::bf16));
  CHECK(b.bf16.enabled);
  CHECK(has_note(b, "bf16: {\"enabled\":true} added for --bf16"));
  Strategy f = parse_ok("{" + kMicro1 + "}", with_precision(Precision::fp16));
  CHECK(f.fp16.enabled);
  CHECK(f.fp16.auto_cast);
  Strategy kept =
      parse_ok("{" + kMicro1 + R"(, "bf16": {"immediate_grad_update": true}})", with_precision(Precision::bf16));
  CHECK_FALSE(kept.bf16.enabled);
  CHECK(has_note(kept, "bf16.enabled is not in the file: DeepSpeed's default false stands"));
}

TEST_CASE("flags: --micro-batch / --grad-accum as ds_config changes: set, leave \"auto\", drop train_batch_size",
          "[strategy][run_settings]") {
  using nlohmann::json;
  RunSettings run = world_of(1, 4);
  run.hf_micro_batch = 4;
  // An explicit value that differs is set; the file's explicit train_batch_size is removed (null) so DeepSpeed's
  // rule recomputes it (_set_batch_related_parameters would otherwise assert tbs == micro × GA × world).
  CHECK(batch_setting_changes(json::parse(R"({"train_batch_size": 64, "train_micro_batch_size_per_gpu": 16})"), run) ==
        std::vector<ConfigChange>{{"train_micro_batch_size_per_gpu", 4}, {"train_batch_size", nullptr}});
  // A missing key is set too (otherwise DeepSpeed would infer it from train_batch_size and ignore the flag).
  CHECK(batch_setting_changes(json::parse(R"({"train_batch_size": 64})"), run) ==
        std::vector<ConfigChange>{{"train_micro_batch_size_per_gpu", 4}, {"train_batch_size", nullptr}});
  // "auto" is the HF pass's to fill; an explicit train_batch_size still goes.
  CHECK(batch_setting_changes(json::parse(R"({"train_micro_batch_size_per_gpu": "auto"})"), run).empty());
  CHECK(batch_setting_changes(json::parse(R"({"train_batch_size": 64, "train_micro_batch_size_per_gpu": "auto"})"),
                              run) == std::vector<ConfigChange>{{"train_batch_size", nullptr}});
  // The file already says it (4 or 4.0): nothing to change, train_batch_size kept.
  CHECK(batch_setting_changes(json::parse(R"({"train_batch_size": 16, "train_micro_batch_size_per_gpu": 4.0})"), run)
            .empty());
  CHECK(batch_setting_changes(json::parse(R"({"train_batch_size": "auto", "train_micro_batch_size_per_gpu": 16})"),
                              run) == std::vector<ConfigChange>{{"train_micro_batch_size_per_gpu", 4}});
  RunSettings ga = world_of(1, 4);
  ga.hf_grad_accum = 2;
  CHECK(batch_setting_changes(json::parse(R"({"train_micro_batch_size_per_gpu": 1})"), ga) ==
        std::vector<ConfigChange>{{"gradient_accumulation_steps", 2}});
  CHECK(batch_setting_changes(json::parse(R"({"train_batch_size": 64})"), world_of(1, 4)).empty());  // no flags
}

TEST_CASE("flags: --micro-batch overrides the file's value, train_batch_size recomputed, with a note",
          "[strategy][run_settings]") {
  const std::string file =
      R"({"train_batch_size": 64, "train_micro_batch_size_per_gpu": 16, "gradient_accumulation_steps": 1})";
  RunSettings run = world_of(1, 4);
  run.hf_micro_batch = 4;
  Strategy s = read_with_flags(file, run);
  CHECK(s.micro_batch_per_gpu == 4);
  CHECK(s.gradient_accumulation_steps == 1);
  CHECK(s.train_batch_size == 16);  // DeepSpeed's rule: micro × GA × world
  CHECK(has_note(s,
                 "--micro-batch 4 overrides train_micro_batch_size_per_gpu 16 from the file; train_batch_size "
                 "recomputed (the file's 64 is dropped)"));
  const auto resolved = nlohmann::json::parse(resolved_config_json(s));
  CHECK(resolved["train_micro_batch_size_per_gpu"] == 4);
  CHECK(resolved["train_batch_size"] == 16);
  // The same file read again under the same run settings (as a fit suggestion does) gives the same batch.
  auto again = reload_strategy(s, s.run);
  REQUIRE(again.ok());
  CHECK(again->train_batch_size == 16);

  RunSettings both = run;
  both.hf_grad_accum = 2;
  Strategy t = read_with_flags(file, both);
  CHECK(t.train_batch_size == 4 * 2 * 4);
  CHECK(has_note(t, "--grad-accum 2 overrides gradient_accumulation_steps 1 from the file"));

  // Filling "auto" needs no override note; the dropped explicit total still gets one.
  Strategy u = read_with_flags(R"({"train_batch_size": 64, "train_micro_batch_size_per_gpu": "auto"})", run);
  CHECK(u.train_batch_size == 16);
  CHECK(has_note(u, "--micro-batch 4: train_batch_size recomputed (the file's 64 is dropped)"));
}

TEST_CASE("flags: --set changes apply in order after the batch flags, each noted; the reader still judges them",
          "[strategy][run_settings]") {
  const std::string file = "{" + kMicro1 + R"(, "zero_optimization": {"stage": 2}})";
  RunSettings run = world_of(1, 1);
  run.hf_micro_batch = 4;
  Strategy s = read_with_flags(
      file, run,
      {"zero_optimization.stage=3", "zero_optimization.offload_param.device=cpu", "train_micro_batch_size_per_gpu=2"});
  CHECK(s.zero.stage == 3);
  CHECK(s.zero.offload_param.device == OffloadDevice::cpu);
  CHECK(s.micro_batch_per_gpu == 2);  // the later --set wins over --micro-batch
  CHECK(has_note(s, "zero_optimization.stage = 3 (a ds_config change, e.g. --set; the file: 2)"));
  CHECK(has_note(s,
                 "zero_optimization.offload_param.device = \"cpu\" (a ds_config change, e.g. --set; the file: unset)"));
  CHECK(has_note(s, "train_micro_batch_size_per_gpu = 2 (a ds_config change, e.g. --set; the file: 1)"));

  // A key the reader rejects gives the reader's own error, naming the file and the JSON path.
  RunSettings bad = world_of(1, 1);
  bad.config_changes = {*parse_config_change("zero_optimization.stagee=3")};
  CHECK_THAT(parse_err(file, bad),
             Catch::Contains("cfg.json: zero_optimization.stagee: unknown key; did you mean \"stage\"?"));
  CHECK_THAT(parse_config_change("zero_optimization").error().message,
             Catch::Contains("--set \"zero_optimization\": expected KEY.PATH=VALUE"));
}

TEST_CASE("the sequence length default is min(max_seq_len, 4096)", "[strategy][run_settings]") {
  auto qwen = import_hf_config(std::string(ZS_TEST_DATA) + "/hf/Qwen2-0.5B.json");  // max_position_embeddings 131072
  REQUIRE(qwen.ok());
  CHECK(qwen->max_seq_len == 131072);
  CHECK(default_seq_len(*qwen) == 4096);
  auto gpt2 = load_model("gpt2-124m");
  REQUIRE(gpt2.ok());
  CHECK(default_seq_len(*gpt2) == 1024);  // models within the cap keep their full length
  auto llama = load_model("llama2-7b");
  REQUIRE(llama.ok());
  CHECK(default_seq_len(*llama) == 4096);
}

TEST_CASE("flags: --model takes a HuggingFace model folder (its config.json); another directory is bad input",
          "[strategy][run_settings][model]") {
  const fs::path folder = temp_dir() / "Qwen2-0.5B-checkpoint";
  fs::create_directories(folder);
  fs::copy_file(std::string(ZS_TEST_DATA) + "/hf/Qwen2-0.5B.json", folder / "config.json",
                fs::copy_options::overwrite_existing);
  auto p = resolve_input(folder.string(), InputKind::model);
  REQUIRE(p.ok());
  CHECK(*p == (folder / "config.json").string());
  auto m = load_model(folder.string());
  REQUIRE(m.ok());
  CHECK(m->max_seq_len == 131072);
  CHECK(m->source == (folder / "config.json").string());

  const fs::path empty = temp_dir() / "no-config";
  fs::create_directories(empty);
  auto e = load_model(empty.string());
  REQUIRE_FALSE(e.ok());
  CHECK(e.error().kind == ErrorKind::bad_input);
  CHECK_THAT(e.error().message, Catch::StartsWith(empty.string() + ": is a directory without config.json") &&
                                    Catch::Contains("HuggingFace model folder holding config.json"));
  auto missing = load_model((temp_dir() / "nope" / "model").string());
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(missing.error().message,
             Catch::Contains("nope/model: no such file") && Catch::Contains("expected a shipped model name"));
  // A directory is never a ds_config or a hardware profile.
  CHECK_THAT(resolve_input(empty.string(), InputKind::deepspeed).error().message,
             Catch::Contains("is a directory; expected a shipped config name or a DeepSpeed ds_config JSON"));
}
