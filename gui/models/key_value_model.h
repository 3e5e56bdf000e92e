// KeyValueModel: sections of "label — value" rows as a two-level tree (section → rows), for the simulation
// summary and the model card. The section builders turn core/prediction values into rows; the model only shows.
//   KeyValueModel m;  m.set_sections(summary_sections(prediction));
#pragma once

#include <QAbstractItemModel>
#include <QString>

#include <vector>

#include "core/model.h"
#include "core/strategy.h"
#include "gui/models/prediction.h"

namespace zs::gui {

struct KeyValueRow {
  QString label, value, tooltip;
  bool warn = false;  // shown in red (a short link, an exposed bottleneck)
};
struct KeyValueSection {
  QString title;
  std::vector<KeyValueRow> rows;
};

class KeyValueModel : public QAbstractItemModel {
 public:
  enum Column { Label, Value, ColumnCount };
  explicit KeyValueModel(QObject* parent = nullptr) : QAbstractItemModel(parent) {}
  void set_sections(std::vector<KeyValueSection> s);
  const std::vector<KeyValueSection>& sections() const { return sections_; }

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  std::vector<KeyValueSection> sections_;
};

// Throughput, phases, bottleneck, exposed time, required bandwidths, memory peaks.
std::vector<KeyValueSection> summary_sections(const Prediction& p);
// Parameters, shape, FLOPs per token, and the run (world, batch, tokens per step).
std::vector<KeyValueSection> model_sections(const core::ModelSpec& m, const core::Strategy& s);

}  // namespace zs::gui
