// `zerosim plan`: the ops of one training step for (model, hardware, ds_config) under a schedule, with the
// memory ledger; prints a summary and/or writes the plan as JSON (docs/PLAN.md). Exit 1 when infeasible.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "core/memory.h"
#include "core/plan.h"

namespace zs::cli {
namespace {

// fit's words for the Plan's peaks (core::verdict): FITS / TIGHT (under 3% headroom) / DOES NOT FIT with the reason.
void print_verdict(const core::Plan& p) {
  const core::Verdict v = core::verdict(p.feasible, p.peak_bytes, p.capacity_bytes);
  const std::string word = core::verdict_word(v);
  if (v == core::Verdict::does_not_fit) {
    std::printf("verdict: %s: %s\n", word.c_str(), p.infeasible_reason.c_str());
    return;
  }
  // The tightest tier: the highest peak / capacity.
  size_t t = 0;
  double worst = -1;
  for (size_t i = 0; i < p.peak_bytes.size(); ++i) {
    if (p.peak_bytes[i] <= 0 || p.capacity_bytes[i] <= 0) continue;
    const double use = static_cast<double>(p.peak_bytes[i]) / static_cast<double>(p.capacity_bytes[i]);
    if (use > worst) worst = use, t = i;
  }
  const int64_t headroom = p.capacity_bytes[t] - p.peak_bytes[t];
  std::printf("verdict: %s (tightest tier %s, %s headroom", word.c_str(), core::to_string(core::kTiers[t]).c_str(),
              core::format_bytes(headroom).c_str());
  if (v == core::Verdict::tight)
    std::printf(" = %.1f%% of %s: under %.0f%%, within the memory model's uncertainty; it may not fit",
                100.0 * static_cast<double>(headroom) / static_cast<double>(p.capacity_bytes[t]),
                core::format_bytes(p.capacity_bytes[t]).c_str(), 100 * core::kTightHeadroomFraction);
  std::printf(")\n");
}

void print_summary(const Inputs& in, const core::Plan& p) {
  const auto& s = in.strategy;
  const core::PlanSummary sum = core::summarize(p);
  std::printf("%s on %s: %lld node x %lld GPU (%lld ranks), %s, ZeRO-%d, %s, schedule %s\n", in.model.name.c_str(),
              in.hardware.name.c_str(), static_cast<long long>(s.run.nodes), static_cast<long long>(s.run.gpus_per_node),
              static_cast<long long>(p.ranks), s.source.c_str(), s.zero.stage, seq_len_text(in).c_str(),
              core::to_string(p.schedule).c_str());
  for (const auto& w : in.warnings) std::printf("warning: %s\n", w.c_str());
  std::printf("ops per rank: %zu (forward %lld, backward %lld, optimizer %lld; %lld collectives)%s\n", p.ops.size(),
              static_cast<long long>(sum.ops_per_phase[0]), static_cast<long long>(sum.ops_per_phase[1]),
              static_cast<long long>(sum.ops_per_phase[2]), static_cast<long long>(sum.collectives),
              p.represented_ranks < p.ranks ? " — one rank listed, ranks are symmetric" : "");
  std::printf("compute per rank: %.3g GEMM FLOP, %s memory-bound traffic (GA %lld x micro batch %lld)\n",
              sum.gemm_flops, core::format_bytes(sum.mem_bound_bytes).c_str(),
              static_cast<long long>(s.gradient_accumulation_steps), static_cast<long long>(s.micro_batch_per_gpu));
  std::printf("bytes per step per rank: H2D %s, D2H %s, NVMe read %s, NVMe write %s, network %s\n",
              core::format_bytes(p.per_step.h2d).c_str(), core::format_bytes(p.per_step.d2h).c_str(),
              core::format_bytes(p.per_step.nvme_read).c_str(), core::format_bytes(p.per_step.nvme_write).c_str(),
              core::format_bytes(p.per_step.network).c_str());
  std::printf("peak per tier:\n");
  const char* scope[] = {"per GPU", "per node", "per node"};
  for (core::Tier t : core::kTiers) {
    const auto i = static_cast<size_t>(t);
    if (t == core::Tier::nvme && p.peak_bytes[i] == 0) continue;
    std::string at = "static";
    if (p.peak_op[i] >= 0) {
      const auto& op = p.ops[static_cast<size_t>(p.peak_op[i])];
      at = "after op " + std::to_string(op.id) + " (" + core::to_string(op.kind) +
           (op.layer >= 0 ? " layer " + std::to_string(op.layer) : std::string()) + ")";
    } else if (p.init_bytes[i] > 0 && p.init_bytes[i] >= p.peak_bytes[i]) {
      at = "while the model is built";
    }
    std::printf("  %-5s %12s of %12s %-9s %s\n", core::to_string(t).c_str(), core::format_bytes(p.peak_bytes[i]).c_str(),
                core::format_bytes(p.capacity_bytes[i]).c_str(), scope[i], at.c_str());
  }
  for (const auto& n : p.notes) std::printf("note: %s\n", n.c_str());
  print_verdict(p);
}

}  // namespace

void add_plan(CLI::App& app, int& exit_code) {
  struct Opts {
    InputFlags in;
    std::string schedule = "deepspeed";
    std::string json_file;
    bool summary = false;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = app.add_subcommand("plan", "the ops of one training step (offload, prefetch, optimizer) and the memory ledger");
  add_input_flags(*sub, o->in);
  sub->add_option("--schedule", o->schedule, "deepspeed (v0.19, default), dpu (delayed parameter update), overlap")
      ->check(CLI::IsMember({"deepspeed", "dpu", "overlap"}))
      ->capture_default_str();
  sub->add_option("--json", o->json_file, "write the plan as JSON to FILE (- for stdout)");
  sub->add_flag("--summary", o->summary, "print op counts, bytes per link direction and peaks (default without --json)");
  sub->callback([o, &exit_code] {
    auto in = load_inputs(o->in);
    if (!in) {
      std::cerr << "zerosim plan: " << in.error().message << "\n";
      exit_code = exit_code_for(in.error());
      return;
    }
    core::PlanOptions po;
    po.schedule = *core::parse_schedule(o->schedule);
    const core::Plan p = core::make_plan(in->model, in->hardware, in->strategy, po);
    if (!o->json_file.empty()) {
      const std::string text = core::plan_to_json(p) + "\n";
      if (o->json_file == "-") {
        std::cout << text;
      } else {
        std::ofstream f(o->json_file, std::ios::binary);
        if (!(f << text)) {
          std::cerr << "zerosim plan: cannot write " << o->json_file << "\n";
          exit_code = 3;
          return;
        }
      }
    }
    if (o->summary || o->json_file.empty()) print_summary(*in, p);
    exit_code = p.feasible ? 0 : 1;
  });
}

}  // namespace zs::cli
