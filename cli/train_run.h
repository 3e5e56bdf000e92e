// One `zerosim train` run (cmd_train.cpp registers the command): its options, what the steps leave for the
// summary and the trace, and TrainRun, whose pieces live in train_run.cpp (inputs, device, engine, steps),
// train_device_profile.cpp (--write-device-profile) and train_summary.cpp (the steady state, the summary).
#pragma once

#include <array>
#include <cstdint>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/cuda_module.h"
#include "cli/inputs.h"
#include "cli/train_group.h"
#include "core/plan.h"
#include "core/trace.h"
#include "exec/data.h"
#include "exec/engine.h"
#include "probe/host_probe.h"

namespace zs::cli::train {

using nlohmann::ordered_json;

struct Opts {
  InputFlags in;
  std::string device = "host";
  std::string schedule = "deepspeed";
  int64_t steps = 30;
  std::string data;
  int64_t data_bytes = 4 << 20;
  uint64_t seed = 1;
  std::string trace, chrome_trace;
  std::string checkpoint;
  int64_t checkpoint_every = 0;
  bool resume = false;
  bool json = false;
  int cpu_adam_threads = 0;
  int64_t swap_chunk = 0;
  std::string device_profile;
  double comm_timeout_s = 300;
};

ordered_json tiers_json(const std::array<int64_t, 3>& b);
std::string command_line(const Opts& o, const Inputs& in);
// fit's verdict for a plan that does not fit (the engine refuses it before allocating).
int report_not_fitting(const Opts& o, const Inputs& in, const core::Plan& plan);
std::string bytes(int64_t b);  // "0" or format_bytes


// The host device's profile (--write-device-profile): probed before training (written at once, so a failed run
// still leaves one) and again after it, the optimizer's CPU passes and swaps the mean of the two (they drift with
// the machine). The module times: a pass over every module runs after each step (after every k-th in a run of over
// 256 steps, so at most 256 passes), and the profile takes each module's median over the passes after the steps the
// typical step is chosen from. A shared VM's speed switches between states ~1.6x apart every ~0.1 s and drifts over
// seconds (docs/notes/engine-validation.md "Module times sampled through the run"), so sessions before and after the
// run priced a step made at another speed; samples spread through the run meet the same mix of states as its steps.
struct DeviceProfiling {
  std::optional<probe::HostDeviceProbe> device_probe;
  std::unique_ptr<probe::ModuleTimer> module_timer;
  std::vector<probe::ModulePass> passes;  // right after step pass_step[j] of this run
  std::vector<int64_t> pass_step;
  int64_t pass_every = 1;
  // The wake-ups: the run's own hand-offs to a sleeping stream and CPU Adam's pool wake-ups in those steps (where
  // a woken thread lands decides them, ~10 or ~50 us here, and a probe's one stream pair holds one of the two).
  std::vector<probe::Handoff> handoffs;
  std::vector<double> pool_wakes;
  std::vector<probe::RunSwap> swaps;     // and its NVMe swaps: the sessions' 8 of each kind miss the run's by up to 2x
  std::vector<probe::RunCpuOp> cpu_ops;  // and its CPU ops: the passes between the steps ran 7-40% slower
  std::vector<probe::RunCopy> copies;    // and its copies: a copy of what the CPU just wrote runs 2x the probe's
};

// What the steps leave for the summary and the trace.
struct StepLog {
  ordered_json steps = ordered_json::array();
  std::vector<double> step_times;
  double time_sum = 0, first_loss = 0, last_loss = 0;
  int64_t tokens = 0, done = 0;
  int64_t start = 0;  // the engine's step count before this run
  // The trace written is the most typical step (after the first, which warms caches and the allocator): the one
  // whose forward, backward and optimizer phases lie closest to their medians over the steps. One step is what
  // `simulate` predicts. The step of median duration alone left the optimizer phase, ~1% of the step, to chance:
  // on this 2-vCPU VM a run's optimizer phases are bimodal (4.1-4.9 ms and 6.0-7.4 ms in one run of 20 steps).
  std::vector<std::array<double, 3>> phases;  // of the steps the typical one is chosen from
  std::vector<int64_t> phase_step;            // their index in this run
  std::vector<core::Trace> traces;            // their traces, when one is written
};

// The steady state: the median step after the first (which initialises cuBLAS, the allocator's cache and the page
// cache); model FLOPs per GPU (the Plan's, without recompute) over it, and over the dtype's datasheet peak.
struct SteadyState {
  double step_s = 0, peak_flops = 0, model_tflops = 0, mfu = 0, tokens_per_s = 0;
};

// One `zerosim train` run on an open group. Members are declared in the order the run creates them, so they are
// destroyed in reverse: the engine before the device and the communicator it runs on. A piece that fails calls
// fail(), which reports, sets the exit code and returns false.

class TrainRun {
 public:
  TrainRun(const Opts& opts, Group& group, int& code)
      : o(opts),
        G(group),
        exit_code(code),
        lead(group.rank == 0),
        who(group.world > 1
                ? "zerosim train [rank " + std::to_string(group.rank) + "/" + std::to_string(group.world) + "]: "
                : "zerosim train: "),
        want_trace(!opts.trace.empty() || !opts.chrome_trace.empty()) {
    prof.pass_every = std::max<int64_t>(1, (opts.steps + 255) / 256);
  }

