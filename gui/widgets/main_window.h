// MainWindow: the four tabs (Explore, Simulate, Compare, Sweep), menus with keyboard shortcuts, sessions, and
// the file dialogs. It only wires tabs together: Explore's scenario feeds Simulate and Sweep, Simulate's result
// feeds Compare, a sweep cell goes back to Explore.
//   MainWindow w;  w.open({.model = "gpt2-1.5b"});  w.show_tab("simulate");  w.simulate();
#pragma once

#include <QMainWindow>
#include <QString>

#include <functional>

#include "gui/models/scenario.h"

class QTabWidget;

namespace zs::gui {

class CompareTab;
class ExploreTab;
class SimulateTab;
class SweepTab;

class MainWindow : public QMainWindow {
 public:
  explicit MainWindow(QWidget* parent = nullptr);

  bool open(const InputRefs& refs, const RunOverrides& run = {});
  bool open_session(const QString& path);
  bool save_session(const QString& path);
  QString last_error() const { return error_; }

  void show_tab(const QString& name);  // explore | simulate | compare | sweep
  QString current_tab() const;
  static QStringList tab_names();

  void simulate();   // F5: the Explore tab's scenario, on the Simulate tab
  void run_sweep();  // Ctrl+R
  void cancel();     // Esc: the visible tab's job
  bool load_trace(const QString& path);

  // Runs what `tab` shows (a simulation; a simulation and `trace`; a sweep) and calls `done` once it is on
  // screen — the --screenshot driver.
  void prepare_tab(const QString& tab, const QString& trace, std::function<void(bool ok, QString message)> done);

  ExploreTab* explore() const { return explore_; }
  SimulateTab* simulate_tab() const { return simulate_; }
  CompareTab* compare() const { return compare_; }
  SweepTab* sweep() const { return sweep_; }

 private:
  void build_menus();
  void update_title();
  void import_hf();
  void load_hardware();
  void save_hardware();
  void load_ds_config();
  void save_ds_config();
  void open_trace_dialog();
  void show_shortcuts();

  QTabWidget* tabs_ = nullptr;
  ExploreTab* explore_ = nullptr;
  SimulateTab* simulate_ = nullptr;
  CompareTab* compare_ = nullptr;
  SweepTab* sweep_ = nullptr;
  QString session_path_, error_;
};

}  // namespace zs::gui
