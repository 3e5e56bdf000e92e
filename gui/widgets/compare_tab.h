// CompareTab: a measured trace (zerosim train --trace, or any Trace JSON) beside the prediction — the two
// timelines one above the other on one time axis, per-phase predicted vs measured with the error, and the memory
// curves overlaid. The measured trace is read with the prediction's definitions when it ran the same plan. Until a
// trace is loaded, a placeholder says which file to load, how, and what the tab then shows.
//   CompareTab t;  t.set_prediction(simulate_tab.shared_result());  t.load_trace("run.trace.json");
#pragma once

#include <QString>
#include <QWidget>

#include <functional>
#include <memory>

#include "gui/models/compare_models.h"
#include "gui/models/timeline_model.h"

class QLabel;
class QStackedWidget;
class QTableView;

namespace zs::gui {
namespace charts {
class BarChart;
}
class MemoryCharts;
class TimelineView;

class CompareTab : public QWidget {
 public:
  explicit CompareTab(QWidget* parent = nullptr);

  void set_prediction(std::shared_ptr<const Prediction> p);
  // Reads a Trace JSON (core::trace_from_json_file); false with the error shown when it cannot be read.
  bool load_trace(const QString& path);
  QString trace_path() const { return path_; }
  bool has_measurement() const { return measured_trace_ != nullptr; }
  // The "what to load and how" page, shown instead of the comparison while no trace is loaded.
  QWidget* placeholder() const { return placeholder_; }
  bool placeholder_shown() const;
  QString last_error() const { return error_; }
  PhaseModel* phase_model() { return &phases_; }
  TimelineModel* predicted_model() { return &predicted_lanes_; }
  TimelineModel* measured_model() { return &measured_lanes_; }
  const MemoryCharts* memory_charts() const { return memory_; }
  void zoom_in();
  void zoom_out();
  void fit();
  void on_load_requested(std::function<void()> f) { load_requested_ = std::move(f); }

 private:
  void update_views();
  QWidget* build_placeholder();
  std::shared_ptr<const Prediction> predicted_;
  std::shared_ptr<const core::Trace> measured_trace_;
  std::shared_ptr<const Prediction> measured_;
  QString path_, error_;
  PhaseModel phases_;
  TimelineModel predicted_lanes_, measured_lanes_;
  TimelineView* top_ = nullptr;
  TimelineView* bottom_ = nullptr;
  QTableView* table_ = nullptr;
  charts::BarChart* bars_ = nullptr;
  MemoryCharts* memory_ = nullptr;
  QLabel* headline_ = nullptr;
  QLabel* path_label_ = nullptr;
  QStackedWidget* pages_ = nullptr;
  QWidget* placeholder_ = nullptr;
  QWidget* comparison_ = nullptr;
  QLabel* placeholder_status_ = nullptr;
  std::function<void()> load_requested_;
};

}  // namespace zs::gui
