// TimelineModel: a Trace as lanes, one per (rank, stream), each holding its events sorted by start — the rows
// a Gantt view paints (widgets/timeline_view: a painting delegate over TimeAxis). Lookups answer "which event is
// under this pixel" for hover, in O(log n) per lane.
//   TimelineModel m;  m.set_trace(std::make_shared<core::Trace>(trace), /*max_rank=*/0);
//   int e = m.event_at(row, t_s, tolerance_s);  QString tip = m.event_text(e);
#pragma once

#include <QAbstractTableModel>

#include <memory>
#include <utility>
#include <vector>

#include "core/trace.h"

namespace zs::gui {

struct Lane {
  int32_t rank = 0;
  core::Stream stream = core::Stream::compute;
  std::vector<uint32_t> events;  // indices into Trace::events, by start time
  std::vector<double> max_end;   // running max of end_s over `events` (events on a lane may overlap)
  double busy_s = 0;             // union of the lane's intervals
};

class TimelineModel : public QAbstractTableModel {
 public:
  enum Column { Name, Events, ColumnCount };
  enum Role { LaneRowRole = Qt::UserRole + 20 };  // int: row in the model, for the delegate
  explicit TimelineModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}

  // Lanes for ranks 0..max_rank (-1: all ranks). Zero-time ledger ops (alloc, release) are left out.
  void set_trace(std::shared_ptr<const core::Trace> t, int max_rank = 0);
  void clear();
  const core::Trace* trace() const { return trace_.get(); }
  const Lane& lane(int row) const { return lanes_.at(static_cast<size_t>(row)); }
  int lanes() const { return static_cast<int>(lanes_.size()); }
  double end_s() const { return end_s_; }
  int ranks() const { return ranks_; }  // ranks in the trace
  int shown_ranks() const { return shown_ranks_; }  // ranks with lanes

  // Event index (into Trace::events) on lane `row` covering t_s within tolerance_s (the closest), or -1.
  int event_at(int row, double t_s, double tolerance_s) const;
  // [first, last) positions in lane(row).events that intersect [a_s, b_s].
  std::pair<size_t, size_t> visible(int row, double a_s, double b_s) const;
  QString event_text(int event) const;
  static QString lane_name(const Lane& l, bool with_rank);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  std::shared_ptr<const core::Trace> trace_;
  std::vector<Lane> lanes_;
  double end_s_ = 0;
  int ranks_ = 0, shown_ranks_ = 0;
};

}  // namespace zs::gui
