// Item models of the Compare and Sweep tabs: predicted vs measured per phase with the error, and the sweep grid
// (rows: the y knob's values, columns: the x knob's; each cell tokens/s or the reason it is infeasible).
//   PhaseModel m;  m.set_rows(phase_rows(prediction, measured));
//   SweepModel s;  s.reset(spec);  s.set_cell(i, cell);
#pragma once

#include <QAbstractTableModel>
#include <QColor>
#include <QString>

#include <vector>

#include "core/trace_compare.h"
#include "gui/models/prediction.h"
#include "gui/models/sweep.h"

namespace zs::gui {

struct PhaseRow {
  QString label;
  double predicted_s = 0, measured_s = 0;
  // core::relative_error (signed), 0 without a measurement (the row shows "—" there, and it is no phase's error).
  double error() const { return measured_s > 0 ? core::relative_error(predicted_s, measured_s) : 0; }
};
// Forward, backward, optimizer, step, then each exposed category present in either. The phases are each
// Prediction's own (sim::summarize over the plan, or phase_spans for a trace of another plan), not
// core::compare_traces': the tab reads a measured trace with the prediction's definitions.
std::vector<PhaseRow> phase_rows(const Prediction& predicted, const Prediction& measured);
// What `zerosim compare` warns of the two traces (core::compare_traces: schedules differ, rank 0 ran another number
// of events), joined by "; "; empty when they look like one Plan's.
QString trace_warnings(const core::Trace& predicted, const core::Trace& measured);

class PhaseModel : public QAbstractTableModel {
 public:
  enum Column { Phase, Predicted, Measured, Error, ColumnCount };
  explicit PhaseModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}
  void set_rows(std::vector<PhaseRow> rows);
  const std::vector<PhaseRow>& rows() const { return rows_; }
  // Largest |error| over all rows, the exposure rows included.
  double max_abs_error() const;
  // The phase (forward, backward, optimizer) with the largest |error|: the headline's. Exposure rows are left
  // out: a few microseconds exposed in one trace and none in the other read as ±100% and say nothing of the step.
  // Null without rows.
  const PhaseRow* largest_phase_error() const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  std::vector<PhaseRow> rows_;
};

class SweepModel : public QAbstractTableModel {
 public:
  enum Role { StateRole = Qt::UserRole + 30, CellFeasibleRole, TokensRole, NormRole };
  explicit SweepModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}
  void reset(const SweepSpec& spec);
  void set_cell(int index, const SweepCell& c);  // index = iy * columns + ix
  const SweepSpec& spec() const { return spec_; }
  const SweepCell& cell(int row, int column) const;
  double best() const { return best_; }          // highest tokens/s so far
  int done() const { return done_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  SweepSpec spec_;
  std::vector<SweepCell> cells_;
  double best_ = 0, worst_ = 0;
  int done_ = 0;
};

// Heat colour for a normalised value in [0, 1] (viridis-like: dark blue → green → yellow).
QColor heat_color(double t);

}  // namespace zs::gui