  void run() {
    if (!load_and_check_inputs() || !plan_fits() || !load_corpus() || !bind_cores() || !open_device()) return;
    if (!o.device_profile.empty() && !start_device_profile()) return;
    if (!start_engine()) return;
    print_header();
    if (!run_steps()) return;
    if (!o.checkpoint.empty() && !save()) return;
    const size_t typical = history.phases.empty() ? 0 : exec::most_typical(history.phases);
    if (prof.device_probe && !finish_device_profile()) return;
    if (!write_trace(typical)) return;
    if (!report_summary()) return;
    exit_code = 0;
  }

 private:
  bool fail(const std::string& msg, int code) {
    std::cerr << who << msg << "\n";
    std::cerr.flush();
    exit_code = code;
    if (G.world > 1 && engine_started) {
      std::cerr << who << "stopping every rank (MPI_Abort)\n";
      std::cerr.flush();
      G.abort(code);
    }
    return false;
  }

  bool load_and_check_inputs();
  bool plan_fits();
  bool load_corpus();
  bool bind_cores();
  bool open_device();
  bool start_device_profile();
  bool write_device_profile(const probe::HostDeviceProbe* earlier, const std::vector<probe::ModulePass>& around,
                            const std::string& how);
  void print_device_profile(const probe::HostDeviceProbe& hp, const core::Hardware& profile,
                            const probe::HostDeviceProbe* earlier) const;
  bool finish_device_profile();
  bool start_engine();
  void print_header() const;
  bool run_steps();
  void record_run_ops(const core::Trace& t, const std::vector<double>& pool_wake_now);
  void print_step(const exec::StepResult& r);
  bool save();
  bool write_trace(size_t typical);
  SteadyState steady_state(const core::Plan& plan) const;
  bool report_summary();
  void print_summary_json(const exec::MeasuredMemory& mm, const std::vector<std::array<int64_t, 3>>& rank_peaks,
                          const SteadyState& ss) const;
  void print_summary_text(const exec::MeasuredMemory& mm, const std::vector<std::array<int64_t, 3>>& rank_peaks,
                          const SteadyState& ss) const;

  const Opts& o;
  Group& G;
  int& exit_code;
  const bool lead;        // rank 0 prints; every rank reports its own errors
  const std::string who;  // the prefix of this rank's messages
  const bool want_trace;  // --trace or --chrome-trace
  bool engine_started = false;
  std::optional<Inputs> in;
  const CudaModule* cuda = nullptr;
  core::PlanOptions po;
  core::Plan check;  // made before anything is allocated, to refuse a run that does not fit
  exec::Corpus corpus;
  std::string binding;
  int adam_threads = 0;
  std::unique_ptr<exec::Device> dev;
  std::unique_ptr<exec::Communicator> nccl;
  DeviceProfiling prof;
  std::unique_ptr<exec::Engine> engine;
  std::optional<exec::DataLoader> data;
  StepLog history;
};

}  // namespace zs::cli::train
