// `zerosim models`, `zerosim hardware`, `zerosim configs`: what ships.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "core/hardware.h"
#include "core/model.h"
#include "core/paths.h"
#include "core/strategy.h"

namespace zs::cli {

void add_list(CLI::App& app, int& exit_code) {
  app.add_subcommand("models", "list shipped models")->callback([&exit_code] {
    std::printf("%-20s %-12s %16s %16s %7s %7s %6s %7s  %s\n", "name", "family", "params", "active", "layers", "hidden",
                "heads", "vocab", "largest layer");
    for (const auto& p : core::shipped_inputs(core::InputKind::model)) {
      auto m = core::load_model_any(p);  // zerosim's format or an HF config.json
      if (!m) {
        std::cerr << m.error().message << "\n";
        exit_code = 2;
        continue;
      }
      std::printf("%-20s %-12s %16lld %16lld %7lld %7lld %6lld %7lld  %lld\n", std::filesystem::path(p).stem().c_str(),
                  core::to_string(m->arch).c_str(), static_cast<long long>(core::parameter_count(*m)),
                  static_cast<long long>(core::active_parameter_count(*m)), static_cast<long long>(m->layers),
                  static_cast<long long>(m->hidden), static_cast<long long>(m->heads), static_cast<long long>(m->vocab),
                  static_cast<long long>(core::largest_layer_params(*m)));
    }
  });
  app.add_subcommand("hardware", "list shipped hardware profiles")->callback([&exit_code] {
    std::printf("%-22s %-28s %5s %4s %9s %9s %9s\n", "name", "gpu", "nodes", "gpus", "GPU GiB", "DRAM GiB", "NVMe TB");
    for (const auto& p : core::shipped_inputs(core::InputKind::hardware)) {
      auto h = core::load_hardware_file(p);
      if (!h) {
        std::cerr << h.error().message << "\n";
        exit_code = 2;
        continue;
      }
      std::printf("%-22s %-28s %5lld %4lld %9.1f %9.1f %9.2f\n", std::filesystem::path(p).stem().c_str(), h->gpu.name.c_str(),
                  static_cast<long long>(h->nodes), static_cast<long long>(h->gpus_per_node), h->gpu.memory_GiB,
                  h->cpu.memory_GiB, h->nvme.capacity_bytes() / 1e12);
    }
  });
  app.add_subcommand("configs", "list shipped DeepSpeed configs")->callback([&exit_code] {
    core::RunSettings run;
    run.hidden = 4096;
    for (const auto& p : core::shipped_inputs(core::InputKind::deepspeed)) {
      auto s = core::load_ds_config(p, run);
      if (!s) {
        std::cerr << s.error().message << "\n";
        exit_code = 2;
        continue;
      }
      std::printf("%-22s ZeRO-%d  optimizer %-4s  params %-4s  %s\n", std::filesystem::path(p).stem().c_str(), s->zero.stage,
                  core::to_string(s->zero.offload_optimizer.device).c_str(),
                  core::to_string(s->zero.offload_param.device).c_str(), core::to_string(s->model_dtype()).c_str());
    }
  });
}

}  // namespace zs::cli
