#include "gui/models/time_axis.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace zs::gui {

void TimeAxis::set_range(double start_s, double end_s) {
  start_ = start_s;
  end_ = std::max(end_s, start_s + min_span_s);
  view_start_ = start_;
  view_end_ = end_;
}

void TimeAxis::set_width(double px) { width_ = std::max(1.0, px); }

void TimeAxis::clamp() {
  const double full = end_ - start_;
  double span = std::clamp(view_end_ - view_start_, std::min(min_span_s, full), full);
  double a = std::clamp(view_start_, start_, end_ - span);
  view_start_ = a;
  view_end_ = a + span;
}

void TimeAxis::zoom(double factor, double anchor_x) {
  if (!(factor > 0)) return;
  const double t = t_of(anchor_x);
  const double span = (view_end_ - view_start_) / factor;
  const double frac = anchor_x / width_;
  view_start_ = t - frac * span;
  view_end_ = view_start_ + span;
  clamp();
}

void TimeAxis::pan(double dx) {
  const double dt = dx / scale();
  view_start_ += dt;
  view_end_ += dt;
  clamp();
}

void TimeAxis::show(double a_s, double b_s) {
  if (b_s < a_s) std::swap(a_s, b_s);
  view_start_ = a_s;
  view_end_ = std::max(b_s, a_s + min_span_s);
  clamp();
}

std::vector<Tick> TimeAxis::ticks(double min_spacing_px) const {
  std::vector<Tick> out;
  const double min_dt = min_spacing_px / scale();
  double step = std::pow(10.0, std::floor(std::log10(min_dt)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (step * m >= min_dt) {
      step *= m;
      break;
    }
  const double first = std::ceil(view_start_ / step - 1e-9) * step;
  for (int i = 0; i < 1000; ++i) {
    const double t = first + i * step;
    if (t > view_end_ + step * 1e-9) break;
    out.push_back({t, x_of(t), format_tick(std::abs(t) < step * 1e-6 ? 0.0 : t, step)});
  }
  return out;
}

std::string format_tick(double t, double step) {
  if (t == 0) return "0";
  const char* unit;
  double k;
  if (step >= 0.1) unit = "s", k = 1;
  else if (step >= 1e-4) unit = "ms", k = 1e3;
  else if (step >= 1e-7) unit = "µs", k = 1e6;
  else unit = "ns", k = 1e9;
  const int decimals = std::max(0, static_cast<int>(std::ceil(-std::log10(step * k) - 1e-9)));
  char b[48];
  std::snprintf(b, sizeof b, "%.*f %s", decimals, t * k, unit);
  return b;
}

std::string format_duration(double s) {
  char b[32];
  const double a = std::abs(s);
  if (a == 0) return "0";
  const char* unit;
  double v;
  if (a >= 1) unit = "s", v = s;
  else if (a >= 1e-3) unit = "ms", v = s * 1e3;
  else if (a >= 1e-6) unit = "µs", v = s * 1e6;
  else unit = "ns", v = s * 1e9;
  std::snprintf(b, sizeof b, "%.3g %s", v, unit);
  return b;
}

}  // namespace zs::gui
