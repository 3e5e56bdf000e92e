// The host device's figures for the simulator: what its reference kernels achieve at one model's shapes — a GEMM
// rate and a memory-bound rate fitted to every module's measured forward time (time ≈ GEMM FLOPs / rate +
// memory-bound bytes / bandwidth, the cost model's own form, with the Plan's per-op FLOPs and bytes), the ratio of
// the modules' backward time to their forward time (measured.backward_time_ratio), and its copy bandwidth (H2D/D2H
// are memcpys), and how late a sleeping stream thread starts handed-over work. `zerosim probe` measures the machine
// (DRAM, CPU Adam, NVMe); this measures the stand-in GPU, so `simulate` can predict a `train --device host` run
// (docs/ENGINE.md "Validation"). When the optimizer runs on the CPU it also times the optimizer's CPU passes
// (unscale, Adam, the fp32 → lp cast) at the run's largest group on CPU Adam's threads, between the passes over the
// modules, so with the caches and threads as a training step leaves them; and with NVMe offload, swaps of the
// run's sizes. On a shared VM these rates move by 2x within an hour (docs/notes/engine-validation.md), so `zerosim probe`'s
// figures from earlier do not price this run.
//   auto hp = probe_host_device(model, strategy, plan);
//   core::Hardware h = apply_host_probe(probed_profile, *hp);
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/hardware.h"
#include "core/model.h"
#include "core/plan.h"
#include "core/status.h"
#include "core/strategy.h"
#include "core/trace.h"

