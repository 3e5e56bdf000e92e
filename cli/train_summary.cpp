// TrainRun's summary (train_run.h): the steady state over the steps, text or JSON, with measured memory per tier.
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


}  // namespace zs::cli::train
