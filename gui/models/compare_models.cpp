#include "gui/models/compare_models.h"

#include <QBrush>
#include <QColor>
#include <QStringList>

#include <algorithm>
#include <cmath>

#include "gui/models/fit_models.h"
#include "gui/models/format.h"

namespace zs::gui {

std::vector<PhaseRow> phase_rows(const Prediction& p, const Prediction& m) {
  std::vector<PhaseRow> r = {{QStringLiteral("forward"), p.forward_s, m.forward_s},
                             {QStringLiteral("backward"), p.backward_s, m.backward_s},
                             {QStringLiteral("optimizer"), p.optimizer_s, m.optimizer_s},
                             {QStringLiteral("step"), p.step_time_s, m.step_time_s}};
  std::vector<std::string> keys;
  for (const auto* x : {&p.exposed, &m.exposed})
    for (const auto& e : *x)
      if (std::find(keys.begin(), keys.end(), e.key) == keys.end()) keys.push_back(e.key);
  for (const auto& k : keys) {
    PhaseRow row;
    for (const auto& e : p.exposed)
      if (e.key == k) row.label = fmt::qs(e.label) + QStringLiteral(" exposed"), row.predicted_s = e.exposed_s;
    for (const auto& e : m.exposed)
      if (e.key == k) row.label = fmt::qs(e.label) + QStringLiteral(" exposed"), row.measured_s = e.exposed_s;
    r.push_back(row);
  }
  return r;
}

QString trace_warnings(const core::Trace& predicted, const core::Trace& measured) {
  QStringList out;
  for (const auto& w : core::compare_traces(predicted, measured, 0).warnings) out << fmt::qs(w);
  return out.join(QStringLiteral("; "));
}

void PhaseModel::set_rows(std::vector<PhaseRow> rows) {
  beginResetModel();
  rows_ = std::move(rows);
  endResetModel();
}

double PhaseModel::max_abs_error() const {
  double e = 0;
  for (const auto& r : rows_)
    if (r.measured_s > 0) e = std::max(e, std::abs(r.error()));
  return e;
}

const PhaseRow* PhaseModel::largest_phase_error() const {
  const PhaseRow* best = nullptr;
  for (size_t i = 0; i < std::min<size_t>(3, rows_.size()); ++i)  // phase_rows: forward, backward, optimizer first
    if (!best || std::abs(rows_[i].error()) > std::abs(best->error())) best = &rows_[i];
  return best;
}

int PhaseModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(rows_.size()); }
int PhaseModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant PhaseModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const auto& r = rows_[static_cast<size_t>(index.row())];
  switch (role) {
    case Qt::DisplayRole:
      switch (index.column()) {
        case Phase: return r.label;
        case Predicted: return fmt::duration(r.predicted_s);
        case Measured: return r.measured_s > 0 ? fmt::duration(r.measured_s) : QStringLiteral("—");
        case Error:
          if (r.measured_s <= 0) return QStringLiteral("—");
          return (r.error() >= 0 ? QStringLiteral("+") : QString()) + fmt::percent(r.error());
      }
      break;
    case ValueRole:
      switch (index.column()) {
        case Predicted: return r.predicted_s;
        case Measured: return r.measured_s;
        case Error: return r.error();
      }
      break;
    case Qt::ForegroundRole:
      if (index.column() == Error && r.measured_s > 0 && std::abs(r.error()) > 0.2) return QBrush(fmt::kBad);
      break;
    case Qt::TextAlignmentRole:
      if (index.column() != Phase) return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
      break;
  }
  return {};
}

QVariant PhaseModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Phase: return QStringLiteral("Phase");
    case Predicted: return QStringLiteral("Predicted");
    case Measured: return QStringLiteral("Measured");
    case Error: return QStringLiteral("Error");
  }
  return {};
}

void SweepModel::reset(const SweepSpec& spec) {
  beginResetModel();
  spec_ = spec;
  cells_.assign(spec.cells(), SweepCell{});
  best_ = worst_ = 0;
  done_ = 0;
  endResetModel();
}

