// TrainRun (train_run.h): the inputs, the device, the engine and the steps of one `zerosim train` run.
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

ordered_json tiers_json(const std::array<int64_t, 3>& b) { return {{"gpu", b[0]}, {"cpu", b[1]}, {"nvme", b[2]}}; }

std::string command_line(const Opts& o, const Inputs& in) {
  std::string c = "zerosim train --model " + in.model.source + " --hardware " + in.hardware.file + " --ds-config " +
                  in.strategy.source + " --device " + o.device + " --schedule " + o.schedule + " --seq-len " +
                  std::to_string(in.strategy.run.seq_len) + " --steps " + std::to_string(o.steps) + " --seed " +
                  std::to_string(o.seed);
  if (!o.data.empty()) c += " --data " + o.data;
  c += run_setting_flags(o.in);
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
  if (const std::string why = core::engine_refusal(in->model); !why.empty())
    return fail(in->model.source + ": " + why, 2);
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


}  // namespace zs::cli::train
