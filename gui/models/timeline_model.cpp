#include "gui/models/timeline_model.h"

#include <QBrush>

#include <algorithm>
#include <map>

#include "gui/models/format.h"

namespace zs::gui {

void TimelineModel::clear() {
  beginResetModel();
  trace_.reset();
  lanes_.clear();
  end_s_ = 0;
  ranks_ = shown_ranks_ = 0;
  endResetModel();
}

void TimelineModel::set_trace(std::shared_ptr<const core::Trace> t, int max_rank) {
  beginResetModel();
  trace_ = std::move(t);
  lanes_.clear();
  end_s_ = 0;
  ranks_ = shown_ranks_ = 0;
  if (trace_) {
    std::map<std::pair<int32_t, int>, size_t> by_key;
    const auto& ev = trace_->events;
    for (uint32_t i = 0; i < ev.size(); ++i) {
      const auto& e = ev[i];
      ranks_ = std::max(ranks_, e.rank + 1);
      end_s_ = std::max(end_s_, e.end_s);
      if (e.kind == core::OpKind::alloc || e.kind == core::OpKind::release) continue;
      if (max_rank >= 0 && e.rank > max_rank) continue;
      auto key = std::make_pair(e.rank, static_cast<int>(e.stream));
      auto it = by_key.find(key);
      if (it == by_key.end()) {
        Lane l;
        l.rank = e.rank;
        l.stream = e.stream;
        it = by_key.emplace(key, lanes_.size()).first;
        lanes_.push_back(std::move(l));
      }
      lanes_[it->second].events.push_back(i);
    }
    end_s_ = std::max(end_s_, trace_->step_time_s);
    std::sort(lanes_.begin(), lanes_.end(), [](const Lane& a, const Lane& b) {
      return std::make_pair(a.rank, static_cast<int>(a.stream)) < std::make_pair(b.rank, static_cast<int>(b.stream));
    });
    std::vector<int32_t> seen;
    for (const auto& l : lanes_)
      if (std::find(seen.begin(), seen.end(), l.rank) == seen.end()) seen.push_back(l.rank);
    shown_ranks_ = static_cast<int>(seen.size());
    for (auto& l : lanes_) {
      std::stable_sort(l.events.begin(), l.events.end(), [&](uint32_t a, uint32_t b) { return ev[a].start_s < ev[b].start_s; });
      l.max_end.resize(l.events.size());
      double m = -1, covered_to = -1;
      for (size_t k = 0; k < l.events.size(); ++k) {
        const auto& e = ev[l.events[k]];
        const double a = std::max(e.start_s, covered_to);
        if (e.end_s > a) l.busy_s += e.end_s - a;
        covered_to = std::max(covered_to, e.end_s);
        m = std::max(m, e.end_s);
        l.max_end[k] = m;
      }
    }
  }
  endResetModel();
}

std::pair<size_t, size_t> TimelineModel::visible(int row, double a_s, double b_s) const {
  const Lane& l = lane(row);
  const auto& ev = trace_->events;
  // First event whose running max end reaches a_s; last event starting before b_s.
  const size_t first = static_cast<size_t>(std::lower_bound(l.max_end.begin(), l.max_end.end(), a_s) - l.max_end.begin());
  const size_t last = static_cast<size_t>(
      std::upper_bound(l.events.begin(), l.events.end(), b_s, [&](double t, uint32_t i) { return t < ev[i].start_s; }) -
      l.events.begin());
  return {first, std::max(first, last)};
}

int TimelineModel::event_at(int row, double t_s, double tol) const {
  if (!trace_ || row < 0 || row >= lanes()) return -1;
  const auto& ev = trace_->events;
  const auto [first, last] = visible(row, t_s - tol, t_s + tol);
  int best = -1;
  double best_d = tol + 1;
  const Lane& l = lane(row);
  for (size_t k = first; k < last; ++k) {
    const auto& e = ev[l.events[k]];
    const double d = t_s < e.start_s ? e.start_s - t_s : t_s > e.end_s ? t_s - e.end_s : 0;
    if (d <= tol && d < best_d) best = static_cast<int>(l.events[k]), best_d = d;
  }
  return best;
}

QString TimelineModel::lane_name(const Lane& l, bool with_rank) {
  static const char* names[] = {"compute", "H2D copy", "D2H copy", "NVMe read", "NVMe write", "collectives", "CPU Adam"};
  const QString s = QString::fromUtf8(names[static_cast<int>(l.stream)]);
  return with_rank ? QStringLiteral("rank %1 · %2").arg(l.rank).arg(s) : s;
}

QString TimelineModel::event_text(int event) const {
  if (!trace_ || event < 0 || static_cast<size_t>(event) >= trace_->events.size()) return {};
  const auto& e = trace_->events[static_cast<size_t>(event)];
  QString s = fmt::qs(core::to_string(e.kind));
  if (e.layer >= 0) s += QStringLiteral(" · layer %1").arg(e.layer);
  s += QStringLiteral(" · micro-step %1 · %2").arg(e.micro_step).arg(fmt::qs(core::to_string(e.phase)));
  s += QStringLiteral("\nop %1 on rank %2, stream %3").arg(e.op).arg(e.rank).arg(fmt::qs(core::to_string(e.stream)));
  s += QStringLiteral("\n%1 → %2  (%3)").arg(fmt::duration(e.start_s), fmt::duration(e.end_s), fmt::duration(e.end_s - e.start_s));
  if (e.bytes > 0) {
    s += QStringLiteral("\n") + fmt::bytes(e.bytes);
    if (e.end_s > e.start_s) s += QStringLiteral(" at ") + fmt::gbps(e.bytes / (e.end_s - e.start_s) / 1e9);
  }
  if (e.flops > 0) {
    s += QStringLiteral("\n%1 GFLOP").arg(e.flops / 1e9, 0, 'f', 1);
    if (e.end_s > e.start_s) s += QStringLiteral(" at %1 TFLOPS").arg(e.flops / (e.end_s - e.start_s) / 1e12, 0, 'f', 1);
  }
  return s;
}

int TimelineModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : lanes(); }
int TimelineModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant TimelineModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= lanes()) return {};
  const Lane& l = lane(index.row());
  switch (role) {
    case Qt::DisplayRole:
      if (index.column() == Name) return lane_name(l, shown_ranks_ > 1);
      return QStringLiteral("%1 ops, busy %2").arg(l.events.size()).arg(end_s_ > 0 ? fmt::percent(l.busy_s / end_s_) : QString());
    case Qt::ToolTipRole:
      return QStringLiteral("%1: %2 ops, busy %3 of %4")
          .arg(lane_name(l, true))
          .arg(l.events.size())
          .arg(fmt::duration(l.busy_s), fmt::duration(end_s_));
    case Qt::DecorationRole:
      if (index.column() == Name) return fmt::stream_color(l.stream);
      break;
    case LaneRowRole: return index.row();
  }
  return {};
}

QVariant TimelineModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  return section == Name ? QStringLiteral("Lane") : QStringLiteral("Timeline");
}

}  // namespace zs::gui
