// `zerosim train`: train a GPT by executing the Plan (exec/engine.h) on a device — a progress line per step (loss,
// step time, tokens/s, peak per tier), --json per-step losses and a summary, --trace the most typical step in the same
// trace schema `simulate --raw-trace` writes, --checkpoint/--resume. Refuses a plan that does not fit with fit's
// report before allocating anything (exit 1).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>

#include "cli/commands.h"
#include "cli/cuda_module.h"
#include "cli/inputs.h"
#include "cli/not_fitting.h"
#include "cli/train_group.h"
#include "core/cost_model.h"
#include "core/json_reader.h"
#include "core/memory.h"
#include "core/plan.h"
#include "core/trace.h"
#include "exec/affinity.h"
#include "exec/checkpoint.h"
#include "exec/data.h"
#include "exec/engine.h"
#include "exec/host_device.h"
#include "probe/host_probe.h"
#include "exec/spin.h"
#ifdef ZEROSIM_HAVE_MPI
#include "exec/mpi_communicator.h"
#endif

namespace zs::cli {
namespace {

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

ordered_json tiers_json(const std::array<int64_t, 3>& b) { return {{"gpu", b[0]}, {"cpu", b[1]}, {"nvme", b[2]}}; }

std::string command_line(const Opts& o, const Inputs& in) {
  std::string c = "zerosim train --model " + in.model.source + " --hardware " + in.hardware.file + " --ds-config " +
                  in.strategy.source + " --device " + o.device + " --schedule " + o.schedule + " --seq-len " +
                  std::to_string(in.strategy.run.seq_len) + " --steps " + std::to_string(o.steps) + " --seed " +
                  std::to_string(o.seed);
  if (!o.data.empty()) c += " --data " + o.data;
  if (in.strategy.run.checkpoint_activations) c += " --checkpoint-activations";
  return c;
}

// fit's verdict for a plan that does not fit (the engine refuses it before allocating).
int report_not_fitting(const Opts& o, const Inputs& in, const core::Plan& plan) {
  const auto mo = exec::engine_memory_options();
  const core::MemoryReport r = core::memory_model(in.model, in.hardware, in.strategy, mo);
  const auto sug = core::suggest_fixes(in.model, in.hardware, in.strategy, mo);
  return print_not_fitting({in, plan, r, sug, " — nothing was allocated"}, o.json);
}

std::string bytes(int64_t b) { return b == 0 ? std::string("0") : core::format_bytes(b); }

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

bool TrainRun::load_and_check_inputs() {
  if (o.comm_timeout_s <= 0) return fail("--comm-timeout-s must be > 0", 2);
  InputFlags flags = o.in;
  if (G.world > 1 && flags.nodes == 0 && flags.gpus_per_node == 0) {
    // One rank per GPU: as many nodes as ranks with the hardware profile's GPUs each (the host device: one).
    auto hw = core::load_hardware(flags.hardware);
    const int64_t g = hw ? std::max<int64_t>(1, std::gcd<int64_t>(G.world, hw->gpus_per_node)) : 1;
    flags.gpus_per_node = g;
    flags.nodes = G.world / g;
  }
  auto loaded = load_inputs(flags);
  if (!loaded) return fail(loaded.error().message, exit_code_for(loaded.error()));
  in = std::move(*loaded);
  if (in->strategy.world() != G.world)
    return fail("--nodes x --gpus-per-node = " + std::to_string(in->strategy.world()) + " ranks, but mpirun started " +
                    std::to_string(G.world),
                2);
  if (G.world > 1 && (!o.checkpoint.empty() || o.resume))
    return fail("--checkpoint/--resume with more than one rank is not supported yet", 2);
  if (G.world > 1 && !o.device_profile.empty())
    return fail("--write-device-profile measures one process: run it without mpirun", 2);
  if (o.device != "host" && o.device != "cuda") return fail("--device " + o.device + ": not one of host, cuda", 2);
  if (o.device == "cuda") {
    std::string why;
    cuda = load_cuda_module(&why);
    if (!cuda) return fail("--device cuda: " + why, 2);
  }
  if (o.device == "cuda" && !o.device_profile.empty())
    return fail(
        "--write-device-profile measures the host device's kernels; a GPU's rates come from `zerosim probe "
        "--gpu`",
        2);
  if (o.steps < 0) return fail("--steps must be >= 0", 2);
  if (o.resume && o.checkpoint.empty()) return fail("--resume needs --checkpoint DIR", 2);
  if (in->model.vocab < 256)
    return fail(in->model.source + ": vocab " + std::to_string(in->model.vocab) +
                    " is below 256: byte-level tokens need a vocabulary of at least 256",
                2);
  return true;
}

bool TrainRun::plan_fits() {
  po.schedule = *core::parse_schedule(o.schedule);
  check = exec::engine_plan(in->model, in->hardware, in->strategy, po.schedule);
  if (!check.feasible) {
    exit_code = report_not_fitting(o, *in, check);
    return false;
  }
  return true;
}

bool TrainRun::load_corpus() {
  const int64_t window = in->strategy.run.seq_len + 1;
  if (!o.data.empty()) {
    auto c = exec::load_corpus_file(o.data, window);
    if (!c) return fail(c.error().message, exit_code_for(c.error()));
    corpus = std::move(*c);
  } else {
    corpus = exec::synthetic_corpus(o.data_bytes, o.seed);
  }
  return true;
}

bool TrainRun::bind_cores() {
  adam_threads = o.cpu_adam_threads;
  if (o.in.bind_cores_to_rank) {  // before the device and the engine start their threads: they inherit the set
    auto b = exec::bind_cores_to_rank(G.local_rank, G.local_size);
    if (!b) return fail(b.error().message, 3);
    binding = b->text;
    if (adam_threads <= 0) adam_threads = static_cast<int>(b->cores.size());
  }
  return true;
}

// The device, and on GPUs with several ranks the NCCL communicator the engine's collectives use (MPI, which
// started the ranks, moves NCCL's id and carries the host-side reductions of this command).
bool TrainRun::open_device() {
  if (o.device == "host") dev = exec::make_host_device({.memory_bytes = in->hardware.gpu.memory_bytes()});
  if (!cuda) return true;
  const exec::CudaAvailability a = cuda->available();
  if (!a.usable) return fail("--device cuda: " + a.reason, 2);
  const int ordinal = G.local_rank % std::max(1, a.device_count);
  auto d = cuda->make_device({.device = ordinal, .memory_bytes = in->hardware.gpu.memory_bytes()});
  if (!d) return fail(d.error().message, exit_code_for(d.error()));
  dev = std::move(*d);
  if (G.world > 1) {
    exec::NcclOptions no;
    no.rank = G.rank;
    no.world = G.world;
    no.cuda_device = ordinal;
    no.comm.timeout_s = o.comm_timeout_s;
    engine_started = true;  // a rank that fails here leaves the others in the id broadcast or NCCL's init
    auto c = cuda->make_nccl(no, [&](exec::NcclUniqueIdBytes& id) {
      return G.comm->broadcast(id.data(), static_cast<int64_t>(id.size()), 0, {.op_name = "NCCL unique id"});
    });
    if (!c) return fail(c.error().message, exit_code_for(c.error()));
    nccl = std::move(*c);
  }
  return true;
}

// The profile before training, and the timer whose passes between the steps give the modules' times.
bool TrainRun::start_device_profile() {
  if (!write_device_profile(nullptr, {}, {})) return false;
  auto t = probe::ModuleTimer::create(in->model, in->strategy, &check, adam_threads);
  if (!t) return fail(t.error().message, exit_code_for(t.error()));
  prof.module_timer = std::move(*t);
  return true;
}

// Probes the host device and writes the profile; `earlier` (after training): the probe before it, and the run's
// own wake-ups, swaps, CPU ops and copies scale the probe's.
bool TrainRun::write_device_profile(const probe::HostDeviceProbe* earlier, const std::vector<probe::ModulePass>& around,
                                    const std::string& how) {
  auto hp = probe::probe_host_device(in->model, in->strategy, check, earlier, adam_threads);
  if (hp && !around.empty()) hp = probe::with_module_times(std::move(*hp), around, how);
  if (hp && earlier) {
    hp = probe::with_run_wakes(std::move(*hp), prof.handoffs, prof.pool_wakes,
                               "the steps the trace's step is chosen from");
    hp = probe::with_run_swaps(std::move(*hp), in->hardware, prof.swaps, "the steps the trace's step is chosen from");
    hp = probe::with_run_cpu_ops(std::move(*hp), in->hardware, prof.cpu_ops,
                                 "the steps the trace's step is chosen from");
    hp = probe::with_run_copies(std::move(*hp), prof.copies, "the steps the trace's step is chosen from");
  }
  if (!hp) return fail(hp.error().message, exit_code_for(hp.error()));
  prof.device_probe = *hp;
  const core::Hardware profile = probe::apply_host_probe(in->hardware, *hp);
  core::Status w = core::write_file_atomic(o.device_profile, core::hardware_to_json(profile));
  if (!w.ok()) return fail(w.message(), 3);
  if (!o.json) print_device_profile(*hp, profile, earlier);
  return true;
}

void TrainRun::print_device_profile(const probe::HostDeviceProbe& hp, const core::Hardware& profile,
                                    const probe::HostDeviceProbe* earlier) const {
  char mb[64] = "folded into the GEMM rate";
  if (hp.mem_bound_Bps < 1e14) std::snprintf(mb, sizeof mb, "%.2f GB/s", hp.mem_bound_Bps / 1e9);
  char opt[640] = "";
  const core::MeasuredSpec& ms = profile.measured;
  if (ms.cpu_pass_GBps && ms.cpu_cast_GBps)  // the optimizer's CPU passes were timed
    std::snprintf(
        opt, sizeof opt, "; CPU Adam %.3g params/s, unscale %.1f GB/s, cast %.1f GB/s%s%s", *ms.cpu_adam_params_per_s,
        *ms.cpu_pass_GBps, *ms.cpu_cast_GBps, hp.cpu_ops_from.empty() ? "" : " (the passes scaled to the run's: ",
        hp.cpu_ops_from.empty() ? "" : (hp.cpu_ops_from.substr(hp.cpu_ops_from.find(": ") + 2) + ")").c_str());
  std::string idle;  // the first NVMe swap after the path rested
  for (const auto& w : ms.nvme_idle_wake) {
    char b[64];
    std::snprintf(b, sizeof b, "%s+%.0f us after %.0f ms", idle.empty() ? "" : ", ", w.extra_us, w.idle_ms);
    idle += b;
  }
  if (!idle.empty()) {
    idle = "; NVMe swap after an idle path " + idle;
    if (!hp.swaps_from.empty())
      idle += "; the sessions' swaps scaled to the run's: " + hp.swaps_from.substr(hp.swaps_from.find(": ") + 2);
    std::strncat(opt, idle.c_str(), sizeof opt - std::strlen(opt) - 1);
  }
  std::printf(
      "host device (%s): GEMM %.2f GFLOP/s, memory-bound work %s, backward %.2fx forward, copies %.2f GB/s%s "
      "(fit rms %.0f%%, %.0f%% after the per-role time scales), wake-ups: stream %.1f us, CPU pool %.1f us "
      "(%s)%s -> %s\n",
      earlier ? "after training, each module and the optimizer's CPU passes the median of the passes between the "
                "steps, the swaps the mean of the sessions, the CPU passes, swaps and copies scaled to the run's "
                "own ops"
              : "before training",
      hp.gemm_flops_per_s / 1e9, mb, hp.backward_ratio, hp.copy_Bps / 1e9,
      hp.copies_from.empty()
          ? ""
          : (" (scaled to the run's: " + hp.copies_from.substr(hp.copies_from.find(": ") + 2) + ")").c_str(),
      100 * hp.fit_rms_rel, 100 * probe::role_scaled_fit_rms(profile, hp), hp.stream_wake_s * 1e6,
      (hp.pool_wake_s > 0 ? hp.pool_wake_s : hp.stream_wake_s) * 1e6, hp.wakes_from.c_str(), opt,
      o.device_profile.c_str());
}

// The profile after training: module times from the passes after the steps the typical one is chosen from.
bool TrainRun::finish_device_profile() {
  const probe::HostDeviceProbe before = *prof.device_probe;
  std::vector<probe::ModulePass> around;
  std::string how;
  int64_t first = -1;
  for (size_t j = 0; j < prof.passes.size(); ++j)
    if (!history.phase_step.empty() && prof.pass_step[j] >= history.phase_step.front()) {
      around.push_back(prof.passes[j]);
      if (first < 0) first = history.start + prof.pass_step[j];
    }
  if (!around.empty()) {
    const std::string every =
        prof.pass_every == 1 ? "each step" : "every " + std::to_string(prof.pass_every) + " steps";
    how = around.size() == 1 ? "the pass after step " + std::to_string(first)
                             : "the median of " + std::to_string(around.size()) + " passes, one after " + every +
                                   " from step " + std::to_string(first) + " on";
    how += "; the trace written is the step nearest the run's median phases";
  }
  return write_device_profile(&before, around, how);
}

bool TrainRun::start_engine() {
  exec::Communicator& engine_comm = nccl ? *nccl : *G.comm;
  exec::EngineOptions eo;
  eo.schedule = po.schedule;
  eo.seed = o.seed;
  eo.cpu_adam_threads = adam_threads;
  eo.swap_chunk_bytes = o.swap_chunk;
  engine_started = true;  // from here a failing rank may leave others in a collective
  auto created = exec::Engine::create(in->model, in->hardware, in->strategy, check, *dev, engine_comm, eo);
  if (!created) return fail(created.error().message, exit_code_for(created.error()));
  engine = std::move(*created);
  exec::Engine& e = *engine;
  data.emplace(corpus, in->strategy.micro_batch_per_gpu, in->strategy.run.seq_len, o.seed);
  if (o.resume) {
    core::Status s = e.load_checkpoint(o.checkpoint, *data);
    if (!s.ok()) return fail(s.message(), exit_code_for(s.error()));
    if (!o.json && lead)
      std::printf("resumed from %s at step %lld\n", o.checkpoint.c_str(), static_cast<long long>(e.steps_done()));
  }
  return true;
}

void TrainRun::print_header() const {
  const auto& st = in->strategy;
  if (!o.json && lead) {
    std::printf("%s on %s, device %s, %s, ZeRO-%d, optimizer %s, params %s, %s, schedule %s\n", in->model.name.c_str(),
                in->hardware.name.c_str(), o.device.c_str(), st.source.c_str(), st.zero.stage,
                core::to_string(st.zero.offload_optimizer.device).c_str(),
                core::to_string(st.zero.offload_param.device).c_str(), core::to_string(st.model_dtype()).c_str(),
                o.schedule.c_str());
    std::printf("data %s: %zu bytes, unigram entropy %.3f nats; micro batch %lld x seq %lld, GA %lld\n",
                corpus.source.c_str(), corpus.bytes.size(), corpus.unigram_entropy_nats,
                static_cast<long long>(st.micro_batch_per_gpu), static_cast<long long>(st.run.seq_len),
                static_cast<long long>(st.gradient_accumulation_steps));
    if (G.world > 1)
      std::printf(
          "%d data-parallel ranks (MPI, collective timeout %g s): rank r trains on micro-batches r*GA .. "
          "r*GA+GA-1 of each step's %lld; global batch %lld sequences\n",
          G.world, o.comm_timeout_s, static_cast<long long>(G.world * st.gradient_accumulation_steps),
          static_cast<long long>(G.world * st.gradient_accumulation_steps * st.micro_batch_per_gpu));
  }
  if (!binding.empty())  // every rank says where it runs (stderr: stdout is rank 0's, and may be JSON)
    std::fprintf(stderr, "bind-cores-to-rank: %s; CPU Adam threads %d\n", binding.c_str(), adam_threads);
}

bool TrainRun::run_steps() {
  exec::Engine& e = *engine;
  history.start = e.steps_done();
  for (int64_t i = 0; i < o.steps; ++i) {
    auto r = e.step(*data);
    if (!r) {
      std::string where =
          o.checkpoint.empty() ? std::string() : " (the last checkpoint in " + o.checkpoint + " is intact)";
      return fail("step " + std::to_string(history.start + i) + " failed: " + r.error().message + where, 3);
    }
    ++history.done;
    const std::vector<double> pool_wake_now = e.take_pool_wake_samples();  // this step's, before the pass
    if (prof.module_timer && i % prof.pass_every == 0) {
      prof.passes.push_back(prof.module_timer->pass());
      prof.pass_step.push_back(i);
    }
    core::Status gs;
    const auto rank_peaks = gather_peaks(*G.comm, r->peak_bytes, gs);
    if (!gs.ok()) return fail("step " + std::to_string(history.start + i) + " failed: " + gs.message(), 3);
    r->peak_bytes = max_peaks(rank_peaks);  // the max over ranks
    r->tokens *= G.world;                   // the global batch's tokens
    if (i > 0 || o.steps == 1) {
      history.phases.push_back({r->phase_s[0], r->phase_s[1], r->phase_s[2]});
      history.phase_step.push_back(i);
      if (want_trace || prof.module_timer) {
        core::Trace t = e.last_trace();
        if (prof.module_timer) record_run_ops(t, pool_wake_now);
        if (want_trace) history.traces.push_back(std::move(t));
      }
    }
    history.time_sum += r->step_time_s;
    history.step_times.push_back(r->step_time_s);
    history.tokens += r->tokens;
    if (i == 0) history.first_loss = r->loss;
    history.last_loss = r->loss;
    if (lead) print_step(*r);
    if (!o.checkpoint.empty() && o.checkpoint_every > 0 && (i + 1) % o.checkpoint_every == 0 && !save()) return false;
  }
  return true;
}

// The step's own hand-offs, pool wake-ups, swaps, CPU ops and copies, which the profile after training scales to.
void TrainRun::record_run_ops(const core::Trace& t, const std::vector<double>& pool_wake_now) {
  const exec::Engine& e = *engine;
  const double spin_s = std::chrono::duration<double>(exec::kSpinBudget).count();
  for (const auto& h : probe::sleeping_stream_handoffs(e.plan(), t, spin_s)) prof.handoffs.push_back(h);
  for (double w : pool_wake_now) prof.pool_wakes.push_back(w);
  for (const auto& x : probe::run_swaps(e.plan(), t)) prof.swaps.push_back(x);
  for (const auto& x : probe::run_cpu_ops(e.plan(), t, spin_s)) prof.cpu_ops.push_back(x);
  for (const auto& x : probe::run_copies(e.plan(), t)) prof.copies.push_back(x);
}

void TrainRun::print_step(const exec::StepResult& r) {
  const double tps = static_cast<double>(r.tokens) / r.step_time_s;
  if (o.json) {
    history.steps.push_back(
        {{"step", r.step},
         {"loss", r.loss},
         {"grad_norm", r.grad_norm},
         {"loss_scale", r.loss_scale},
         {"skipped", r.skipped},
         {"step_time_s", r.step_time_s},
         {"tokens_per_s", tps},
         {"phases", {{"forward_s", r.phase_s[0]}, {"backward_s", r.phase_s[1]}, {"optimizer_s", r.phase_s[2]}}},
         {"peak_bytes", tiers_json(r.peak_bytes)}});
    return;
  }
  std::printf("step %4lld  loss %.4f  %8.1f ms  %9.0f tokens/s  peak gpu %s  cpu %s  nvme %s%s\n",
              static_cast<long long>(r.step), r.loss, 1e3 * r.step_time_s, tps, bytes(r.peak_bytes[0]).c_str(),
              bytes(r.peak_bytes[1]).c_str(), bytes(r.peak_bytes[2]).c_str(), r.skipped ? "  (skipped: overflow)" : "");
  std::fflush(stdout);
}

bool TrainRun::save() {
  core::Status s = engine->save_checkpoint(o.checkpoint, *data);
  if (!s.ok()) return fail("checkpoint to " + o.checkpoint + " failed: " + s.message(), 3);
  return true;
}

bool TrainRun::write_trace(size_t typical) {
  if (!want_trace || history.traces.empty() || !lead) return true;  // rank 0's trace (ranks are symmetric)
  core::Trace t = std::move(history.traces[typical]);
  t.provenance = provenance_for(*in, command_line(o, *in));
  for (const auto& [path, text] :
       {std::pair{o.trace, &core::trace_to_json}, std::pair{o.chrome_trace, &core::trace_to_chrome_json}}) {
    if (path.empty()) continue;
    core::Status w = core::write_file_atomic(path, text(t));
    if (!w.ok()) return fail(w.message(), 3);
  }
  return true;
}

SteadyState TrainRun::steady_state(const core::Plan& plan) const {
  const auto& st = in->strategy;
  SteadyState ss;
  if (!history.step_times.empty()) {
    std::vector<double> v(history.step_times.begin() + (history.step_times.size() > 1 ? 1 : 0),
                          history.step_times.end());
    std::sort(v.begin(), v.end());
    ss.step_s = v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  }
  const double steady_s = ss.step_s;
  ss.peak_flops = core::cost_model_for(in->hardware, st.model_dtype()).peak_flops;
  ss.model_tflops = steady_s > 0 ? plan.model_flops_per_step / steady_s / 1e12 : 0.0;
  ss.mfu = steady_s > 0 && ss.peak_flops > 0 ? plan.model_flops_per_step / steady_s / ss.peak_flops : 0.0;
  ss.tokens_per_s =
      steady_s > 0
          ? static_cast<double>(G.world * st.gradient_accumulation_steps * st.micro_batch_per_gpu * st.run.seq_len) /
                steady_s
          : 0.0;
  return ss;
}

bool TrainRun::report_summary() {
  exec::MeasuredMemory mm = engine->memory();
  core::Status gs;
  const auto rank_peaks = gather_peaks(*G.comm, mm.peak_bytes, gs);
  if (!gs.ok()) return fail(gs.message(), 3);
  mm.peak_bytes = max_peaks(rank_peaks);
  const SteadyState ss = steady_state(engine->plan());
  if (!lead) return true;
  if (o.json)
    print_summary_json(mm, rank_peaks, ss);
  else
    print_summary_text(mm, rank_peaks, ss);
  return true;
}

void TrainRun::print_summary_json(const exec::MeasuredMemory& mm, const std::vector<std::array<int64_t, 3>>& rank_peaks,
                                  const SteadyState& ss) const {
  const core::Plan& plan = engine->plan();
  const double time_sum = history.time_sum;
  ordered_json j;
  j["model"] = in->model.name;
  j["hardware"] = in->hardware.name;
  j["ds_config"] = in->strategy.source;
  j["device"] = o.device;
  j["schedule"] = o.schedule;
  j["data"] = {
      {"source", corpus.source}, {"bytes", corpus.bytes.size()}, {"unigram_entropy_nats", corpus.unigram_entropy_nats}};
  j["steps"] = history.steps;
  ordered_json ex = ordered_json::object();
  for (const auto& [k, v] : mm.extras) ex[k] = v;
  j["summary"] = {{"steps", history.done},
                  {"first_loss", history.first_loss},
                  {"last_loss", history.last_loss},
                  {"mean_step_time_s", history.done ? time_sum / static_cast<double>(history.done) : 0.0},
                  {"tokens_per_s", time_sum > 0 ? static_cast<double>(history.tokens) / time_sum : 0.0},
                  {"steady_step_time_s", ss.step_s},
                  {"steady_tokens_per_s", ss.tokens_per_s},
                  {"model_tflops_per_gpu", ss.model_tflops},
                  {"mfu", ss.mfu},
                  {"peak_bytes", tiers_json(mm.peak_bytes)},
                  {"plan_peak_bytes", tiers_json(plan.peak_bytes)},
                  {"static_bytes", tiers_json(mm.static_bytes)},
                  {"plan_static_bytes", tiers_json(plan.static_bytes)},
                  {"engine_extras_bytes", ex}};
  j["ranks"] = G.world;
  ordered_json pr = ordered_json::array();
  for (const auto& p : rank_peaks) pr.push_back(tiers_json(p));
  j["summary"]["per_rank_peak_bytes"] = pr;
  j["notes"] = engine->notes();
  j["warnings"] = dev->warnings();
  std::cout << j.dump(2) << "\n";
}

void TrainRun::print_summary_text(const exec::MeasuredMemory& mm, const std::vector<std::array<int64_t, 3>>& rank_peaks,
                                  const SteadyState& ss) const {
  const core::Plan& plan = engine->plan();
  const double time_sum = history.time_sum;
  const int64_t done = history.done;
  std::printf("%lld steps: loss %.4f -> %.4f (unigram entropy of the data %.3f nats); %.1f ms/step, %.0f tokens/s\n",
              static_cast<long long>(done), history.first_loss, history.last_loss, corpus.unigram_entropy_nats,
              done ? 1e3 * time_sum / static_cast<double>(done) : 0.0,
              time_sum > 0 ? static_cast<double>(history.tokens) / time_sum : 0.0);
  std::printf(
      "steady state (median step after the first): %.1f ms, %.0f tokens/s, %.2f model TFLOPS per GPU, "
      "MFU %.1f%% of %.0f TFLOPS %s\n",
      1e3 * ss.step_s, ss.tokens_per_s, ss.model_tflops, 100 * ss.mfu, ss.peak_flops / 1e12,
      core::to_string(in->strategy.model_dtype()).c_str());
  if (G.world > 1)
    for (size_t q = 0; q < rank_peaks.size(); ++q)
      std::printf("rank %zu peak     gpu %s  cpu %s  nvme %s\n", q, bytes(rank_peaks[q][0]).c_str(),
                  bytes(rank_peaks[q][1]).c_str(), bytes(rank_peaks[q][2]).c_str());
  std::printf("peak memory%s gpu %s (plan %s)  cpu %s (plan %s)  nvme %s (plan %s)\n", G.world > 1 ? " (max)" : "     ",
              bytes(mm.peak_bytes[0]).c_str(), bytes(plan.peak_bytes[0]).c_str(), bytes(mm.peak_bytes[1]).c_str(),
              bytes(plan.peak_bytes[1]).c_str(), bytes(mm.peak_bytes[2]).c_str(), bytes(plan.peak_bytes[2]).c_str());
  for (const auto& [k, v] : mm.extras) std::printf("engine buffer    %s: %s\n", k.c_str(), bytes(v).c_str());
  for (const auto& n : engine->notes()) std::printf("note: %s\n", n.c_str());
  for (const auto& w : dev->warnings()) std::printf("warning: %s\n", w.c_str());
  if (!o.checkpoint.empty())
    std::printf("checkpoint: %s (step %lld)\n", o.checkpoint.c_str(), static_cast<long long>(engine->steps_done()));
}

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
  TrainRun(o, *group, exit_code).run();
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
