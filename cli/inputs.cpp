#include "cli/inputs.h"

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>

#include "zs_git_commit.h"  // generated at build time: ZEROSIM_GIT_COMMIT (cmake/git_commit.cmake)

namespace zs::cli {

void add_input_flags(CLI::App& sub, InputFlags& f, bool model_required) {
  auto* m = sub.add_option("-m,--model", f.model, "model: shipped name (zerosim models), models/*.json or a HF config.json");
  if (model_required) m->required();
  sub.add_option("--hardware", f.hardware, "hardware profile: shipped name (zerosim hardware) or path")
      ->capture_default_str();
  sub.add_option("-c,--ds-config", f.ds_config, "DeepSpeed config: shipped name (zerosim configs) or ds_config.json path")
      ->required();
  sub.add_option("--nodes", f.nodes, "nodes (default: the hardware profile's)");
  sub.add_option("--gpus-per-node", f.gpus_per_node, "GPUs (ranks) per node (default: the hardware profile's)");
  sub.add_option("--seq-len", f.seq_len, "sequence length (default: the model's max_seq_len)");
  sub.add_option("--micro-batch", f.micro_batch, "value for \"auto\" micro batch (HF per_device_train_batch_size, default 8)");
  sub.add_option("--grad-accum", f.grad_accum, "value for \"auto\" gradient_accumulation_steps (HF default 1)");
  sub.add_flag("--checkpoint-activations", f.checkpoint_activations,
               "activation checkpointing per block (HF gradient_checkpointing); implied by an activation_checkpointing block");
  sub.add_option("--launcher", f.launcher,
                 "how the ranks are started: deepspeed, torchrun or accelerate (sets each rank's CPU threads)")
      ->capture_default_str();
  sub.add_option("--omp-threads", f.omp_threads, "OMP_NUM_THREADS per rank as you export it (default: the launcher's)");
  sub.add_flag("--bind-cores-to-rank", f.bind_cores_to_rank, "deepspeed --bind_cores_to_rank: the cores split over ranks");
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
  if (!launcher) return core::bad_input("--launcher \"" + f.launcher + "\" is not one of deepspeed, torchrun, accelerate");
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

}  // namespace

core::Result<Inputs> load_inputs(const InputFlags& f) {
  Inputs in;
  auto m = core::load_model(f.model);
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
  run.seq_len = f.seq_len > 0 ? f.seq_len : in.model.max_seq_len;
  if (in.model.position == core::Position::learned && run.seq_len > in.model.max_seq_len)
    return core::bad_input("--seq-len " + std::to_string(run.seq_len) + ": " + in.model.source +
                           " has learned positions for at most max_seq_len " + std::to_string(in.model.max_seq_len));
  run.hidden = in.model.hidden;
  run.checkpoint_activations = f.checkpoint_activations;
  if (f.micro_batch > 0) run.hf_micro_batch = f.micro_batch;
  if (f.grad_accum > 0) run.hf_grad_accum = f.grad_accum;
  auto launch = launch_settings(f);
  if (!launch) return launch.error();
  run.launch = *launch;
  if (!f.deepspeed_version.empty()) {
    auto v = core::parse_deepspeed_version(f.deepspeed_version);
    if (!v) return core::bad_input("--deepspeed-version \"" + f.deepspeed_version + "\": expected MAJOR.MINOR.PATCH, e.g. 0.19.6");
    run.deepspeed_version = *v;
  }
  auto s = core::load_strategy(f.ds_config, run);
  if (!s) return s.error();
  in.strategy = std::move(*s);
  return in;
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
  for (const std::string& f : {in.model.source, in.hardware.file, in.strategy.source})
    if (!f.empty()) pv.input_hashes.push_back({f, file_hash(f)});
  pv.versions.push_back({"zerosim", ZEROSIM_VERSION});
#ifdef ZEROSIM_SIMGRID_VERSION
  pv.versions.push_back({"simgrid", ZEROSIM_SIMGRID_VERSION});
#endif
  return pv;
}

int exit_code_for(const core::Error& e) { return e.kind == core::ErrorKind::bad_input ? 2 : 3; }

}  // namespace zs::cli
