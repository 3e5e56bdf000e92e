// The zerosim subcommands. Each add_* registers one subcommand on the app; its callback stores the process
// exit code (0 ok/fits, 1 does not fit, 2 bad input) in `exit_code`. Only cli/*.cpp include CLI11.
#pragma once

namespace CLI {
class App;
}

namespace zs::cli {

void add_fit(CLI::App& app, int& exit_code);
void add_estimate(CLI::App& app, int& exit_code);
void add_list(CLI::App& app, int& exit_code);     // `models`, `hardware`, `configs`
void add_plan(CLI::App& app, int& exit_code);
void add_probe(CLI::App& app, int& exit_code);    // exec/ probe (issue 5)
void add_report(CLI::App& app, int& exit_code);   // exec/ build+machine report (issue 5)
void add_simulate(CLI::App& app, int& exit_code);
void add_train(CLI::App&, int&);
void add_compare(CLI::App&, int&);

}  // namespace zs::cli
