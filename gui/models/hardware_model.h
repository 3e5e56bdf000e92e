// HardwareModel: a machine profile (core::Hardware) edited field by field — groups (cluster, GPU, CPU, NVMe,
// links, measured) with their fields as children; the Value column is editable and validated (numbers ≥ 0,
// counts ≥ 1 where zero makes no sense; an empty measured value clears it). Field keys ("gpu.memory_GiB") name
// the edits in a session file.
//   HardwareModel m;  m.set_hardware(*core::load_hardware("dgx2"));
//   m.set_field("gpu.memory_GiB", 40.0);  core::Hardware edited = m.hardware();
#pragma once

#include <QAbstractItemModel>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/hardware.h"

namespace zs::gui {

class HardwareModel : public QAbstractItemModel {
 public:
  enum Column { Field, Value, Unit, ColumnCount };
  explicit HardwareModel(QObject* parent = nullptr);

  void set_hardware(const core::Hardware& h);
  const core::Hardware& hardware() const { return hw_; }
  // Called after every successful edit (the Explore tab re-evaluates).
  void on_edited(std::function<void(const std::string& key)> f) { edited_ = std::move(f); }

  // By key; false (unchanged) when the key is unknown or the value invalid.
  bool set_field(const std::string& key, const QVariant& value);
  QVariant field(const std::string& key) const;
  std::vector<std::string> field_keys() const;

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

  // One editable field: its key, label and unit, and how to read and write it.
  struct FieldDef {
    std::string key;    // "gpu.memory_GiB"
    const char* label;  // "HBM capacity"
    const char* unit;   // "GiB"
    enum class Type { text, number, count, optional_number, optional_count } type;
    double min = 0;     // smallest allowed (numbers and counts)
    std::function<QVariant(const core::Hardware&)> get;  // invalid QVariant: unset
    std::function<void(core::Hardware&, const QVariant&)> set;  // value already validated (invalid: clear)
  };
  struct Group {
    const char* label;
    std::vector<FieldDef> fields;
  };

 private:
  const FieldDef* def(const QModelIndex& index) const;
  const FieldDef* def(const std::string& key) const;
  bool assign(const FieldDef& f, const QVariant& value);
  std::vector<Group> groups_;
  core::Hardware hw_;
  std::function<void(const std::string&)> edited_;
};


}  // namespace zs::gui