namespace zs::probe {

struct HostDeviceProbe {
  double gemm_flops_per_s = 0;  // fitted GEMM rate (attention's QKᵀ and AV counted as GEMM, as the Plan does)
  double mem_bound_Bps = 0;     // fitted bandwidth of the memory-bound work
  double copy_Bps = 0;          // memcpy of 8 MiB between 4 KiB-aligned host buffers out of cache (median)
  // A copy's fixed cost: the median 64 KiB copy out of cache less its bytes at copy_Bps, at least 0 (the line
  // through the two sizes; measured.pcie_latency_us, where the simulator's default is a GPU's 10 us).
  double copy_latency_s = 0;
  double fit_rms_rel = 0;     // RMS relative error of the fit over the modules
  int modules = 0;            // samples in the fit (one per module: its forward)
  double backward_ratio = 0;  // Σ backward ÷ Σ forward time over those modules (the FLOPs say 2)
  // The host device's streams are threads: one that waited longer than stream_spin_s sleeps, and work handed to it
  // starts stream_wake_s late (a probe session: the median over handoffs from a busy stream to a sleeping one;
  // after a run, with_run_wakes: the run's own). CPU Adam's pool workers that slept join pool_wake_s late (0: not
  // measured, the simulator takes stream_wake_s).
  double stream_spin_s = 0, stream_wake_s = 0, pool_wake_s = 0;
  std::string wakes_from = "a stream pair's hand-offs in the sessions";  // where they come from, in words
  std::vector<core::StreamWake> stream_wake_pairs;  // per stream pair, where the run had enough (with_run_wakes)
  // What the figures were fitted to: each module's median forward and backward time (module order), the sessions
  // merged into them.
  std::vector<double> forward_s, backward_s;
  int sessions = 1;
  std::string module_times;  // where forward_s and backward_s come from, in words (the profile's source)
  std::string opt_times;     // where the optimizer's CPU passes come from (empty: the sessions' mean)
  // The Plan's forward and backward op of each module (micro-step 0, module order), and the model and tokens per
  // micro-batch the cost model prices them at: apply_host_probe's per-role time scales compare the two.
  std::vector<core::Op> forward_ops, backward_ops;
  core::ModelSpec model;
  int64_t tokens = 0;
  // The optimizer's CPU passes (opt_elements 0: the optimizer is not on the CPU): one group of opt_elements on
  // opt_threads threads; per pass the median over the session's repeats (merged: the mean of the sessions).
  int64_t opt_elements = 0;
  int opt_threads = 0;
  int64_t unscale_bytes = 0, cast_bytes = 0;  // bytes each pass moves (unscale: fp32 read + write)
  double unscale_s = 0, adam_s = 0, cast_s = 0;
  // NVMe swaps at the run's sizes (nvme_large 0: the Plan swaps nothing): the Plan's smallest and largest swap,
  // through the swapper on the ds_config's nvme_path and aio settings, 4 tensors out then in; each size's median
  // swap, [0] read kNvmeSettleS after its write, [1] at once (merged: the mean of the sessions).
  int64_t nvme_small = 0, nvme_large = 0;
  int64_t aio_block_size = 0, aio_queue_depth = 0;
  double read_small_s[2] = {}, read_large_s[2] = {}, write_small_s[2] = {}, write_large_s[2] = {};
  // A swap of the larger of the run's largest and 8 MiB after the path rested 3, 30 and 300 ms, over one at once
  // (measure_nvme_idle, 5 rounds; merged: the mean of the sessions' figures): (idle s, extra s).
  std::vector<std::pair<double, double>> nvme_idle;
  // The sessions' swap lines scaled to the run's own swaps (with_run_swaps; 1: as the sessions measured them): the
  // reads' and the writes' latency and time per byte, and the extra of the first swap after an idle path.
  double swap_scale_read = 1, swap_scale_write = 1, swap_scale_idle = 1;
  std::string swaps_from;  // in words (the profile's source); empty: not scaled
  // The optimizer's CPU passes scaled to the run's own CPU ops (with_run_cpu_ops; 1: as timed): the Adam op's (its
  // Adam rate and the unscale's) and the cast's.
  double adam_op_scale = 1, cast_op_scale = 1;
  std::string cpu_ops_from;  // in words; empty: not scaled
  // The copy rate scaled to the run's own copies (with_run_copies; 1: as timed): H2D's and D2H's time per byte.
  double h2d_scale = 1, d2h_scale = 1;
  std::string copies_from;  // in words; empty: not scaled
};

// With `earlier` (a probe of the same model and strategy, e.g. from before a training run): each module's time is
// the smaller of the two sessions', the copy rate the higher and its fixed cost the lower, the wake-up the shorter, and
// the rates are fitted to that. A session is ~2 s; on a shared VM a neighbour can slow all of one down (here: GEMM 2x
// slower in 2 of 12 runs), which the other session then outvotes. The optimizer's CPU passes and the swaps take the
// mean of the two sessions instead: they drift with the machine from second to second, and the run lies between the
// sessions.
core::Result<HostDeviceProbe> probe_host_device(const core::ModelSpec& m, const core::Strategy& s,
                                                const core::Plan& plan, const HostDeviceProbe* earlier = nullptr,
                                                int cpu_threads = 0);

// Every module of the model timed on the reference kernels, forward then backward, as probe_host_device does, with
// the model's buffers built once: `train --write-device-profile` runs a pass after each training step, so the module
// times are sampled through the run, in the same mix of the machine's speeds as its steps (a shared VM's switches
// between states ~1.6x apart every ~0.1 s and drifts over seconds).
struct ModulePass {
  std::vector<double> forward_s, backward_s;  // module order
  double unscale_s = 0, adam_s = 0, cast_s = 0;  // the optimizer's CPU passes (0: not timed)
};
class ModuleTimer {
 public:
  // With `plan`, a pass also times the optimizer's CPU passes at the Plan's largest CPU-updated group on
  // cpu_threads threads (0: every CPU), as probe_host_device does, if the Plan updates any on the CPU.
  static core::Result<std::unique_ptr<ModuleTimer>> create(const core::ModelSpec& m, const core::Strategy& s,
                                                           const core::Plan* plan = nullptr, int cpu_threads = 0);
  ~ModuleTimer();
  size_t modules() const;
  void pass(std::vector<double>& forward_s, std::vector<double>& backward_s);
  ModulePass pass();

