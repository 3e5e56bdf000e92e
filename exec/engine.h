// Engine: trains a GPT by executing the Plan — the same ops, streams and dependencies the simulator predicts —
// on a Device: ZeRO stages 0-3, parameters and optimizer states at home on GPU, CPU or NVMe (through the
// Swapper), CPU Adam, gradient clipping, GA, activation checkpointing with recompute, the deepspeed, dpu and
// overlap schedules, dynamic loss scaling for fp16. It allocates what the Plan counts (docs/ENGINE.md lists
// the few engine-side buffers the Plan does not model) and refuses an infeasible Plan before allocating anything.
//   auto dev = make_host_device({.memory_bytes = hw.gpu.memory_bytes()});
//   auto comm = make_single_rank_communicator();
//   auto e = Engine::create(model, hw, strategy, *dev, *comm, {.schedule = core::Schedule::deepspeed});
//   DataLoader data(corpus, strategy.micro_batch_per_gpu, strategy.run.seq_len, 1);
//   for (int i = 0; i < 30; ++i) { auto r = (*e)->step(data); std::cout << r->loss << "\n"; }
#pragma once

#include <array>
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
#include "exec/communicator.h"
#include "exec/data.h"
#include "exec/device.h"
#include "exec/io_env.h"

namespace zs::exec {

struct EngineOptions {
  core::Schedule schedule = core::Schedule::deepspeed;
  uint64_t seed = 1;         // parameter initialisation (and nothing else: the data loader has its own)
  int cpu_adam_threads = 0;  // 0: every CPU this process may use
  bool trace = true;         // keep the last step's events and memory timeline
  bool fsync_checkpoints = true;
  IoEnv* io_env = nullptr;  // the swapper's file and aio access (nullptr: the real one; tests inject faults)
  // The swapper's I/O chunk (and aio block): 0 = the ds_config's aio.block_size, as DeepSpeed does. The swapper
  // also keeps one pool buffer of this size to bounce ragged last pages — the one CPU allocation beyond the
  // Plan on NVMe runs; 4096 makes it negligible at the cost of small I/Os.
  int64_t swap_chunk_bytes = 0;
};

// The memory the engine plans with: no framework overheads (CUDA context, caching-allocator reserve, Python
// process), which the Plan adds for PyTorch but this engine does not have, so what it measures is what it
// allocated.
core::MemoryOptions engine_memory_options();
// The Plan the engine executes: make_plan with engine_memory_options().
core::Plan engine_plan(const core::ModelSpec& m, const core::Hardware& hw, const core::Strategy& s,
                       core::Schedule schedule);

struct StepResult {
  int64_t step = 0;       // optimizer steps taken before this one (0-based index of this step)
  double loss = 0;        // mean token loss over the step's micro-batches
  double grad_norm = 0;   // global gradient L2 norm (unscaled; of the gradients this step's update used)
  double loss_scale = 1;  // in effect for this step (fp16), 1 otherwise
  bool skipped = false;   // fp16 overflow: no update
  double step_time_s = 0;
  std::array<double, 3> phase_s{};  // forward, backward, optimizer (docs/SIM.md's rule: the most recently started op)
  int64_t tokens = 0;               // this rank's tokens in the step
  std::array<int64_t, 3> peak_bytes{};  // measured, gpu / cpu / nvme, since the engine was created
};

// Measured occupancy per tier and the engine's own allocations outside the Plan (listed, with bytes).
struct MeasuredMemory {
  std::array<int64_t, 3> peak_bytes{};    // since create()
  std::array<int64_t, 3> static_bytes{};  // after create(), before the first op
  std::array<int64_t, 3> in_use_bytes{};
  std::vector<std::pair<std::string, int64_t>> extras;  // "backward residual gradients (2 x [N, C])" → bytes
};

class Engine {
 public:
  // Builds the Plan and refuses it when infeasible (ErrorKind::bad_input, fit's reason) or when the engine does
  // not support something in it (ErrorKind::unsupported) — both before any allocation. Then allocates the static
  // memory, initialises the parameters (seeded), and writes NVMe-resident states to their swap files.
  // The Plan is the caller's (made by engine_plan, as `zerosim train` shows it); its schedule must be o.schedule.
  static core::Result<std::unique_ptr<Engine>> create(const core::ModelSpec& m, const core::Hardware& hw,
                                                      const core::Strategy& s, core::Plan plan, Device& dev,
                                                      Communicator& comm, const EngineOptions& o = {});
  // The same with the Plan made here (engine_plan(m, hw, s, o.schedule)).
  static core::Result<std::unique_ptr<Engine>> create(const core::ModelSpec& m, const core::Hardware& hw,
                                                      const core::Strategy& s, Device& dev, Communicator& comm,
                                                      const EngineOptions& o = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // One optimizer step: every GA micro-step of the Plan, then the optimizer phase.
  core::Result<StepResult> step(DataLoader& data);

  // Training state (lp params, fp32 master, exp_avg, exp_avg_sq, pending dpu gradients, loss scaler, optimizer
  // step, data position) — NVMe-resident states are read through the swapper. load() restores all of it.
  core::Status save_checkpoint(const std::string& dir, const DataLoader& data) const;
  core::Status load_checkpoint(const std::string& dir, DataLoader& data);

  const core::Plan& plan() const;
  int64_t steps_done() const;
  MeasuredMemory memory() const;
  core::Trace last_trace() const;          // events of the last step (times from its start), memory timeline
  std::vector<std::string> notes() const;  // deviations from the Plan, once each
  // How late CPU Adam's pool workers that had gone to sleep woke for a run (ThreadPool::take_wake_samples), since
  // the last call.
  std::vector<double> take_pool_wake_samples();
  // fp32 master parameters / lp parameters in parameter order (copies; NVMe states are swapped in).
  core::Result<std::vector<float>> master_params() const;
  core::Result<std::vector<uint16_t>> lp_params_bits() const;  // 16-bit models only

  struct Impl;

 private:
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The most typical of several steps' phase times (forward, backward, optimizer): the index of the step whose
// phases lie closest to their medians over all steps, by the sum of |ln(phase / median)| (phases whose median is 0
// do not count; ties go to the earlier step). 0 for one step; `steps` must not be empty.
size_t most_typical(const std::vector<std::array<double, 3>>& steps);

}  // namespace zs::exec
