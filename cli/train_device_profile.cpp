// TrainRun's --write-device-profile (train_run.h): the host device probed around the run, its figures folded into
// a hardware profile and printed.
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

#include "cli/train_run.h"
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


namespace zs::cli::train {

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


}  // namespace zs::cli::train
