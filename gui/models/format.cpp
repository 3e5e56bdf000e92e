#include "gui/models/format.h"

#include <cmath>
#include <cstdio>
#include <utility>

#include "core/memory.h"
#include "gui/models/time_axis.h"

namespace zs::gui::fmt {

QString qs(const std::string& s) { return QString::fromStdString(s); }
QString bytes(int64_t b) { return qs(core::format_bytes(b)); }
QString duration(double s) { return qs(format_duration(s)); }

QString rate(double v, const char* unit) {
  const char* prefix = "";
  if (v >= 1e9) v /= 1e9, prefix = "G";
  else if (v >= 1e6) v /= 1e6, prefix = "M";
  else if (v >= 1e4) v /= 1e3, prefix = "k";
  char b[64];
  std::snprintf(b, sizeof b, v >= 100 ? "%.0f %s%s" : "%.3g %s%s", v, prefix, unit);
  return QString::fromUtf8(b);
}

QString percent(double f) {
  if (std::abs(f) < 0.0005) f = 0;  // no "-0.0%"
  char b[16];
  std::snprintf(b, sizeof b, std::abs(f) < 0.1 && f != 0 ? "%.1f%%" : "%.0f%%", 100.0 * f);
  return QString::fromUtf8(b);
}

QString gbps(double g) {
  char b[32];
  std::snprintf(b, sizeof b, g >= 10 ? "%.0f GB/s" : "%.2g GB/s", g);
  return QString::fromUtf8(b);
}

namespace {
// Tableau 10 (qualitative, colour-blind friendly enough, readable on white).
const QColor kPalette[] = {{0x4e, 0x79, 0xa7}, {0xf2, 0x8e, 0x2b}, {0xe1, 0x57, 0x59}, {0x76, 0xb7, 0xb2},
                           {0x59, 0xa1, 0x4f}, {0xed, 0xc9, 0x48}, {0xb0, 0x7a, 0xa1}, {0xff, 0x9d, 0xa7},
                           {0x9c, 0x75, 0x5f}, {0xba, 0xb0, 0xac}};
}  // namespace

QColor key_color(const std::string& key) {
  // Memory items (core/memory.cpp keys) by family: parameters blue, gradients orange, optimizer states red,
  // activations green, communication teal, swap buffers purple/brown, fixed overheads grey, peaks yellow.
  static const std::pair<const char*, QRgb> kFixed[] = {
      {"lp_params", 0x4e79a7},          {"persistent_params", 0x7aa6d6},  {"zero3_working_set", 0xa0cbe8},
      {"lp_grads", 0xf28e2b},           {"fp32_grads", 0xffbe7d},         {"module_grads", 0xe5a15a},
      {"grad_accum", 0xc9752a},         {"fp32_master", 0xe15759},        {"adam_m_v", 0xff9d9a},
      {"lp_copy_back", 0xb6404a},       {"activations", 0x59a14f},        {"activation_checkpoints", 0x8cd17d},
      {"comm_buckets", 0x76b7b2},       {"allreduce_peak", 0x499894},     {"hpz_secondary", 0x86bcb6},
      {"offload_staging", 0xb07aa1},    {"opt_swap_buffers", 0xd4a6c8},   {"param_swap_buffers", 0x9d7660},
      {"param_swap_reserve", 0xd7b5a6}, {"cuda_context", 0x79706e},       {"allocator_reserve", 0xbab0ac},
      {"host_process", 0x9c9c9c},       {"init_peak", 0xf1ce63},          {"optimizer_peak", 0xedc948},
  };
  for (const auto& [k, rgb] : kFixed)
    if (key == k) return QColor::fromRgb(rgb);
  uint32_t h = 2166136261u;
  for (unsigned char c : key) h = (h ^ c) * 16777619u;
  return kPalette[h % std::size(kPalette)];
}

QColor stream_color(core::Stream s) {
  switch (s) {
    case core::Stream::compute: return kPalette[0];
    case core::Stream::h2d: return kPalette[4];
    case core::Stream::d2h: return kPalette[1];
    case core::Stream::nvme_read: return kPalette[6];
    case core::Stream::nvme_write: return kPalette[8];
    case core::Stream::comm: return kPalette[3];
    case core::Stream::cpu_adam: return kPalette[2];
  }
  return kPalette[9];
}

QColor kind_color(core::OpKind k) {
  using K = core::OpKind;
  switch (k) {
    case K::forward: return {0x4e, 0x79, 0xa7};
    case K::backward: return {0x2c, 0x4d, 0x7a};
    case K::recompute: return {0x8c, 0xb4, 0xd9};
    case K::h2d: return {0x59, 0xa1, 0x4f};
    case K::d2h: return {0xf2, 0x8e, 0x2b};
    case K::nvme_read: return {0xb0, 0x7a, 0xa1};
    case K::nvme_write: return {0x9c, 0x75, 0x5f};
    case K::allgather: return {0x76, 0xb7, 0xb2};
    case K::reduce_scatter: return {0x3f, 0x8f, 0x8a};
    case K::allreduce: return {0x2a, 0x6f, 0x6a};
    case K::adam_cpu: return {0xe1, 0x57, 0x59};
    case K::adam_gpu: return {0xed, 0xc9, 0x48};
    case K::cast_cpu: return {0xff, 0x9d, 0xa7};
    case K::alloc:
    case K::release: return {0xba, 0xb0, 0xac};
  }
  return kPalette[9];
}

QColor phase_color(core::Phase p) {
  switch (p) {
    case core::Phase::forward: return {0x4e, 0x79, 0xa7};
    case core::Phase::backward: return {0x2c, 0x4d, 0x7a};
    case core::Phase::optimizer: return {0xe1, 0x57, 0x59};
  }
  return kPalette[9];
}

QColor tier_color(int tier) {
  switch (tier) {
    case 0: return {0x4e, 0x79, 0xa7};
    case 1: return {0x59, 0xa1, 0x4f};
    default: return {0xb0, 0x7a, 0xa1};
  }
}

}  // namespace zs::gui::fmt
