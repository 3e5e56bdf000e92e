// `zerosim train`: train a GPT by executing the Plan (exec/engine.h) on a device — a progress line per step (loss,
// step time, tokens/s, peak per tier), --json per-step losses and a summary, --trace the most typical step in the same
// trace schema `simulate --raw-trace` writes, --checkpoint/--resume. Refuses a plan that does not fit with fit's
// report before allocating anything (exit 1).
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/train_run.h"

namespace zs::cli {
namespace {

using train::Opts;

void run_train(const Opts& o, int& exit_code) {
  if (!o.in.deepspeed_version.empty()) {
    // The engine executes the newest modelled release's schedule; older releases are for fit, plan and simulate.
    std::cerr << "zerosim train: --deepspeed-version: the engine runs DeepSpeed "
              << core::to_string(core::DeepSpeedVersion{})
              << "'s schedule only (fit, plan and simulate model others)\n";
    exit_code = 2;
    return;
  }
  auto group = make_group(o.comm_timeout_s);
  if (!group) {
    std::cerr << "zerosim train: " << group.error().message << "\n";
    exit_code = group.error().kind == core::ErrorKind::bad_input ? 2 : 3;
    return;
  }
  train::TrainRun(o, *group, exit_code).run();
}

}  // namespace

void add_train(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<Opts>();
  auto* sub = app.add_subcommand(
      "train",
      "train a GPT by executing the Plan (ZeRO-Offload/Infinity on this machine); under `mpirun -np N` with N "
      "data-parallel ranks (MPI collectives, rank 0 prints)");
  add_input_flags(*sub, o->in);
  sub->add_option("--device", o->device,
                  "where the GPU work runs: host (a CPU stand-in with the profile's GPU memory) or cuda (the GPU "
                  "of this rank's local index)")
      ->capture_default_str();
  sub->add_option("--schedule", o->schedule, "op schedule: deepspeed (default), dpu (delayed update), overlap")
      ->check(CLI::IsMember({"deepspeed", "dpu", "overlap"}));
  sub->add_option("--steps", o->steps, "optimizer steps to run")->capture_default_str();
  sub->add_option("--data", o->data, "train on this file's bytes (vocab 256); default: a built-in synthetic corpus");
  sub->add_option("--data-bytes", o->data_bytes, "size of the synthetic corpus")->capture_default_str();
  sub->add_option("--seed", o->seed, "parameter initialisation, data order and synthetic corpus")
      ->capture_default_str();
  sub->add_option("--trace", o->trace,
                  "write the trace (zerosim schema, as simulate --raw-trace) of the most typical step (each phase "
                  "nearest its median) to FILE.json");
  sub->add_option("--chrome-trace", o->chrome_trace, "the same step as Chrome/Perfetto trace events, to FILE.json");
  sub->add_option("--checkpoint", o->checkpoint,
                  "checkpoint folder: written after the last step (and every --checkpoint-every)");
  sub->add_option("--checkpoint-every", o->checkpoint_every, "also checkpoint every K steps");
  sub->add_flag("--resume", o->resume, "continue from the checkpoint in --checkpoint DIR (bit-identical)");
  sub->add_flag("--json", o->json, "print per-step losses and a summary as JSON");
  sub->add_option("--cpu-adam-threads", o->cpu_adam_threads, "CPU Adam threads (default: every CPU)");
  sub->add_option(
      "--swap-chunk-bytes", o->swap_chunk,
      "NVMe I/O chunk (default: the ds_config's aio.block_size); the swapper keeps one bounce buffer of it");
  sub->add_option("--comm-timeout-s", o->comm_timeout_s,
                  "under mpirun: a collective not complete within this many seconds fails with the op and the "
                  "missing ranks named, and every rank stops (MPI_Abort)")
      ->capture_default_str();
  sub->add_option("--write-device-profile", o->device_profile,
                  "measure the host device's kernels (GEMM, memory-bound, copies) at this model's shapes and write "
                  "--hardware with those figures to FILE.json, for `simulate` (docs/ENGINE.md)");
  sub->callback([o, &exit_code] { run_train(*o, exit_code); });
}

}  // namespace zs::cli
