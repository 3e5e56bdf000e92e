// `zerosim simulate`: how fast will it train, and what is the bottleneck? The options live here; the work runs in
// the simulator module (zerosim-sim.so next to the binary, cli/simulate_module.cpp), loaded only for this command
// so that every other command starts without SimGrid.
#include <dlfcn.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "cli/simulate.h"

namespace zs::cli {
namespace {

using Opts = SimulateOpts;

// $ZEROSIM_SIM_MODULE, else zerosim-sim.so in the folder of this executable.
std::string module_path() {
  if (const char* p = std::getenv("ZEROSIM_SIM_MODULE"); p && *p) return p;
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "zerosim-sim.so";
  std::string exe(buf, static_cast<size_t>(n));
  return exe.substr(0, exe.rfind('/') + 1) + "zerosim-sim.so";
}

int run_in_module(const Opts& o) {
  const std::string path = module_path();
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    std::cerr << "zerosim simulate: cannot load the simulator module " << path << ": " << dlerror()
              << " (built only when SimGrid 3.32 is found at configure time)\n";
    return 3;
  }
  auto fn = reinterpret_cast<SimulateMain>(dlsym(h, "zs_simulate_main"));
  if (!fn) {
    std::cerr << "zerosim simulate: " << path << " has no zs_simulate_main: " << dlerror() << "\n";
    return 3;
  }
  return fn(&o);  // the module stays loaded until exit: SimGrid registers atexit handlers
}

}  // namespace

void add_simulate(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<Opts>();
  auto* sub =
      app.add_subcommand("simulate", "how fast: simulate one training step (SimGrid) — step time, TFLOPS, bottleneck");
  add_input_flags(*sub, o->in);
  sub->add_option("--schedule", o->schedule, "op schedule: deepspeed (default), dpu (delayed update), overlap")
      ->check(CLI::IsMember({"deepspeed", "dpu", "overlap"}));
  sub->add_flag("--json", o->json, "print the summary as JSON");
  sub->add_option("--trace", o->trace, "write Chrome/Perfetto trace events to FILE.json (ui.perfetto.dev)");
  sub->add_option("--raw-trace", o->raw_trace, "write zerosim's trace (docs/TRACE.md) to FILE.json");
  auto* te = sub->add_option("--target-efficiency", o->target_efficiency,
                             "GPU compute share of the step to size each tier's bandwidth for, by re-simulation "
                             "(without it: full-overlap bounds for 0.9)")
                 ->check(CLI::Range(0.01, 1.0));
  sub->callback([o, te, &exit_code] {
    o->target_given = te->count() > 0;
    exit_code = run_in_module(*o);
  });
}

}  // namespace zs::cli
