// `zerosim report`: what this build and machine support (like ds_report): SIMD and the CPU Adam kernel,
// page-locking, libaio and O_DIRECT on the nvme paths, and CUDA / NCCL / MPI / SimGrid / Qt.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "core/json_reader.h"
#include "probe/report.h"

namespace zs::cli {

void add_report(CLI::App& app, int& exit_code) {
  struct Flags {
    std::vector<std::string> nvme_paths;
    bool json = false;
  };
  auto f = std::make_shared<Flags>();
  auto* sub = app.add_subcommand("report", "what this build and machine support (SIMD, libaio, O_DIRECT, CUDA, ...)");
  sub->add_option("--nvme-path", f->nvme_paths,
                  "directory to check for libaio + O_DIRECT (repeatable; default: temp dir)");
  sub->add_flag("--json", f->json, "print the report as JSON");
  sub->callback([f, &exit_code] {
    auto paths = f->nvme_paths;
    if (paths.empty()) paths.push_back(std::filesystem::temp_directory_path().string());
    const auto items = probe::build_report(paths);
    if (f->json) {
      core::Json j = core::Json::object();
      for (const auto& it : items) j[it.section][it.name] = {{"value", it.value}, {"ok", it.ok}};
      std::cout << j.dump(2) << "\n";
    } else {
      std::string section;
      for (const auto& it : items) {
        if (it.section != section) {
          section = it.section;
          std::printf("%s%s\n", section == items.front().section ? "" : "\n", section.c_str());
        }
        std::printf("  %-18s %s%s\n", it.name.c_str(), it.ok ? "" : "[!] ", it.value.c_str());
      }
    }
    exit_code = 0;
  });
}

}  // namespace zs::cli
