// TimelineView: the Gantt chart of a trace — a tree view over TimelineModel whose lane names sit in column 0 and
// whose column 1 is painted by a delegate over a TimeAxis (models/time_axis.h), with a ruler painted in the
// header. Ctrl+wheel zooms about the mouse, Shift+wheel or drag pans, double-click fits; hovering an op shows its
// details. Two views can share one axis (Compare: predicted above measured, zoomed together).
//   auto* v = new TimelineView(parent);  v->set_model(model);  v->fit();
#pragma once

#include <QString>
#include <QWidget>

#include <functional>
#include <memory>

#include "gui/models/time_axis.h"
#include "gui/models/timeline_model.h"

class QLabel;
class QTreeView;

namespace zs::gui {

class TimelineView : public QWidget {
 public:
  explicit TimelineView(QWidget* parent = nullptr);
  ~TimelineView() override;

  void set_model(TimelineModel* m);
  TimelineModel* model() const { return model_; }
  void set_title(const QString& title);
  // Shares `axis` with other views; `changed` is called after this view zooms or pans (to repaint the others).
  void share_axis(std::shared_ptr<TimeAxis> axis, std::function<void()> changed);
  TimeAxis& axis() { return *axis_; }

  void zoom_in();
  void zoom_out();
  void fit();
  // Resets the axis range to the model's trace and fits (after set_trace).
  void reset_range(double end_s);
  void refresh();  // repaint after the axis changed elsewhere
  QTreeView* tree() const { return tree_; }
  // Lane height in pixels; the view asks for enough height to show every lane.
  static constexpr int kLaneHeight = 22;

  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void sync_width();
  void fit_height();
  void notify();
  QLabel* title_ = nullptr;
  QTreeView* tree_ = nullptr;
  TimelineModel* model_ = nullptr;
  std::shared_ptr<TimeAxis> axis_;
  std::unique_ptr<const TimeAxis*> axis_slot_;  // what the delegate and the ruler read
  std::function<void()> changed_;
  double drag_x_ = -1;
};

}  // namespace zs::gui
