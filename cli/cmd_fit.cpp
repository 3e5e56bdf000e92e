// `zerosim fit`: does (model, hardware, ds_config) fit, per tier, and what to change if not.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "cli/not_fitting.h"
#include "core/estimator.h"
#include "core/json_reader.h"
#include "core/memory.h"
#include "core/patch.h"

namespace zs::cli {
namespace {

using nlohmann::json;

json row_json(const core::EstimateRow& r) {
  json j;
  j["offload_param"] = r.offload_param ? json(*r.offload_param) : json(nullptr);
  j["offload_optimizer"] = r.offload_optimizer;
  j["zero_init"] = r.zero_init ? json(*r.zero_init) : json(nullptr);
  j["per_cpu_bytes"] = r.per_cpu_bytes;
  j["per_gpu_bytes"] = r.per_gpu_bytes;
  return j;
}

json estimate_rows_json(const core::Estimate& e) {
  json rows = json::array();
  for (const auto& r : e.rows) rows.push_back(row_json(r));
  return rows;
}

// DeepSpeed's estimator for the same setup, and the row matching this config when there is one.
json deepspeed_estimate_json(const Inputs& in, const core::MemoryReport& r, std::string* human) {
  const auto& z = in.strategy.zero;
  json j;
  j["stage"] = z.stage;
  if (z.stage < 2) {
    j["row"] = nullptr;
    j["note"] = "DeepSpeed has no ZeRO-0/1 estimator (issue #5102)";
    return j;
  }
  core::Estimate e = z.stage == 2
                         ? core::estimate_zero2_all_cold(r.sizes.params, in.strategy.run.gpus_per_node, in.strategy.run.nodes)
                         : core::estimate_zero3_all_cold(r.sizes.params, r.sizes.largest_module,
                                                         in.strategy.run.gpus_per_node, in.strategy.run.nodes);
  j["rows"] = estimate_rows_json(e);
  j["quirks"] = e.quirks;
  const std::string opt = z.offload_optimizer.device == core::OffloadDevice::none ? "none" : "cpu";
  const std::string par = z.offload_param.device == core::OffloadDevice::none ? "none" : "cpu";
  j["row"] = nullptr;
  for (const auto& row : e.rows) {
    if (row.offload_optimizer != opt) continue;
    if (z.stage == 3 && (row.offload_param != par || row.zero_init != true)) continue;
    j["row"] = row_json(row);
    *human = "DeepSpeed estimator (model states only): per GPU " + core::format_bytes(row.per_gpu_bytes) + ", per node CPU " +
             core::format_bytes(row.per_cpu_bytes);
    if (z.offload_optimizer.device == core::OffloadDevice::nvme || z.offload_param.device == core::OffloadDevice::nvme)
      *human += " (its offload=cpu row: the estimator has no NVMe rows)";
    break;
  }
  if (z.offload_optimizer.device == core::OffloadDevice::nvme || z.offload_param.device == core::OffloadDevice::nvme)
    j["note"] = "the estimator has no NVMe rows: nvme is shown as its cpu row";
  if (j["row"].is_null()) j["note"] = "the estimator skips this offload combination";
  if (r.sizes.trainable < r.sizes.stored && !j["row"].is_null()) {
    // estimate_zero*_model_states_mem_needs takes one parameter count and trains all of it.
    j["note"] = "the estimator trains every parameter: it knows no frozen base or adapter";
    *human += " (it trains every parameter; this run trains " + std::to_string(r.sizes.trainable) + ")";
  }
  return j;
}

json adapter_json(const core::ModelSpec& m) {
  const core::AdapterSpec& a = m.adapter;
  json j;
  j["kind"] = a.lora_enabled() ? "lora" : "none";
  if (a.lora_enabled()) {
    j["r"] = a.lora.r;
    j["lora_alpha"] = a.lora.alpha;
    j["lora_dropout"] = a.lora.dropout;
    j["target_modules"] = a.lora.all_linear ? json("all-linear") : json(a.lora.target_modules);
    j["modules_to_save"] = a.lora.modules_to_save;
    j["bias"] = a.lora.bias;
    j["use_dora"] = a.lora.use_dora;
    j["file"] = a.lora.source;
  }
  if (a.quant.enabled())
    j["quantization"] = {{"kind", core::to_string(a.quant.kind)},
                         {"bits", a.quant.bits()},
                         {"double_quant", a.quant.double_quant},
                         {"storage", a.quant.storage}};
  return j;
}

json fit_json(const Inputs& in, const core::MemoryReport& r, const std::vector<core::Suggestion>& sug, const json& est) {
  json j;
  j["fits"] = r.fits;
  j["verdict"] = core::to_string(core::verdict(r));  // fits | tight (under 3% headroom) | does_not_fit
  j["deepspeed_version"] = core::to_string(in.strategy.run.deepspeed_version);  // the release whose behaviour is modelled
  j["binding_tier"] = r.binding ? json(core::to_string(*r.binding)) : json(nullptr);
  j["model"] = {{"name", in.model.name},
                {"family", core::to_string(in.model.arch)},
                {"params", r.sizes.params},
                {"trainable_params", core::trainable_parameter_count(in.model)},
                {"active_params", core::active_parameter_count(in.model)},
                {"largest_layer_params", r.sizes.largest_module}};
  if (in.model.adapter.lora_enabled() || in.model.adapter.quant.enabled()) j["model"]["adapter"] = adapter_json(in.model);
  j["hardware"] = {{"name", in.hardware.name}, {"file", in.hardware.file}};
  j["run"] = {{"nodes", in.strategy.run.nodes},
              {"gpus_per_node", in.strategy.run.gpus_per_node},
              {"seq_len", in.strategy.run.seq_len},
              {"micro_batch_per_gpu", in.strategy.micro_batch_per_gpu},
              {"gradient_accumulation_steps", in.strategy.gradient_accumulation_steps},
              {"activation_checkpointing", in.strategy.activation_checkpointing.enabled}};
  json tiers = json::object();
  for (core::Tier t : core::kTiers) {
    const auto& tr = r.tier(t);
    json b = json::object();
    for (const auto& i : tr.items) b[i.key] = b.value(i.key, int64_t{0}) + i.bytes;
    tiers[core::to_string(t)] = {{"required_bytes", tr.required_bytes}, {"capacity_bytes", tr.capacity_bytes},
                                 {"pinned_bytes", tr.pinned_bytes},     {"scope", tr.scope},
                                 {"fits", tr.fits()},                   {"breakdown", b}};
  }
  j["tiers"] = tiers;
  j["suggestions"] = suggestions_json(sug);
  j["limits"] = limits_json(r);
  j["problems"] = r.problems;
  if (!in.warnings.empty()) j["warnings"] = in.warnings;
  j["notes"] = r.notes;
  for (const auto& n : in.strategy.notes) j["notes"].push_back(n);
  j["deepspeed_estimate"] = est;
  j["resolved_config"] = json::parse(core::resolved_config_json(in.strategy));
  return j;
}

void print_human(const Inputs& in, const core::MemoryReport& r, const std::vector<core::Suggestion>& sug,
                 const std::string& est_line) {
  const auto& s = in.strategy;
  std::printf("%s (%s) on %s: %lld node x %lld GPU, %s\n", in.model.name.c_str(), core::parameter_summary(in.model).c_str(),
              in.hardware.name.c_str(), static_cast<long long>(s.run.nodes), static_cast<long long>(s.run.gpus_per_node),
              s.source.c_str());
  std::printf("ZeRO-%d, optimizer %s, params %s, %s, %s, micro batch %lld, GA %lld%s; as DeepSpeed %s\n",
              s.zero.stage, core::to_string(s.zero.offload_optimizer.device).c_str(),
              core::to_string(s.zero.offload_param.device).c_str(), core::to_string(s.model_dtype()).c_str(),
              seq_len_text(in).c_str(), static_cast<long long>(s.micro_batch_per_gpu),
              static_cast<long long>(s.gradient_accumulation_steps),
              s.activation_checkpointing.enabled ? ", activation checkpointing" : "",
              core::to_string(s.run.deepspeed_version).c_str());
  for (const auto& w : in.warnings) std::printf("warning: %s\n", w.c_str());
  std::printf("\n");
  std::printf("  %-5s %12s %12s %6s  %-9s %s\n", "tier", "required", "capacity", "use", "scope", "largest items");
  for (core::Tier t : core::kTiers) {
    const auto& tr = r.tier(t);
    if (tr.required_bytes == 0 && t == core::Tier::nvme) continue;
    auto items = tr.items;
    std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.bytes > b.bytes; });
    std::string top;
    for (size_t i = 0; i < items.size() && i < 3; ++i)
      top += (i ? ", " : "") + items[i].key + " " + core::format_bytes(items[i].bytes);
    double use = tr.capacity_bytes > 0 ? 100.0 * tr.required_bytes / tr.capacity_bytes : 0;
    std::printf("  %-5s %12s %12s %5.0f%%%s %-9s %s\n", core::to_string(t).c_str(),
                core::format_bytes(tr.required_bytes).c_str(), core::format_bytes(tr.capacity_bytes).c_str(), use,
                tr.fits() ? " " : "!", tr.scope.c_str(), top.c_str());
  }
  if (r.tier(core::Tier::cpu).pinned_bytes > 0)
    std::printf("  (CPU pinned: %s — counts against ulimit -l)\n", core::format_bytes(r.tier(core::Tier::cpu).pinned_bytes).c_str());
  std::printf("\n");
  for (const auto& p : r.problems) std::printf("problem: %s\n", p.c_str());
  if (r.fits && core::verdict(r) == core::Verdict::tight) {
    const auto& b = r.tier(*r.binding);
    std::printf("verdict: TIGHT (tightest tier %s, %s headroom = %.1f%% of %s: under %.0f%%, within the memory model's "
                "uncertainty; it may not fit)\n",
                core::to_string(*r.binding).c_str(), core::format_bytes(b.headroom_bytes()).c_str(),
                100.0 * static_cast<double>(b.headroom_bytes()) / static_cast<double>(b.capacity_bytes),
                core::format_bytes(b.capacity_bytes).c_str(), 100 * core::kTightHeadroomFraction);
  } else if (r.fits) {
    const auto& b = r.tier(*r.binding);
    std::printf("verdict: FITS (tightest tier %s, %s headroom)\n", core::to_string(*r.binding).c_str(),
                core::format_bytes(b.headroom_bytes()).c_str());
  } else if (r.binding && r.tier(*r.binding).fits()) {
    // Every tier has room: what fails is DeepSpeed itself (an assert it raises for this config, printed above).
    std::printf("verdict: DOES NOT FIT (every tier has room, but DeepSpeed refuses this config: %zu problem%s above)\n",
                r.problems.size(), r.problems.size() == 1 ? "" : "s");
  } else if (r.binding) {
    const auto& b = r.tier(*r.binding);
    std::printf("verdict: DOES NOT FIT (%s needs %s, has %s: short by %s)\n", core::to_string(*r.binding).c_str(),
                core::format_bytes(b.required_bytes).c_str(), core::format_bytes(b.capacity_bytes).c_str(),
                core::format_bytes(-b.headroom_bytes()).c_str());
  }
  print_fixes(sug, sug.size(),
              "fixes, cheapest first (✓ fits, ~ tight, - helps; --apply-fix N --write-config FILE writes one):");
  print_limits(r);
  if (!est_line.empty()) std::printf("%s\n", est_line.c_str());
  for (const auto& n : s.notes) std::printf("note: %s\n", n.c_str());
}

