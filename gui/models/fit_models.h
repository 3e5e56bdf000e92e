// Item models over the memory model's answer (core/memory.h): the per-tier breakdown as a tree (tier → items)
// and the ranked fixes as a list. Plain views over core values; the Explore tab shows them.
//   MemoryTreeModel m;  m.set_report(core::memory_model(model, hw, strategy));
//   SuggestionModel s;  s.set_suggestions(core::suggest_fixes(model, hw, strategy));
#pragma once

#include <QAbstractItemModel>
#include <QAbstractListModel>

#include <vector>

#include "core/memory.h"
#include "gui/models/format.h"

namespace zs::gui {

// Rows: gpu, cpu, nvme; children: that tier's items. Columns: name, required/bytes, capacity, use.
class MemoryTreeModel : public QAbstractItemModel {
 public:
  enum Column { Name, Bytes, Capacity, Use, ColumnCount };
  explicit MemoryTreeModel(QObject* parent = nullptr) : QAbstractItemModel(parent) {}
  void set_report(const core::MemoryReport& r);
  const core::MemoryReport& report() const { return report_; }

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  core::MemoryReport report_;
  bool empty_ = true;
};

// Ranked fixes; FitsRole tells those that make the config fit. suggestion(row) is what "apply" installs.
class SuggestionModel : public QAbstractListModel {
 public:
  explicit SuggestionModel(QObject* parent = nullptr) : QAbstractListModel(parent) {}
  void set_suggestions(std::vector<core::Suggestion> s);
  const core::Suggestion& suggestion(int row) const { return items_.at(static_cast<size_t>(row)); }

  int rowCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;

 private:
  std::vector<core::Suggestion> items_;
};

}  // namespace zs::gui
