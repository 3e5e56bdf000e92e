// `zerosim estimate`: DeepSpeed's estimate_zero2/zero3_model_states_mem_needs_all_cold, row for row.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "core/estimator.h"
#include "core/model.h"

namespace zs::cli {

void add_estimate(CLI::App& app, int& exit_code) {
  struct Opts {
    int stage = 0;
    std::string model;
    double params = 0, largest = 0;
    int64_t gpus_per_node = 1, nodes = 1;
    double buffer_factor = 1.5;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = app.add_subcommand("estimate", "DeepSpeed's model-state estimator rows (estimate_zero2/3_..._all_cold)");
  sub->add_option("--stage", o->stage, "ZeRO stage: 2 or 3")->required()->check(CLI::IsMember({2, 3}));
  auto* m = sub->add_option("-m,--model", o->model, "model (shipped name, models/*.json or HF config.json)");
  auto* p = sub->add_option("--params", o->params, "total parameters (e.g. 1.5e9)");
  auto* l = sub->add_option("--largest-layer-params", o->largest, "largest layer parameters (ZeRO-3)");
  m->excludes(p)->excludes(l);
  sub->add_option("--gpus-per-node", o->gpus_per_node, "GPUs per node")->capture_default_str();
  sub->add_option("--nodes", o->nodes, "nodes")->capture_default_str();
  sub->add_option("--buffer-factor", o->buffer_factor, "additional_buffer_factor")->capture_default_str();
  sub->add_flag("--json", o->json, "print rows as JSON");
  sub->callback([o, &exit_code] {
    auto fail = [&](const std::string& msg) {
      std::cerr << "zerosim estimate: " << msg << "\n";
      exit_code = 2;
    };
    int64_t P = 0, L = 0;
    std::string what;
    if (!o->model.empty()) {
      auto mm = core::load_model(o->model);
      if (!mm) return fail(mm.error().message);
      P = core::parameter_count(*mm);
      L = core::largest_layer_params(*mm);
      what = mm->name;
    } else {
      if (o->params <= 0 || !std::isfinite(o->params)) return fail("give --model, or --params (a positive number)");
      if (o->stage == 3 && o->largest <= 0) return fail("--stage 3 needs --largest-layer-params (or --model)");
      P = static_cast<int64_t>(std::llround(o->params));
      L = static_cast<int64_t>(std::llround(o->largest));
      if (L > P) return fail("--largest-layer-params exceeds --params");
    }
    if (o->gpus_per_node < 1 || o->nodes < 1) return fail("--gpus-per-node and --nodes must be >= 1");
    if (!(o->buffer_factor > 0)) return fail("--buffer-factor must be positive");
    core::Estimate e = o->stage == 2 ? core::estimate_zero2_all_cold(P, o->gpus_per_node, o->nodes, o->buffer_factor)
                                     : core::estimate_zero3_all_cold(P, L, o->gpus_per_node, o->nodes, o->buffer_factor);
    if (o->json) {
      nlohmann::json rows = nlohmann::json::array();
      for (const auto& r : e.rows)
        rows.push_back({{"offload_param", r.offload_param ? nlohmann::json(*r.offload_param) : nlohmann::json(nullptr)},
                        {"offload_optimizer", r.offload_optimizer},
                        {"zero_init", r.zero_init ? nlohmann::json(*r.zero_init) : nlohmann::json(nullptr)},
                        {"per_cpu_bytes", r.per_cpu_bytes},
                        {"per_gpu_bytes", r.per_gpu_bytes}});
      std::cout << nlohmann::json{{"rows", rows}, {"total_params", P}, {"largest_layer_params", L}, {"quirks", e.quirks}}.dump(2)
                << "\n";
    } else {
      std::printf("DeepSpeed ZeRO-%d estimate (model states only), additional_buffer_factor %.2f\n", o->stage, o->buffer_factor);
      std::printf("HW: %lld node(s), %lld GPU(s) per node.  SW: %s%lldM total params", static_cast<long long>(o->nodes),
                  static_cast<long long>(o->gpus_per_node), what.empty() ? "" : (what + ", ").c_str(),
                  static_cast<long long>(P / 1000000));
      if (o->stage == 3) std::printf(", %lldM largest layer params", static_cast<long long>(L / 1000000));
      std::printf(".\n  per CPU  |  per GPU |   Options   (GiB = bytes/2^30, which DeepSpeed labels GB)\n");
      for (const auto& r : e.rows) {
        std::printf("%8.2fGiB|%8.2fGiB| ", r.per_cpu_bytes / 1073741824.0, r.per_gpu_bytes / 1073741824.0);
        if (r.offload_param) std::printf("offload_param=%-4s, ", r.offload_param->c_str());
        std::printf("offload_optimizer=%-4s", r.offload_optimizer.c_str());
        if (r.zero_init) std::printf(", zero_init=%d", *r.zero_init ? 1 : 0);
        std::printf("\n");
      }
      for (const auto& q : e.quirks) std::printf("note: %s\n", q.c_str());
    }
    exit_code = 0;
  });
}

}  // namespace zs::cli
