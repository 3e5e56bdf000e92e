// SweepTab: two knobs over a grid, run in a SweepJob in the background — a heatmap of predicted tokens/s with
// infeasible cells marked (the reason on hover). Clicking a cell loads its configuration into Explore; Export
// writes it as ds_config.json.
//   SweepTab t;  t.set_base(scenario);  t.set_spec(spec);  t.run();
#pragma once

#include <QString>
#include <QWidget>

#include <functional>
#include <optional>

#include "gui/models/compare_models.h"
#include "gui/models/jobs.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QTableView;

namespace zs::gui {

class SweepTab : public QWidget {
 public:
  explicit SweepTab(QWidget* parent = nullptr);

  // The scenario the knobs are applied to (the Explore tab's, when the sweep starts).
  void set_base(const Scenario& s);
  void set_spec(const SweepSpec& spec);
  SweepSpec spec() const;  // from the controls
  void run(Predictor predictor = {});
  void cancel();
  bool running() const { return job_->running(); }
  SweepJob* job() { return job_; }
  SweepModel* model() { return &model_; }
  QTableView* view() { return view_; }

  // The scenario of a finished cell; a cell that cannot be built gives nullopt.
  std::optional<Scenario> cell_scenario_at(int row, int column) const;
  bool export_cell(int row, int column, const QString& path);

  void on_run_requested(std::function<void()> f) { run_requested_ = std::move(f); }
  void on_cell_chosen(std::function<void(const Scenario&)> f) { chosen_ = std::move(f); }
  void on_export_requested(std::function<void(int row, int column)> f) { export_requested_ = std::move(f); }

 protected:
  void resizeEvent(QResizeEvent* e) override;

 private:
  void fit_rows();
  void axis_changed(int which);
  void select(int row, int column);        // details, and load into Explore
  void show_details(int row, int column);  // details only
  std::optional<Scenario> base_;    // the next run's base
  std::optional<Scenario> ran_;     // the base of the sweep shown
  SweepJob* job_ = nullptr;
  SweepModel model_;
  QComboBox* knob_[2] = {};
  QLineEdit* values_[2] = {};
  QPushButton* run_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QPushButton* export_ = nullptr;
  QPushButton* load_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QLabel* status_ = nullptr;
  QLabel* details_ = nullptr;
  QLabel* legend_ = nullptr;
  QTableView* view_ = nullptr;
  int sel_row_ = -1, sel_col_ = -1;
  std::function<void()> run_requested_;
  std::function<void(const Scenario&)> chosen_;
  std::function<void(int, int)> export_requested_;
};

}  // namespace zs::gui