 private:
  struct Impl;
  explicit ModuleTimer(std::unique_ptr<Impl> p);
  std::unique_ptr<Impl> p_;
};

// `p` with each module's forward and backward time the median over `passes` (ModuleTimer::pass of the same model and
// strategy; of an even count the mean of the middle two), the two rates and the backward ratio refitted to them;
// `how` names the passes in the profile's source. Where p timed the optimizer's CPU passes and every pass did too,
// each of those is the median over the passes as well. The other figures (copies, wake-up, swaps) stay the
// sessions'.
core::Result<HostDeviceProbe> with_module_times(HostDeviceProbe p, const std::vector<ModulePass>& passes,
                                                std::string how);

// The hand-offs to a sleeping stream in one executed step (the trace of a Plan's step, events by op id): for every
// op but an alloc or a release whose stream had waited longer than spin_s for it — from the end of the stream's
// previous op (or the step's start) to the last end among that op and the op's Plan dependencies — the delay from
// that end to the op's start. On a VM a thread woken onto the other, halted vCPU starts ~50 us late and one woken on
// its waker's ~10 us (docs/notes/engine-validation.md "Where the hand-offs wake"), so the figure that prices the engine's
// hand-offs is the mix its own Plan meets, which a probe of one stream pair cannot give. Each hand-off names its
// pair: `from` is the stream of the dependency that ended last (the simulator's waker), `to` the op's.
struct Handoff {
  core::Stream from = core::Stream::compute, to = core::Stream::compute;
  double delay_s = 0;
};
std::vector<Handoff> sleeping_stream_handoffs(const core::Plan& plan, const core::Trace& t, double spin_s);

// `p` with the stream wake-up the trimmed mean of the run's `handoffs` (sleeping_stream_handoffs) and the pool's
// the trimmed mean of `pool_wakes` (ThreadPool::take_wake_samples): a phase sums its hand-offs, so their mean cost
// prices it, and on a VM they are bimodal, ~10 and ~50 us (docs/notes/engine-validation.md "Where the hand-offs wake"), where a
// median picks one mode. And per stream pair with kMinWakeSamples or more, that pair's trimmed mean
// (stream_wake_pairs): which vCPU a woken thread lands on follows from what the streams around it do, so a pair
// keeps its cost from step to step (all-reduce → CPU Adam 3-7 us, cast → H2D 12-52 us; docs/notes/engine-validation.md "Hand-offs
// by stream pair"). Fewer than kMinWakeSamples of either leave that figure as it was. `steps` names the steps in
// the profile's source.
inline constexpr size_t kMinWakeSamples = 5;
HostDeviceProbe with_run_wakes(HostDeviceProbe p, const std::vector<Handoff>& handoffs,
                               const std::vector<double>& pool_wakes, const std::string& steps);
// The mean of `v` without its lowest and highest tenth (rounded down), 0 if empty.
double trimmed_mean(std::vector<double> v);

// One NVMe swap of an executed step as the simulator prices it (sim/executor.cpp): read or write, its bytes, how
// long it took, its data's age (since this step's last write of its tensors, else since the step's start) and how
// long the path had rested (since the last swap's end, else since the step's start).
struct RunSwap {
  bool read = false;
  int64_t bytes = 0;
  double took_s = 0, age_s = 0, idle_s = 0;
};
// The swaps of one step's trace (events by op id) that ran alone, in start order: one that shared the path with
// another took what the sharing left it, which a swap line alone does not price.
std::vector<RunSwap> run_swaps(const core::Plan& plan, const core::Trace& t);

// `p` with its swap lines scaled to the run's own `swaps` (run_swaps over the steps `steps` names): the sessions
// around a run time only 8 swaps of each kind, which spread far wider than the run's own (figures in
// docs/notes/engine-validation.md, "The run's own swaps, CPU ops and copies"). Per direction, over the swaps that did not follow an idle path (its extra under a quarter of the line's time), the scale
// is Σ measured over Σ priced (by `base` with p's figures: apply_host_probe), the tenth with the lowest and the tenth
// with the highest ratio left out; then the idle extra's scale, from the others, is Σ (measured − the scaled line) over
// Σ priced extra, in [0, 5]. Fewer than kMinWakeSamples swaps leave a scale at 1; without the sessions' lines
// (p.nvme_large 0) nothing changes.
HostDeviceProbe with_run_swaps(HostDeviceProbe p, const core::Hardware& base, const std::vector<RunSwap>& swaps,
                               const std::string& steps);

// One of the optimizer's CPU ops (adam_cpu, cast_cpu) of an executed step and CPU Adam's pool around it as the
// simulator sees it (sim/executor.cpp): a busy run is the CPU ops that follow each other within spin_s; rest_s is
// the pool's rest before the run's first op (from the end of the last CPU op, else the step's start), after_s how
// long after that op's start this one began.
struct RunCpuOp {
  core::Op op;
  double took_s = 0, rest_s = 0, after_s = 0;
};
// The CPU ops of one step's trace (events by op id), in start order.
std::vector<RunCpuOp> run_cpu_ops(const core::Plan& plan, const core::Trace& t, double spin_s);

// `p` with the optimizer's CPU passes scaled to the run's own CPU ops (run_cpu_ops over the steps `steps` names).
// The passes the timer runs after each step, on their own buffers after the module passes, took 7-40% longer than
// the run's own ops in the same run here (docs/notes/engine-validation.md "The run's own swaps, CPU ops and copies"). Per kind
// (Adam, cast), the scale is Σ (measured − the pool's wake-up as the simulator prices it) over Σ priced work (by `base`
// with p's figures: apply_host_probe), the tenth with the lowest and the tenth with the highest ratio left out. Fewer
// than kMinWakeSamples ops of a kind leave its scale at 1; without timed passes (p.opt_elements 0) nothing changes.
HostDeviceProbe with_run_cpu_ops(HostDeviceProbe p, const core::Hardware& base, const std::vector<RunCpuOp>& ops,
                                 const std::string& steps);

// One H2D or D2H copy of an executed step, from or to page-locked memory, that ran alone (no other copy at the same
// time: the simulator shares the host's link between them).
struct RunCopy {
  bool h2d = false;
  int64_t bytes = 0;
  double took_s = 0;
};
std::vector<RunCopy> run_copies(const core::Plan& plan, const core::Trace& t);

// `p` with the copy rate scaled, per direction, to the run's own copies (run_copies over the steps `steps` names):
// Σ (measured − the fixed cost) over Σ bytes at the timed rate, the tenth with the lowest and the tenth with the
// highest ratio left out. The probe copies 8 MiB out of cache; a step's copy often reads what the CPU has just
// written (the cast's lp parameters: 241 KB in 17-19 us here, where 8 MiB run at 6-7 GB/s; docs/notes/engine-validation.md "The
// run's own swaps, CPU ops and copies"). Fewer than kMinWakeSamples copies of a direction leave its scale at 1.
HostDeviceProbe with_run_copies(HostDeviceProbe p, const std::vector<RunCopy>& copies, const std::string& steps);

// `base` with, per module role, the modules' measured time over what the cost model then prices them at (forward;
// backward), measured.module_time_scale; and the GPU's peak TFLOPS = the fitted GEMM rate (measured gemm_efficiency 1),
// HBM = the fitted bandwidth (÷ the cost model's HBM efficiency for an unknown GPU, so the effective figure is the
// measured one), PCIe = the copy bandwidth (÷ p's copy scales per direction; the host link the faster of the two)
// and its fixed cost (measured.pcie_latency_us); with the optimizer's passes,
// CPU Adam = their Adam rate, cpu_pass_GBps = the unscale's bytes over its time and cpu_cast_GBps the cast's (÷ p's
// op scales); with the swaps, the NVMe lines (settled and at once) through the two sizes, fitted at the ds_config's
// aio settings and scaled by p.swap_scale_*; name and source say so.
core::Hardware apply_host_probe(core::Hardware base, const HostDeviceProbe& p);

// The RMS relative error, over the modules, of the forward times `h`'s cost model prices against the measured ones
// (apply_host_probe's profile: after the per-role time scales).
double role_scaled_fit_rms(const core::Hardware& h, const HostDeviceProbe& p);

}  // namespace zs::probe