void SweepModel::set_cell(int index, const SweepCell& c) {
  if (index < 0 || static_cast<size_t>(index) >= cells_.size()) return;
  const bool was_done = cells_[static_cast<size_t>(index)].state == CellState::done;
  cells_[static_cast<size_t>(index)] = c;
  if (!was_done && c.state == CellState::done) ++done_;
  const double old_best = best_, old_worst = worst_;
  best_ = 0;
  worst_ = 0;
  bool any = false;
  for (const auto& x : cells_)
    if (x.state == CellState::done && x.feasible) {
      best_ = any ? std::max(best_, x.tokens_per_s) : x.tokens_per_s;
      worst_ = any ? std::min(worst_, x.tokens_per_s) : x.tokens_per_s;
      any = true;
    }
  const int nx = columnCount();
  if (nx == 0) return;
  if (best_ != old_best || worst_ != old_worst)  // the colour scale moved: every cell changes colour
    Q_EMIT dataChanged(this->index(0, 0), this->index(rowCount() - 1, nx - 1));
  else
    Q_EMIT dataChanged(this->index(index / nx, index % nx), this->index(index / nx, index % nx));
}

const SweepCell& SweepModel::cell(int row, int column) const {
  return cells_.at(static_cast<size_t>(row) * spec_.x.values.size() + static_cast<size_t>(column));
}

int SweepModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(spec_.y.values.size());
}
int SweepModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(spec_.x.values.size());
}

QVariant SweepModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= columnCount()) return {};
  const SweepCell& c = cell(index.row(), index.column());
  const bool done = c.state == CellState::done;
  const double norm = best_ > worst_ ? (c.tokens_per_s - worst_) / (best_ - worst_) : 1.0;
  switch (role) {
    case Qt::DisplayRole:
      if (!done) return QStringLiteral("…");
      if (!c.feasible) return QStringLiteral("✕");
      return fmt::rate(c.tokens_per_s, "");
    case Qt::ToolTipRole: {
      const QString where = QStringLiteral("%1 = %2, %3 = %4")
                                .arg(QString::fromUtf8(knob_info(spec_.x.knob).label),
                                     fmt::qs(spec_.x.values[static_cast<size_t>(index.column())]),
                                     QString::fromUtf8(knob_info(spec_.y.knob).label),
                                     fmt::qs(spec_.y.values[static_cast<size_t>(index.row())]));
      if (!done) return where + QStringLiteral("\npending");
      if (!c.feasible) return where + QStringLiteral("\ninfeasible: ") + fmt::qs(c.reason);
      return where + QStringLiteral("\n%1 tokens/s, step %2, MFU %3\n%4\nclick to load into Explore")
                         .arg(fmt::rate(c.tokens_per_s, ""), fmt::duration(c.step_time_s), fmt::percent(c.mfu),
                              fmt::qs(c.bottleneck));
    }
    case Qt::BackgroundRole:
      if (!done) return QColor(0xf2, 0xf2, 0xf2);
      if (!c.feasible) return QColor(0xe6, 0xe1, 0xde);
      return heat_color(norm);
    case Qt::ForegroundRole:
      if (done && c.feasible) return QBrush(norm > 0.55 ? QColor(0x10, 0x10, 0x10) : QColor(0xff, 0xff, 0xff));
      return QBrush(fmt::kMuted);
    case Qt::TextAlignmentRole: return Qt::AlignCenter;
    case StateRole: return static_cast<int>(c.state);
    case CellFeasibleRole: return c.feasible;
    case TokensRole: return c.tokens_per_s;
    case NormRole: return norm;
  }
  return {};
}

QVariant SweepModel::headerData(int section, Qt::Orientation o, int role) const {
  if (role != Qt::DisplayRole) return {};
  const auto& vals = o == Qt::Horizontal ? spec_.x.values : spec_.y.values;
  if (section < 0 || static_cast<size_t>(section) >= vals.size()) return {};
  return fmt::qs(vals[static_cast<size_t>(section)]);
}

QColor heat_color(double t) {
  // Viridis, 6 stops, interpolated.
  static const QColor stops[] = {{0x44, 0x01, 0x54}, {0x41, 0x44, 0x87}, {0x2a, 0x78, 0x8e},
                                 {0x22, 0xa8, 0x84}, {0x7a, 0xd1, 0x51}, {0xfd, 0xe7, 0x25}};
  t = std::clamp(std::isfinite(t) ? t : 0.0, 0.0, 1.0) * 5.0;
  const int i = std::min(4, static_cast<int>(t));
  const double f = t - i;
  const QColor& a = stops[i];
  const QColor& b = stops[i + 1];
  return QColor::fromRgbF(static_cast<float>(a.redF() + f * (b.redF() - a.redF())),
                          static_cast<float>(a.greenF() + f * (b.greenF() - a.greenF())),
                          static_cast<float>(a.blueF() + f * (b.blueF() - a.blueF())));
}

}  // namespace zs::gui
