// SimulateTab: one predicted training step of the Explore tab's scenario, run in a SimulationJob (progress,
// cancel; the UI never blocks): the Gantt timeline per rank and stream, the summary (tokens/s, TFLOPS, MFU,
// bottleneck, exposed time, required bandwidths), the phase and exposure bars, memory over time per tier.
//   SimulateTab t;  t.run(scenario);   // later: t.result()
#pragma once

#include <QWidget>
#include <array>
#include <functional>
#include <memory>

#include "gui/charts/charts.h"
#include "gui/models/jobs.h"
#include "gui/models/key_value_model.h"
#include "gui/models/timeline_model.h"

class QComboBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QTreeView;

namespace zs::gui {
namespace charts {
class BarChart;
class LineChart;
}  // namespace charts
class TimelineView;

// Memory-over-time charts of a trace, one per tier with data (shared by Simulate and Compare).
class MemoryCharts : public QWidget {
 public:
  explicit MemoryCharts(QWidget* parent = nullptr);
  // `measured` (optional) is overlaid dashed; then both lines are the tensors' bytes, each trace's
  // overhead_bytes (the framework's fixed bytes) set apart and named in the title.
  void set(const Prediction& predicted, const Prediction* measured = nullptr);
  // What each tier's chart shows (gpu, cpu, nvme); an empty title where the tier has no chart.
  const charts::LineChartData& data(size_t tier) const { return data_.at(tier); }

 private:
  charts::LineChart* charts_[3] = {};
  std::array<charts::LineChartData, 3> data_;
};

class SimulateTab : public QWidget {
 public:
  explicit SimulateTab(QWidget* parent = nullptr);

  void run(const Scenario& s);
  void cancel();
  bool running() const { return job_->running(); }
  SimulationJob* job() { return job_; }
  bool has_result() const { return result_ != nullptr; }
  const Prediction& result() const { return *result_; }
  std::shared_ptr<const Prediction> shared_result() const { return result_; }
  // The scenario changed since the shown result: say so (the numbers are kept until the next run).
  void mark_stale();
  TimelineView* timeline() { return timeline_; }
  TimelineModel* timeline_model() { return &lanes_; }
  KeyValueModel* summary_model() { return &summary_; }

  // Asked to run (the window supplies the Explore tab's scenario).
  void on_run_requested(std::function<void()> f) { run_requested_ = std::move(f); }
  // Called when a new result is shown (Compare re-reads it).
  void on_result(std::function<void()> f) { on_result_ = std::move(f); }

 private:
  void show_result();
  SimulationJob* job_ = nullptr;
  std::shared_ptr<const Prediction> result_;
  TimelineModel lanes_;
  KeyValueModel summary_;
  TimelineView* timeline_ = nullptr;
  QTreeView* summary_view_ = nullptr;
  charts::BarChart* phases_ = nullptr;
  charts::BarChart* exposure_ = nullptr;
  MemoryCharts* memory_ = nullptr;
  QPushButton* run_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QLabel* status_ = nullptr;
  QLabel* headline_ = nullptr;
  QComboBox* ranks_ = nullptr;
  std::function<void()> run_requested_, on_result_;
};

}  // namespace zs::gui
