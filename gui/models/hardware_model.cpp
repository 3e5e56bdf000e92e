#include "gui/models/hardware_model.h"

#include <QBrush>
#include <QFont>

#include <cmath>

#include "gui/models/format.h"

namespace zs::gui {
namespace {

using F = HardwareModel::FieldDef;
using T = F::Type;
using H = core::Hardware;

// Field makers: an accessor returning a reference to the member serves both get and set.
template <class Acc>
F number(const char* key, const char* label, const char* unit, Acc acc, double min = 0) {
  return {key, label, unit, T::number, min, [acc](const H& h) { return QVariant(acc(const_cast<H&>(h))); },
          [acc](H& h, const QVariant& v) { acc(h) = v.toDouble(); }};
}
template <class Acc>
F count(const char* key, const char* label, const char* unit, Acc acc, double min = 0) {
  return {key, label, unit, T::count, min, [acc](const H& h) { return QVariant::fromValue<qint64>(acc(const_cast<H&>(h))); },
          [acc](H& h, const QVariant& v) { acc(h) = v.toLongLong(); }};
}
template <class Acc>
F opt_number(const char* key, const char* label, const char* unit, Acc acc) {
  return {key, label, unit, T::optional_number, 0,
          [acc](const H& h) {
            const auto& o = acc(const_cast<H&>(h));
            return o ? QVariant(*o) : QVariant();
          },
          [acc](H& h, const QVariant& v) {
            if (v.isValid()) acc(h) = v.toDouble();
            else acc(h).reset();
          }};
}
template <class Acc>
F opt_count(const char* key, const char* label, const char* unit, Acc acc) {
  return {key, label, unit, T::optional_count, 1,
          [acc](const H& h) {
            const auto& o = acc(const_cast<H&>(h));
            return o ? QVariant::fromValue<qint64>(*o) : QVariant();
          },
          [acc](H& h, const QVariant& v) {
            if (v.isValid()) acc(h) = v.toLongLong();
            else acc(h).reset();
          }};
}

// Item ids: groups are 0; a field's id is its group index + 1 (its parent).
constexpr quintptr kGroupId = 0;

QString number_text(double v) {
  return std::abs(v) >= 1e6 || (v != 0 && std::abs(v) < 1e-3) ? QString::number(v, 'g', 6) : QString::number(v, 'g', 10);
}

}  // namespace

HardwareModel::HardwareModel(QObject* parent) : QAbstractItemModel(parent) {
  groups_ = {
      {"Machine",
       {{"name", "Name", "", T::text, 0, [](const H& h) { return QVariant(fmt::qs(h.name)); },
         [](H& h, const QVariant& v) { h.name = v.toString().toStdString(); }},
        count("nodes", "Nodes available", "", [](H& h) -> auto& { return h.nodes; }, 1),
        count("gpus_per_node", "GPUs per node", "", [](H& h) -> auto& { return h.gpus_per_node; }, 1)}},
      {"GPU",
       {{"gpu.name", "Model", "", T::text, 0, [](const H& h) { return QVariant(fmt::qs(h.gpu.name)); },
         [](H& h, const QVariant& v) { h.gpu.name = v.toString().toStdString(); }},
        number("gpu.memory_GiB", "HBM capacity", "GiB", [](H& h) -> auto& { return h.gpu.memory_GiB; }),
        number("gpu.peak_tflops_fp16", "Peak FP16", "TFLOPS", [](H& h) -> auto& { return h.gpu.peak_tflops_fp16; }),
        number("gpu.peak_tflops_bf16", "Peak BF16", "TFLOPS", [](H& h) -> auto& { return h.gpu.peak_tflops_bf16; }),
        number("gpu.peak_tflops_fp32", "Peak FP32", "TFLOPS", [](H& h) -> auto& { return h.gpu.peak_tflops_fp32; }),
        number("gpu.hbm_GBps", "HBM bandwidth", "GB/s", [](H& h) -> auto& { return h.gpu.hbm_GBps; })}},
      {"CPU and DRAM (per node)",
       {count("cpu.sockets", "Sockets", "", [](H& h) -> auto& { return h.cpu.sockets; }, 1),
        count("cpu.cores", "Cores", "", [](H& h) -> auto& { return h.cpu.cores; }, 1),
        number("cpu.memory_GiB", "DRAM capacity", "GiB", [](H& h) -> auto& { return h.cpu.memory_GiB; }),
        number("cpu.memory_GBps", "DRAM bandwidth", "GB/s", [](H& h) -> auto& { return h.cpu.memory_GBps; })}},
      {"NVMe (per node)",
       {count("nvme.drives", "Drives", "", [](H& h) -> auto& { return h.nvme.drives; }),
        number("nvme.capacity_GB_each", "Capacity each", "GB", [](H& h) -> auto& { return h.nvme.capacity_GB_each; }),
        number("nvme.read_GBps_each", "Read each", "GB/s", [](H& h) -> auto& { return h.nvme.read_GBps_each; }),
        number("nvme.write_GBps_each", "Write each", "GB/s", [](H& h) -> auto& { return h.nvme.write_GBps_each; })}},
      {"Links",
       {number("links.pcie_h2d_GBps", "PCIe host→GPU (per GPU)", "GB/s", [](H& h) -> auto& { return h.links.pcie_h2d_GBps; }),
        number("links.pcie_d2h_GBps", "PCIe GPU→host (per GPU)", "GB/s", [](H& h) -> auto& { return h.links.pcie_d2h_GBps; }),
        number("links.pcie_host_GBps", "Host uplink (per node)", "GB/s", [](H& h) -> auto& { return h.links.pcie_host_GBps; }),
        number("links.nvlink_GBps", "NVLink (per GPU, per direction)", "GB/s", [](H& h) -> auto& { return h.links.nvlink_GBps; }),
        number("links.network_GBps_per_node", "Network (per node)", "GB/s",
               [](H& h) -> auto& { return h.links.network_GBps_per_node; }),
        number("links.network_latency_us", "Network latency", "µs", [](H& h) -> auto& { return h.links.network_latency_us; })}},
      {"Measured (zerosim probe)",
       {opt_number("measured.dram_triad_GBps", "DRAM triad", "GB/s", [](H& h) -> auto& { return h.measured.dram_triad_GBps; }),
        opt_number("measured.dram_adam_pattern_GBps", "DRAM Adam pattern", "GB/s",
                   [](H& h) -> auto& { return h.measured.dram_adam_pattern_GBps; }),
        opt_number("measured.cpu_adam_params_per_s", "CPU Adam", "params/s",
                   [](H& h) -> auto& { return h.measured.cpu_adam_params_per_s; }),
        opt_count("measured.cpu_adam_threads", "CPU Adam threads", "", [](H& h) -> auto& { return h.measured.cpu_adam_threads; }),
        opt_number("measured.nvme_read_GBps", "NVMe read (node)", "GB/s", [](H& h) -> auto& { return h.measured.nvme_read_GBps; }),
        opt_number("measured.nvme_write_GBps", "NVMe write (node)", "GB/s",
                   [](H& h) -> auto& { return h.measured.nvme_write_GBps; }),
        opt_number("measured.gemm_efficiency", "GEMM efficiency", "of peak", [](H& h) -> auto& { return h.measured.gemm_efficiency; }),
        opt_number("measured.pcie_h2d_pageable_GBps", "PCIe H2D pageable", "GB/s",
                   [](H& h) -> auto& { return h.measured.pcie_h2d_pageable_GBps; }),
        opt_number("measured.pcie_d2h_pageable_GBps", "PCIe D2H pageable", "GB/s",
                   [](H& h) -> auto& { return h.measured.pcie_d2h_pageable_GBps; }),
        opt_number("measured.pcie_latency_us", "PCIe fixed cost per copy", "µs",
                   [](H& h) -> auto& { return h.measured.pcie_latency_us; }),
        opt_number("measured.nccl_busbw_GBps", "NCCL bus bandwidth", "GB/s",
                   [](H& h) -> auto& { return h.measured.nccl_busbw_GBps; })}},
  };
}

void HardwareModel::set_hardware(const core::Hardware& h) {
  beginResetModel();
  hw_ = h;
  endResetModel();
}

const HardwareModel::FieldDef* HardwareModel::def(const QModelIndex& index) const {
  if (!index.isValid() || index.internalId() == kGroupId) return nullptr;
  return &groups_[index.internalId() - 1].fields[static_cast<size_t>(index.row())];
}

const HardwareModel::FieldDef* HardwareModel::def(const std::string& key) const {
  for (const auto& g : groups_)
    for (const auto& f : g.fields)
      if (f.key == key) return &f;
  return nullptr;
}

std::vector<std::string> HardwareModel::field_keys() const {
  std::vector<std::string> k;
  for (const auto& g : groups_)
    for (const auto& f : g.fields) k.push_back(f.key);
  return k;
}

QVariant HardwareModel::field(const std::string& key) const {
  const FieldDef* f = def(key);
  return f ? f->get(hw_) : QVariant();
}

bool HardwareModel::assign(const FieldDef& f, const QVariant& value) {
  const QString text = value.toString().trimmed();
  QVariant v;
  switch (f.type) {
    case T::text:
      if (text.isEmpty()) return false;
      v = text;
      break;
    case T::number:
    case T::optional_number: {
      if (f.type == T::optional_number && text.isEmpty()) break;  // clears
      bool ok = false;
      const double d = text.toDouble(&ok);
      if (!ok || !std::isfinite(d) || d < f.min) return false;
      v = d;
      break;
    }
    case T::count:
    case T::optional_count: {
      if (f.type == T::optional_count && text.isEmpty()) break;
      bool ok = false;
      const double d = text.toDouble(&ok);  // "2e3" is fine for a count
      if (!ok || d != std::floor(d) || d < f.min || d > 1e12) return false;
      v = QVariant::fromValue<qint64>(static_cast<qint64>(d));
      break;
    }
  }
  f.set(hw_, v);
  return true;
}

bool HardwareModel::set_field(const std::string& key, const QVariant& value) {
  for (size_t g = 0; g < groups_.size(); ++g)
    for (size_t r = 0; r < groups_[g].fields.size(); ++r)
      if (groups_[g].fields[r].key == key)
        return setData(createIndex(static_cast<int>(r), Value, static_cast<quintptr>(g + 1)), value, Qt::EditRole);
  return false;
}

QModelIndex HardwareModel::index(int row, int column, const QModelIndex& parent) const {
  if (!hasIndex(row, column, parent)) return {};
  if (!parent.isValid()) return createIndex(row, column, kGroupId);
  return createIndex(row, column, static_cast<quintptr>(parent.row() + 1));
}

QModelIndex HardwareModel::parent(const QModelIndex& child) const {
  if (!child.isValid() || child.internalId() == kGroupId) return {};
  return createIndex(static_cast<int>(child.internalId() - 1), 0, kGroupId);
}

int HardwareModel::rowCount(const QModelIndex& parent) const {
  if (!parent.isValid()) return static_cast<int>(groups_.size());
  if (parent.column() != 0 || parent.internalId() != kGroupId) return 0;
  return static_cast<int>(groups_[static_cast<size_t>(parent.row())].fields.size());
}

int HardwareModel::columnCount(const QModelIndex&) const { return ColumnCount; }

QVariant HardwareModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  const FieldDef* f = def(index);
  if (!f) {
    if (role == Qt::DisplayRole && index.column() == Field) return QString::fromUtf8(groups_[static_cast<size_t>(index.row())].label);
    if (role == Qt::FontRole) {
      QFont font;
      font.setBold(true);
      return font;
    }
    return {};
  }
  const QVariant v = f->get(hw_);
  switch (role) {
    case Qt::DisplayRole:
      switch (index.column()) {
        case Field: return QString::fromUtf8(f->label);
        case Value:
          if (!v.isValid()) return QStringLiteral("—");
          if (f->type == T::number || f->type == T::optional_number) return number_text(v.toDouble());
          return v.toString();
        case Unit: return QString::fromUtf8(f->unit);
      }
      break;
    case Qt::EditRole:
      if (index.column() == Value) {
        if (!v.isValid()) return QString();
        if (f->type == T::number || f->type == T::optional_number) return number_text(v.toDouble());
        return v.toString();
      }
      break;
    case Qt::ForegroundRole:
      if (index.column() == Unit || (index.column() == Value && !v.isValid())) return QBrush(fmt::kMuted);
      break;
    case Qt::ToolTipRole:
      return QStringLiteral("%1 (%2): double-click to edit%3")
          .arg(QString::fromUtf8(f->label), fmt::qs(f->key),
               f->type == T::optional_number || f->type == T::optional_count ? QStringLiteral("; empty = use the datasheet figure") : QString());
    case KeyRole: return fmt::qs(f->key);
    case Qt::TextAlignmentRole:
      if (index.column() == Value) return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
      break;
  }
  return {};
}

bool HardwareModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (role != Qt::EditRole || index.column() != Value) return false;
  const FieldDef* f = def(index);
  if (!f || !assign(*f, value)) return false;
  Q_EMIT dataChanged(index, index);
  if (edited_) edited_(f->key);
  return true;
}

Qt::ItemFlags HardwareModel::flags(const QModelIndex& index) const {
  if (!index.isValid()) return Qt::NoItemFlags;
  Qt::ItemFlags fl = Qt::ItemIsEnabled | Qt::ItemIsSelectable;
  if (def(index) && index.column() == Value) fl |= Qt::ItemIsEditable;
  return fl;
}

QVariant HardwareModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Field: return QStringLiteral("Field");
    case Value: return QStringLiteral("Value");
    case Unit: return QStringLiteral("Unit");
  }
  return {};
}

}  // namespace zs::gui
