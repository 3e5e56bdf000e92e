// Formatting and colours shared by the models, charts and views: one palette, so a category ("adam_m_v",
// "backward", "PCIe host→GPU") has the same colour in every tab.
//   QString s = fmt::bytes(31.2 * kGiB);          // "31.2 GiB"
//   QColor c = fmt::key_color("lp_params");
#pragma once

#include <QColor>
#include <QString>

#include <cstdint>
#include <string>

#include "core/plan.h"

namespace zs::gui {

// Custom roles shared by the models.
enum ItemRole {
  BytesRole = Qt::UserRole + 1,  // int64 bytes of a tier or item (sorting, charts)
  KeyRole,                       // stable key: tier name or item key
  FitsRole,                      // bool: tier fits / suggestion makes it fit
  ValueRole,                     // double: the cell's number (sweep, phases)
};

}  // namespace zs::gui

namespace zs::gui::fmt {

QString qs(const std::string& s);
QString bytes(int64_t b);              // core::format_bytes
QString duration(double s);            // "1.25 s", "350 ms"
QString rate(double per_s, const char* unit);  // "12.3 k tokens/s"
QString percent(double fraction);      // "41%"
QString gbps(double GBps);             // "3.2 GB/s"

// A stable colour for any key (hash into a qualitative palette), and fixed ones for the common categories.
QColor key_color(const std::string& key);
QColor stream_color(core::Stream s);
QColor kind_color(core::OpKind k);
QColor phase_color(core::Phase p);
QColor tier_color(int tier);  // 0 gpu, 1 cpu, 2 nvme

inline const QColor kGood{0x2e, 0x7d, 0x32};   // fits
inline const QColor kBad{0xc6, 0x28, 0x28};    // does not fit / short
inline const QColor kMuted{0x75, 0x75, 0x75};

}  // namespace zs::gui::fmt