// --apply-fix N --write-config FILE: the ds_config as read from disk with fix N's patch, written atomically; the
// run flags the fix needs besides. Exit 0 when written, 2 for a bad N, 3 when the file cannot be written.
int write_fix(const Inputs& in, const InputFlags& flags, const std::vector<core::Suggestion>& sug, int n,
              const std::string& path, std::ostream& msg) {
  if (sug.empty()) {
    std::cerr << "zerosim fit: --apply-fix " << n << ": there are no fixes to apply ("
              << (core::memory_model(in.model, in.hardware, in.strategy).fits ? "it fits as it is" : "none found")
              << ")\n";
    return 2;
  }
  if (n < 1 || static_cast<size_t>(n) > sug.size()) {
    std::cerr << "zerosim fit: --apply-fix " << n << ": out of range; the fixes are numbered 1 to " << sug.size()
              << "\n";
    return 2;
  }
  const core::Suggestion& fix = sug[static_cast<size_t>(n - 1)];
  auto text = core::patched_config_file(in.strategy, fix.changes);
  if (!text) {
    std::cerr << "zerosim fit: " << text.error().message << "\n";
    return exit_code_for(text.error());
  }
  if (core::Status st = core::write_file_atomic(path, *text); !st.ok()) {
    std::cerr << "zerosim fit: " << st.message() << "\n";
    return exit_code_for(st.error());
  }
  const size_t k = fix.changes.size();
  msg << "wrote " << path << ": " << in.strategy.source << " with fix " << n << " ("
      << (k == 0 ? std::string("no ds_config change") : std::to_string(k) + " ds_config change" + (k == 1 ? "" : "s"))
      << ")\n";
  // The file holds what --set (and --micro-batch / --grad-accum over explicit values) changed: given again, a --set
  // could undo a key the fix changes, so it is left out; the batch flags are as before (they fill "auto").
  if (!flags.set.empty()) msg << "  it holds this run's --set changes: leave those --set flags out\n";
  if (!fix.run_changes.empty())
    msg << "also pass " << core::describe(fix.run_changes) << " (in place of the same flags given before)\n";
  return 0;
}

}  // namespace

