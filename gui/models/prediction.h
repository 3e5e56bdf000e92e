// Prediction: what the app shows about one simulated (or measured) training step — the trace, the phase split,
// throughput, MFU, the bottleneck in words, exposed transfer time and the bandwidths each tier would need.
// predict() is the one place the simulator plugs in (make_plan → cost model → sim::simulate → sim::summarize);
// without SimGrid the app still builds and predict() says so.
//   Result<Prediction> p = predict(scenario);           // blocking: call it from a Job (jobs.h)
//   Result<Prediction> m = measured(*p, trace);         // a real run's trace read with the same definitions
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/plan.h"
#include "core/status.h"
#include "core/trace.h"
#include "gui/models/scenario.h"

namespace zs::gui {

struct Exposed {
  std::string key, label;  // "cpu_adam", "CPU Adam"
  double active_s = 0;     // time the category is busy
  double exposed_s = 0;    // part of that with the GPU idle
};

// One optimizer pass or kind of copy (sim/breakdown.h): its simulated time, the part the GPU did not hide, its rate.
struct StepPart {
  std::string key, label;  // "cpu_adam", "CPU Adam (DeepSpeedCPUAdam: ...)"; "d2h.grads", "16-bit gradients GPU→host"
  std::string name;        // short: "CPU Adam"
  double busy_s = 0, exposed_s = 0;
  double rate_GBps = 0;
  double gparams_per_s = 0;  // optimizer passes that update parameters; 0 otherwise
  int64_t ops = 0;
};

// A schedule or setting that would hide exposed optimizer or copy time, simulated (sim/advice.h).
struct AdviceRow {
  std::string change, hides;
  double step_time_s = 0, saved_s = 0;
};

struct Required {
  std::string label;       // "PCIe host→GPU"
  double need_GBps = 0;    // per GPU, for the target GPU efficiency
  double has_GBps = 0;
  bool short_ = false;
};

struct Prediction {
  bool feasible = true;            // false: the plan does not fit (a result, not an error)
  std::string infeasible_reason;   // "gpu overflows at op 1234 (backward layer 7): needs …"
  core::Trace trace;
  double step_time_s = 0;
  double forward_s = 0, backward_s = 0, optimizer_s = 0;  // partition the step
  double tokens_per_s = 0, samples_per_s = 0;
  double model_tflops_per_gpu = 0, hardware_tflops_per_gpu = 0, mfu = 0;
  double gpu_efficiency = 0;       // GPU compute time / step
  std::string bottleneck;          // in words
  std::string bottleneck_key;      // "gpu_compute", "cpu_adam", ...
  std::vector<Exposed> exposed;
  std::vector<Required> required;
  // The CPU side as launched (threads per rank, running, NUMA nodes of the states, the launcher's rule) and each
  // optimizer pass and copy; what would hide the exposed part.
  std::string cpu_threads;
  std::vector<StepPart> passes, copies;
  std::vector<AdviceRow> advice;
  double target_efficiency = 0.9;
  std::vector<std::pair<std::string, double>> utilization;  // resource kind → busy fraction
  std::array<int64_t, 3> peak_bytes{};      // simulated timeline (gpu per rank, cpu/nvme per node)
  std::array<int64_t, 3> capacity_bytes{};
  int64_t ops = 0;                 // ops per rank in the plan
  int64_t simulated_gpus = 0;
  double wall_s = 0;               // simulator wall time
  std::vector<std::string> notes;
  // The plan the trace executes and the simulator's machine model: a measured trace of the same config is read
  // against them (measured()). Opaque here so sim/ headers stay out of the GUI.
  std::shared_ptr<const core::Plan> plan;
  struct SimContext;
  std::shared_ptr<const SimContext> sim;
};

// Whether this build has the simulator (SimGrid found at configure time).
bool simulator_available();

// Plans and simulates one step of `s`. Progress reports go to `progress` (0..1, what), from the calling thread.
// `cancel` is polled between stages; the simulation itself runs to its end (sim has no cancellation point).
using ProgressFn = void (*)(void* ctx, double fraction, const char* what);
// `with_advice`: also simulate what would hide the exposed time (sim/advice.h; the Simulate tab shows it, a sweep
// cell does not need it).
core::Result<Prediction> predict(const Scenario& s, const std::atomic<bool>* cancel = nullptr,
                                 ProgressFn progress = nullptr, void* ctx = nullptr, bool with_advice = true);

// A measured trace (zerosim train --trace) read with the prediction's definitions — phases, throughput,
// exposure — against the same plan. An error when its ops are not that plan's (another config's trace).
core::Result<Prediction> measured(const Prediction& predicted, const core::Trace& trace);

// Per-phase times of any trace on its own (rank 0: a phase spans its first start to its last end), for traces
// that do not match the current plan.
std::array<double, 3> phase_spans(const core::Trace& t);

}  // namespace zs::gui
