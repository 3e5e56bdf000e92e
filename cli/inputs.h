// The three inputs every planning command takes (model, hardware, ds_config) plus the run flags outside
// ds_config, resolved into core values with clear errors (exit 2).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/hardware.h"
#include "core/model.h"
#include "core/status.h"
#include "core/strategy.h"
#include "core/trace.h"

namespace CLI {
class App;
}

namespace zs::cli {

struct InputFlags {
  std::string model;
  std::string peft;  // PEFT adapter_config.json: train a LoRA adapter on the frozen (possibly quantised) model
  std::string hardware = "dgx2";
  std::string ds_config;
  int64_t nodes = 0;             // 0: from the hardware profile
  int64_t gpus_per_node = 0;     // 0: from the hardware profile
  int64_t seq_len = 0;           // 0: core::default_seq_len (min(max_seq_len, 4096))
  int64_t micro_batch = 0;       // HF per_device_train_batch_size: fills "auto", overrides the file; 0: not given
  int64_t grad_accum = 0;        // HF gradient_accumulation_steps: fills "auto", overrides the file; 0: not given
  bool bf16 = false;             // HF --bf16: bf16.enabled "auto" → true (RunSettings::hf_precision)
  bool fp16 = false;             // HF --fp16
  std::vector<std::string> set;  // --set KEY.PATH=VALUE, in order (core::parse_config_change)
  bool checkpoint_activations = false;
  std::string launcher = "deepspeed";        // deepspeed | torchrun | accelerate
  int64_t omp_threads = 0;                   // OMP_NUM_THREADS per rank as exported; 0: the launcher's rule
  bool bind_cores_to_rank = false;           // deepspeed --bind_cores_to_rank
  std::string attn_implementation = "sdpa";  // HF attn_implementation: eager | sdpa | flash_attention_2
  std::string deepspeed_version;             // "0.13.3"; empty: the newest modelled
};

struct Inputs {
  core::ModelSpec model;
  core::Hardware hardware;
  core::Strategy strategy;
  std::string seq_len_origin;         // "" when --seq-len gave it; else how the default was reached
  std::vector<std::string> warnings;  // shown under the header: the run is likely to fail or crawl (bf16 on a V100)
};

// Registers --model/-m, --peft, --hardware, --ds-config/-c, --nodes, --gpus-per-node, --seq-len, --micro-batch,
// --grad-accum, --bf16/--fp16, --set, --checkpoint-activations, and the launch flags (--launcher, --omp-threads,
// --bind-cores-to-rank, --attn-implementation) on a subcommand.
void add_input_flags(CLI::App& sub, InputFlags& f, bool model_required = true);
// The ds_config is read with, in order, the --micro-batch / --grad-accum overrides (core::batch_setting_changes)
// and each --set as RunSettings::config_changes.
core::Result<Inputs> load_inputs(const InputFlags& f);
// The model with --peft's LoRA adapter applied; a quantised base (quantization_config) without one is refused.
core::Result<core::ModelSpec> load_model_with_adapter(const std::string& model, const std::string& peft);

// "seq 4096 (default: min(max_position_embeddings 131072, 4096); --seq-len sets it)", or "seq 2048" when given.
std::string seq_len_text(const Inputs& in);
// " --peft a.json --bf16 --set 'a.b=3'": the run-setting flags as typed again (for a trace's command line); "" when none.
std::string run_setting_flags(const InputFlags& f);

// A trace's provenance: the command line as typed again, the time (UTC), a hash of each input file, the git
// commit this binary was built from, and library versions.
core::Provenance provenance_for(const Inputs& in, const std::string& command_line);

// Exit code for a failed Result: 2 for bad input, 3 for I/O or internal faults.
int exit_code_for(const core::Error& e);

}  // namespace zs::cli
