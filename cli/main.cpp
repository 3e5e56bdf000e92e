// zerosim: plan, predict and run DeepSpeed ZeRO-Offload / ZeRO-Infinity training.
// Exit codes: 0 ok / fits, 1 does not fit, 2 bad input, 3 I/O or internal fault.
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"zerosim: does it fit, how fast, which config — for DeepSpeed ZeRO offload training"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "zerosim 0.1.0");
  int exit_code = 0;
  zs::cli::add_fit(app, exit_code);
  zs::cli::add_estimate(app, exit_code);
  zs::cli::add_list(app, exit_code);
  zs::cli::add_plan(app, exit_code);
  zs::cli::add_probe(app, exit_code);
  zs::cli::add_report(app, exit_code);
  zs::cli::add_simulate(app, exit_code);
  zs::cli::add_train(app, exit_code);
  zs::cli::add_compare(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);  // prints usage or the error
    return rc == 0 ? 0 : 2;
  }
  return exit_code;
}