void add_fit(CLI::App& app, int& exit_code) {
  struct Opts {
    InputFlags in;
    bool json = false;
    int apply_fix = 0;
    std::string write_config;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = app.add_subcommand("fit", "does it fit? per-tier memory (GPU, CPU, NVMe), the verdict and ranked fixes");
  add_input_flags(*sub, o->in);
  sub->add_flag("--json", o->json, "print the report as JSON");
  auto* apply =
      sub->add_option("--apply-fix", o->apply_fix, "with --write-config: write fix N (as numbered in the list)");
  auto* write = sub->add_option("--write-config", o->write_config,
                                "with --apply-fix: write the ds_config with that fix applied to FILE (keys, order and "
                                "\"auto\" values of the file kept)");
  sub->callback([o, &exit_code, apply, write] {
    if ((apply->count() > 0) != (write->count() > 0)) {
      std::cerr << "zerosim fit: --apply-fix N and --write-config FILE go together: the fix to apply and where to "
                   "write the ds_config\n";
      exit_code = 2;
      return;
    }
    auto in = load_inputs(o->in);
    if (!in) {
      std::cerr << "zerosim fit: " << in.error().message << "\n";
      exit_code = exit_code_for(in.error());
      return;
    }
    core::MemoryReport r = core::memory_model(in->model, in->hardware, in->strategy);
    std::vector<core::Suggestion> sug = core::suggest_fixes(in->model, in->hardware, in->strategy);
    std::string est_line;
    json est = deepspeed_estimate_json(*in, r, &est_line);
    if (o->json)
      std::cout << fit_json(*in, r, sug, est).dump(2) << "\n";
    else
      print_human(*in, r, sug, est_line);
    exit_code = r.fits ? 0 : 1;
    if (apply->count() > 0) {
      if (!o->json) std::printf("\n");
      std::cout << std::flush;
      exit_code = write_fix(*in, o->in, sug, o->apply_fix, o->write_config, o->json ? std::cerr : std::cout);
    }
  });
}

}  // namespace zs::cli
