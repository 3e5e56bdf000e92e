// Charts: every use of Qt Charts sits behind these three widgets, fed plain data. Qt Charts is deprecated
// upstream (Qt Graphs replaces it); swapping the implementation touches gui/charts/ only — no header here
// includes QtCharts, so the rest of the app compiles without it.
//   TierBarsChart* t = new TierBarsChart(parent);  t->set_bars({{"GPU per rank", segments, capacity_GiB, true}});
//   LineChart* l = new LineChart(parent);          l->set_data({"GPU memory", "time (s)", "GiB", {series}});
#pragma once

#include <QColor>
#include <QPointF>
#include <QString>
#include <QStringList>
#include <QWidget>

#include <memory>
#include <optional>
#include <vector>

namespace zs::gui::charts {

// One stacked segment of a tier's bar.
struct Segment {
  QString label;  // "fp32 master (1/16 partition)"
  double value = 0;
  QColor color;
};
// A tier: its bar (stacked segments) against a capacity line, in one unit (GiB).
struct TierBar {
  QString title;            // "GPU per rank — 31.2 GiB of 32.0 GiB (98%)"
  std::vector<Segment> segments;
  double capacity = 0;
  bool fits = true;
};

// One row per tier, each a horizontal stacked bar with its own scale and a dashed capacity line; under each bar a
// legend (objectName "tier_legend") names every segment in full with its size, wrapping to the width (its entries
// are QLabels named "legend_item", never elided).
class TierBarsChart : public QWidget {
 public:
  explicit TierBarsChart(QWidget* parent = nullptr);
  ~TierBarsChart() override;
  void set_bars(const std::vector<TierBar>& bars, const QString& unit = QStringLiteral("GiB"));

 private:
  struct Impl;
  std::unique_ptr<Impl> d_;
};

struct BarSet {
  QString name;
  std::vector<double> values;  // one per category
  QColor color;
};
struct BarChartData {
  QString title;
  QStringList categories;
  std::vector<BarSet> sets;
  QString value_label;      // axis title: "seconds"
  bool stacked = false;
  bool horizontal = false;
  bool legend = true;
};

// Grouped or stacked bars (phase breakdown, predicted vs measured).
class BarChart : public QWidget {
 public:
  explicit BarChart(QWidget* parent = nullptr);
  ~BarChart() override;
  void set_data(const BarChartData& data);

 private:
  struct Impl;
  std::unique_ptr<Impl> d_;
};

struct LineSeries {
  QString name;
  std::vector<QPointF> points;
  QColor color;
  bool dashed = false;
  bool step = true;         // a step function (memory occupancy holds until the next sample)
  bool area = false;        // filled below (the main series)
};
struct LineChartData {
  QString title, x_label, y_label;
  std::vector<LineSeries> series;
  std::optional<double> y_max;      // else from the data (with headroom)
  std::optional<double> reference;  // a dashed horizontal line (capacity)
  QString reference_label;
  bool legend = true;
};

// Lines over time (memory per tier, predicted vs measured overlays).
class LineChart : public QWidget {
 public:
  explicit LineChart(QWidget* parent = nullptr);
  ~LineChart() override;
  void set_data(const LineChartData& data);

 private:
  struct Impl;
  std::unique_ptr<Impl> d_;
};

}  // namespace zs::gui::charts
