// Trace: what happened (or is predicted to happen) in one training step, op by op — the one schema the
// simulator and the real engine both write, so `zerosim compare` can hold them side by side (docs/TRACE.md).
//   Trace t; t.source = "simulate"; t.events.push_back({...}); write_trace_json(t, "pred.json");
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/plan.h"
#include "core/status.h"

namespace zs::core {

struct TraceEvent {
  uint32_t op = 0;  // Plan op id
  int32_t rank = 0;
  Stream stream = Stream::compute;
  OpKind kind = OpKind::forward;
  Phase phase = Phase::forward;
  int32_t layer = -1;
  int32_t micro_step = 0;
  double start_s = 0, end_s = 0;
  int64_t bytes = 0;
  double flops = 0;
};

struct MemorySample {
  double t_s = 0;
  std::array<int64_t, 3> bytes{};  // gpu, cpu, nvme occupancy
};

struct Provenance {
  std::string command_line;
  std::string git_commit;
  std::vector<std::pair<std::string, std::string>> input_hashes;  // file → sha256/fnv hex
  std::vector<std::pair<std::string, std::string>> versions;      // library → version
  std::string created_utc;
};

struct Trace {
  std::string source;  // "simulate" | "train"
  std::string schedule;
  double step_time_s = 0;
  std::vector<TraceEvent> events;
  std::vector<MemorySample> memory;  // per tier over time (rank 0 / node 0)
  std::array<int64_t, 3> peak_bytes{};
  // The framework's fixed bytes within peak_bytes (Plan::overhead_bytes: the CUDA context, the caching allocator's
  // reserve, the Python process). `simulate` prices a PyTorch run, which holds them; the engine allocates tensors
  // only, so its trace has 0, and `compare` sets them apart.
  std::array<int64_t, 3> overhead_bytes{};
  Provenance provenance;
};

// zerosim's trace JSON (docs/TRACE.md) and Chrome/Perfetto trace-event JSON.
std::string trace_to_json(const Trace& t);
Result<Trace> trace_from_json_file(const std::string& path);
std::string trace_to_chrome_json(const Trace& t);

// Forward, backward and optimizer seconds of a step (docs/SIM.md's rule): every instant of [0, step_s) belongs to
// the phase of the most recently started op still running, or, in a gap, of the next op to start; the three sum
// to step_s. The simulator, the engine and `compare` all use this one rule.
std::array<double, 3> phase_split(const std::vector<const TraceEvent*>& events, double step_s);
// The same over one rank's events of a trace, the step ending at that rank's last op.
std::array<double, 3> phase_split(const Trace& t, int32_t rank = 0);

}  // namespace zs::core
