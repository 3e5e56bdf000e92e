#include "cli/inputs.h"

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "core/json_reader.h"
#include "core/paths.h"
#include "zs_git_commit.h"  // generated at build time: ZEROSIM_GIT_COMMIT (cmake/git_commit.cmake)

namespace zs::cli {

void add_input_flags(CLI::App& sub, InputFlags& f, bool model_required) {
  auto* m =
      sub.add_option("-m,--model", f.model,
                     "model: shipped name (zerosim models), models/*.json, a HF config.json, a HF model folder "
                     "holding config.json, or a model id ORG/NAME in the local HF cache ($HF_HUB_CACHE, $HF_HOME/hub, "
                     "~/.cache/huggingface/hub; no download)");
  if (model_required) m->required();
  sub.add_option("--peft", f.peft,
                 "PEFT adapter_config.json (peft_type LORA), or a folder holding one: train a LoRA adapter on the frozen model; with a model "
                 "whose config.json has a bitsandbytes quantization_config, QLoRA");
  sub.add_option("--hardware", f.hardware, "hardware profile: shipped name (zerosim hardware) or path")
      ->capture_default_str();
  sub.add_option("-c,--ds-config", f.ds_config,
                 "DeepSpeed config: shipped name (zerosim configs) or ds_config.json path")
      ->required();
  sub.add_option("--nodes", f.nodes, "nodes (default: the hardware profile's)");
  sub.add_option("--gpus-per-node", f.gpus_per_node, "GPUs (ranks) per node (default: the hardware profile's)");
  sub.add_option("--seq-len", f.seq_len,
                 "sequence length (default: min(the model's max_seq_len / max_position_embeddings, " +
                     std::to_string(core::kDefaultSeqLenCap) + "))");
  sub.add_option("--micro-batch", f.micro_batch,
                 "train_micro_batch_size_per_gpu (HF per_device_train_batch_size): fills \"auto\" and overrides the "
                 "file's value; an explicit train_batch_size is then recomputed (\"auto\" without it: 8)");
  sub.add_option("--grad-accum", f.grad_accum,
                 "gradient_accumulation_steps (HF's): fills \"auto\" and overrides the file's value; an explicit "
                 "train_batch_size is then recomputed (\"auto\" without it: 1)");
  auto* bf16 = sub.add_flag("--bf16", f.bf16,
                            "HF --bf16: bf16.enabled \"auto\" → true, fp16 \"auto\" → false; a file that enables fp16 "
                            "is an error (HF's mismatch)");
  auto* fp16 = sub.add_flag("--fp16", f.fp16,
                            "HF --fp16: fp16.enabled \"auto\" → true, bf16 \"auto\" → false; a file that enables bf16 "
                            "is an error");
  bf16->excludes(fp16);
  fp16->excludes(bf16);
  sub.add_option("--set", f.set,
                 "change a ds_config key before it is read, KEY.PATH=VALUE (VALUE as JSON, else text), e.g. "
                 "--set zero_optimization.stage=3; repeatable, applied in order after --micro-batch/--grad-accum")
      ->allow_extra_args(false);
  sub.add_flag(
      "--checkpoint-activations", f.checkpoint_activations,
      "activation checkpointing per block (HF gradient_checkpointing); implied by an activation_checkpointing block");
  sub.add_option("--launcher", f.launcher,
                 "how the ranks are started: deepspeed, torchrun or accelerate (sets each rank's CPU threads)")
      ->capture_default_str();
  sub.add_option("--omp-threads", f.omp_threads, "OMP_NUM_THREADS per rank as you export it (default: the launcher's)");
  sub.add_flag("--bind-cores-to-rank", f.bind_cores_to_rank,
               "deepspeed --bind_cores_to_rank: the cores split over ranks");
  sub.add_option("--attn-implementation", f.attn_implementation,
                 "HF attn_implementation: eager, sdpa (HF's default) or flash_attention_2")
      ->capture_default_str();
  sub.add_option("--deepspeed-version", f.deepspeed_version,
                 "the DeepSpeed release to model where releases differ (default " +
                     core::to_string(core::DeepSpeedVersion{}) + ")");
}

namespace {

core::Result<core::LaunchSettings> launch_settings(const InputFlags& f) {
  core::LaunchSettings l;
  auto launcher = core::parse_launcher(f.launcher);
  if (!launcher)
    return core::bad_input("--launcher \"" + f.launcher + "\" is not one of deepspeed, torchrun, accelerate");
  l.launcher = *launcher;
  auto attn = core::parse_attn_implementation(f.attn_implementation);
  if (!attn)
    return core::bad_input("--attn-implementation \"" + f.attn_implementation +
                           "\" is not one of eager, sdpa, flash_attention_2");
  l.attn_implementation = *attn;
  if (f.omp_threads < 0 || f.omp_threads > (1 << 16))
    return core::bad_input("--omp-threads " + std::to_string(f.omp_threads) + ": must be between 1 and 65536");
  if (f.omp_threads > 0) l.omp_threads_per_rank = f.omp_threads;
  if (f.bind_cores_to_rank && l.launcher != core::Launcher::deepspeed)
    return core::bad_input("--bind-cores-to-rank is the deepspeed launcher's flag; --launcher is " + f.launcher);
  l.bind_cores_to_rank = f.bind_cores_to_rank;
  return l;
}

// The key a model file names its longest sequence with, for the header's "default: min(KEY N, 4096)".
std::string max_seq_len_key(const core::ModelSpec& m) {
  if (m.description.rfind("imported from HuggingFace", 0) != 0) return "max_seq_len";
  return m.arch == core::Arch::gpt ? "n_positions" : "max_position_embeddings";
}

// A GPU profile without bf16 throughput (peak_tflops.bf16 0: V100 and older, compute capability < 8.0).
// A warning, not an error: fit, plan and simulate answer what the run needs, and bf16 needs the bytes fp16 does,
// so the answer holds (and is what someone moving the config to an Ampere GPU wants); whether the run starts
// depends on the software (transformers' TrainingArguments.__post_init__ raises "Your setup doesn't support
// bf16/gpu" when is_torch_bf16_gpu_available() is false, but that calls torch.cuda.is_bf16_supported(), whose
// including_emulation=True default lets a V100 pass and run bf16 emulated). So it is shown under the header.
std::string bf16_warning(const core::Hardware& h) {
  return "bf16 on " + h.gpu.name + ", which has no bf16 support (" + h.file +
         ": gpu.peak_tflops.bf16 is 0; bf16 needs compute capability 8.0, Ampere or newer). The memory figures "
         "hold, but the HF Trainer refuses it (\"Your setup doesn't support bf16/gpu\") where "
         "torch.cuda.is_bf16_supported() is false, and where torch counts emulation as support the run crawls or "
         "fails in a kernel without bf16. Use fp16 on this GPU (--fp16 or fp16.enabled true)";
}

// A reader error about a path a --set changed says so.
core::Error with_set_context(core::Error e, const InputFlags& f, const std::vector<core::ConfigChange>& sets) {
  for (size_t i = 0; i < sets.size(); ++i)
    if (e.message.find(" " + sets[i].path + ":") != std::string::npos ||
        e.message.find(" " + sets[i].path + " ") != std::string::npos) {
      e.message += " (from --set " + f.set[i] + ")";
      break;
    }
  return e;
}

}  // namespace

core::Result<core::ModelSpec> load_model_with_adapter(const std::string& model, const std::string& peft) {
  auto m = core::load_model(model);
  if (!m) return m.error();
  if (!peft.empty()) {
    // An adapter folder (save_pretrained's, a Trainer checkpoint) holds adapter_config.json.
    std::error_code ec;
    const bool folder = std::filesystem::is_directory(peft, ec);
    auto lora = core::load_peft_config(folder ? (std::filesystem::path(peft) / "adapter_config.json").string() : peft);
    if (!lora) return lora.error();
    m->adapter.kind = core::AdapterKind::lora;
    m->adapter.lora = std::move(*lora);
  }
  // A quantised base without an adapter, LoRA targets that match no layer: refused as PEFT and transformers would.
  if (auto st = core::validate_adapter(*m); !st.ok()) return st;
  return m;
}

core::Result<Inputs> load_inputs(const InputFlags& f) {
  std::vector<core::ConfigChange> sets;
  for (const auto& text : f.set) {
    auto c = core::parse_config_change(text);
    if (!c) return c.error();
    sets.push_back(std::move(*c));
  }
  if (f.bf16 && f.fp16) return core::bad_input("--bf16 and --fp16 exclude each other");
  Inputs in;
  auto m = load_model_with_adapter(f.model, f.peft);
  if (!m) return m.error();
  in.model = std::move(*m);
  auto h = core::load_hardware(f.hardware);
  if (!h) return h.error();
  in.hardware = std::move(*h);

  core::RunSettings run;
  run.nodes = f.nodes > 0 ? f.nodes : in.hardware.nodes;
  run.gpus_per_node = f.gpus_per_node > 0 ? f.gpus_per_node : in.hardware.gpus_per_node;
  if (f.nodes < 0 || f.gpus_per_node < 0 || f.seq_len < 0 || f.micro_batch < 0 || f.grad_accum < 0)
    return core::bad_input("--nodes, --gpus-per-node, --seq-len, --micro-batch and --grad-accum must be positive");
  if (run.gpus_per_node > in.hardware.gpus_per_node)
    return core::bad_input("--gpus-per-node " + std::to_string(run.gpus_per_node) + ": " + in.hardware.file + " has " +
                           std::to_string(in.hardware.gpus_per_node) + " GPUs per node");
  if (f.seq_len > 0) {
    run.seq_len = f.seq_len;
  } else {
    run.seq_len = core::default_seq_len(in.model);
    in.seq_len_origin = "default: min(" + max_seq_len_key(in.model) + " " + std::to_string(in.model.max_seq_len) +
                        ", " + std::to_string(core::kDefaultSeqLenCap) + "); --seq-len sets it";
  }
  if (in.model.position == core::Position::learned && run.seq_len > in.model.max_seq_len)
    return core::bad_input("--seq-len " + std::to_string(run.seq_len) + ": " + in.model.source +
                           " has learned positions for at most max_seq_len " + std::to_string(in.model.max_seq_len));
  run.hidden = in.model.hidden;
  run.checkpoint_activations = f.checkpoint_activations;
  if (f.micro_batch > 0) run.hf_micro_batch = f.micro_batch;
  if (f.grad_accum > 0) run.hf_grad_accum = f.grad_accum;
  if (f.bf16) run.hf_precision = core::Precision::bf16;
  if (f.fp16) run.hf_precision = core::Precision::fp16;
  auto launch = launch_settings(f);
  if (!launch) return launch.error();
  run.launch = *launch;
  if (!f.deepspeed_version.empty()) {
    auto v = core::parse_deepspeed_version(f.deepspeed_version);
    if (!v)
      return core::bad_input("--deepspeed-version \"" + f.deepspeed_version +
                             "\": expected MAJOR.MINOR.PATCH, e.g. 0.19.6");
    run.deepspeed_version = *v;
  }
  // The file is read once here to see which batch values the flags override, then by the reader with the changes.
  auto path = core::resolve_input(f.ds_config, core::InputKind::deepspeed);
  if (!path) return path.error();
  auto root = core::read_json_file(*path);
  if (!root) return root.error();
  run.config_changes = core::batch_setting_changes(*root, run);
  run.config_changes.insert(run.config_changes.end(), sets.begin(), sets.end());
  auto s = core::load_ds_config(*path, run);
  if (!s) return with_set_context(s.error(), f, sets);
  in.strategy = std::move(*s);
  if (in.strategy.model_dtype() == core::Precision::bf16 && in.hardware.gpu.peak_tflops_bf16 <= 0)
    in.warnings.push_back(bf16_warning(in.hardware));
  return in;
}

std::string seq_len_text(const Inputs& in) {
  const std::string n = "seq " + std::to_string(in.strategy.run.seq_len);
  return in.seq_len_origin.empty() ? n : n + " (" + in.seq_len_origin + ")";
}

std::string run_setting_flags(const InputFlags& f) {
  auto quoted = [](const std::string& t) {  // single-quoted unless it is plain
    const bool plain = t.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._=/-+") ==
                       std::string::npos;
    if (plain) return t;
    std::string q = "'";
    for (char c : t) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
  };
  std::string out;
  if (!f.peft.empty()) out += " --peft " + quoted(f.peft);
  if (f.bf16) out += " --bf16";
  if (f.fp16) out += " --fp16";
  for (const auto& t : f.set) out += " --set " + quoted(t);
  return out;
}

namespace {

std::string file_hash(const std::string& path) {  // FNV-1a 64 of the file's bytes
  std::ifstream f(path, std::ios::binary);
  if (!f) return "";
  uint64_t h = 1469598103934665603ull;
  char buf[1 << 14];
  while (f.read(buf, sizeof buf) || f.gcount() > 0)
    for (std::streamsize i = 0; i < f.gcount(); ++i) h = (h ^ static_cast<unsigned char>(buf[i])) * 1099511628211ull;
  char out[32];
  std::snprintf(out, sizeof out, "fnv1a64:%016llx", static_cast<unsigned long long>(h));
  return out;
}

std::string utc_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return b;
}

}  // namespace

core::Provenance provenance_for(const Inputs& in, const std::string& command_line) {
  core::Provenance pv;
  pv.command_line = command_line;
  pv.created_utc = utc_now();
  pv.git_commit = ZEROSIM_GIT_COMMIT;
  for (const std::string& f : {in.model.source, in.model.adapter.lora.source, in.hardware.file, in.strategy.source})
    if (!f.empty()) pv.input_hashes.push_back({f, file_hash(f)});
  pv.versions.push_back({"zerosim", ZEROSIM_VERSION});
#ifdef ZEROSIM_SIMGRID_VERSION
  pv.versions.push_back({"simgrid", ZEROSIM_SIMGRID_VERSION});
#endif
  return pv;
}

int exit_code_for(const core::Error& e) { return e.kind == core::ErrorKind::bad_input ? 2 : 3; }

}  // namespace zs::cli
