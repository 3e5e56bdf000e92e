#include "gui/models/fit_models.h"

#include <QBrush>
#include <QFont>

#include "gui/models/format.h"

namespace zs::gui {
namespace {
// Internal id of an index: 0 for tier rows, tier + 1 for item rows (their parent).
constexpr quintptr kTierId = 0;
}  // namespace

void MemoryTreeModel::set_report(const core::MemoryReport& r) {
  beginResetModel();
  report_ = r;
  empty_ = false;
  endResetModel();
}

QModelIndex MemoryTreeModel::index(int row, int column, const QModelIndex& parent) const {
  if (!hasIndex(row, column, parent)) return {};
  if (!parent.isValid()) return createIndex(row, column, kTierId);
  return createIndex(row, column, static_cast<quintptr>(parent.row() + 1));
}

QModelIndex MemoryTreeModel::parent(const QModelIndex& child) const {
  if (!child.isValid() || child.internalId() == kTierId) return {};
  return createIndex(static_cast<int>(child.internalId() - 1), 0, kTierId);
}

int MemoryTreeModel::rowCount(const QModelIndex& parent) const {
  if (empty_) return 0;
  if (!parent.isValid()) return 3;
  if (parent.column() != 0 || parent.internalId() != kTierId) return 0;
  return static_cast<int>(report_.tiers[static_cast<size_t>(parent.row())].items.size());
}

int MemoryTreeModel::columnCount(const QModelIndex&) const { return ColumnCount; }

QVariant MemoryTreeModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  const bool is_tier = index.internalId() == kTierId;
  const auto& tier = report_.tiers[static_cast<size_t>(is_tier ? index.row() : index.internalId() - 1)];
  const double cap = static_cast<double>(tier.capacity_bytes);
  if (is_tier) {
    switch (role) {
      case Qt::DisplayRole:
        switch (index.column()) {
          case Name: return fmt::qs(core::to_string(tier.tier)).toUpper() + QStringLiteral(" (") + fmt::qs(tier.scope) + QStringLiteral(")");
          case Bytes: return fmt::bytes(tier.required_bytes);
          case Capacity: return fmt::bytes(tier.capacity_bytes);
          case Use: return cap > 0 ? fmt::percent(tier.required_bytes / cap) : QStringLiteral("—");
        }
        break;
      case Qt::ForegroundRole:
        if (!tier.fits() && index.column() != Name) return QBrush(fmt::kBad);
        break;
      case Qt::FontRole: {
        QFont f;
        f.setBold(true);
        return f;
      }
      case Qt::ToolTipRole:
        return QStringLiteral("%1: %2 of %3%4")
            .arg(fmt::qs(core::to_string(tier.tier)), fmt::bytes(tier.required_bytes), fmt::bytes(tier.capacity_bytes),
                 tier.pinned_bytes > 0 ? QStringLiteral(" (%1 pinned)").arg(fmt::bytes(tier.pinned_bytes)) : QString());
      case BytesRole: return QVariant::fromValue<qint64>(tier.required_bytes);
      case KeyRole: return fmt::qs(core::to_string(tier.tier));
      case FitsRole: return tier.fits();
      case Qt::TextAlignmentRole:
        if (index.column() != Name) return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
        break;
    }
    return {};
  }
  const auto& item = tier.items[static_cast<size_t>(index.row())];
  switch (role) {
    case Qt::DisplayRole:
      switch (index.column()) {
        case Name: return fmt::qs(item.label);
        case Bytes: return fmt::bytes(item.bytes);
        case Capacity: {
          QStringList flags;
          if (item.pinned) flags << QStringLiteral("pinned");
          if (item.transient) flags << QStringLiteral("peak-time");
          return flags.join(QStringLiteral(", "));
        }
        case Use: return cap > 0 ? fmt::percent(item.bytes / cap) : QString();
      }
      break;
    case Qt::DecorationRole:
      if (index.column() == Name) return fmt::key_color(item.key);
      break;
    case Qt::ToolTipRole:
      return QStringLiteral("%1 — %2 (%3)").arg(fmt::qs(item.key), fmt::qs(item.label), fmt::bytes(item.bytes));
    case BytesRole: return QVariant::fromValue<qint64>(item.bytes);
    case KeyRole: return fmt::qs(item.key);
    case Qt::TextAlignmentRole:
      if (index.column() == Bytes || index.column() == Use) return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
      break;
  }
  return {};
}

QVariant MemoryTreeModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Name: return QStringLiteral("Tier / item");
    case Bytes: return QStringLiteral("Required");
    case Capacity: return QStringLiteral("Capacity / kind");
    case Use: return QStringLiteral("Use");
  }
  return {};
}

void SuggestionModel::set_suggestions(std::vector<core::Suggestion> s) {
  beginResetModel();
  items_ = std::move(s);
  endResetModel();
}

int SuggestionModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(items_.size());
}

QVariant SuggestionModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const auto& s = items_[static_cast<size_t>(index.row())];
  switch (role) {
    case Qt::DisplayRole:
      return (s.verdict == core::Verdict::fits    ? QStringLiteral("✓  ")
              : s.verdict == core::Verdict::tight ? QStringLiteral("~  ")
                                                  : QStringLiteral("–  ")) +
             fmt::qs(s.text);
    case Qt::ForegroundRole: return QBrush(s.fits ? fmt::kGood : QColor(0x42, 0x42, 0x42));
    case Qt::ToolTipRole:
      return fmt::qs(s.text) + (s.fits ? QStringLiteral("\nMakes the config fit. ") : QStringLiteral("\nHelps; not enough alone. ")) +
             QStringLiteral("Double-click or press Apply to use it.");
    case FitsRole: return s.fits;
    case ValueRole: return s.cost_rank;
  }
  return {};
}

}  // namespace zs::gui
