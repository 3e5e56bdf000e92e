// TimeAxis: the pure time ↔ pixel mapping under the timeline (hotspot's TimeLineDelegate keeps the same split):
// a visible window [view_start, view_end] of the data range [0, end] mapped onto [0, width) pixels, with zoom
// about an anchor pixel, pan, and "nice" ticks (1-2-5 steps). No Qt; tested on its own (tests/gui/test_time_axis).
//   TimeAxis a;  a.set_range(0, 2.5);  a.set_width(1000);
//   double x = a.x_of(1.0);            // 400
//   a.zoom(2.0, x);                    // twice as detailed, t = 1.0 stays under x
#pragma once

#include <string>
#include <vector>

namespace zs::gui {

struct Tick {
  double t_s = 0;
  double x = 0;
  std::string label;  // format_tick: "1.4 s", "350 ms", "12 µs"
};

class TimeAxis {
 public:
  // Data range; the view resets to all of it.
  void set_range(double start_s, double end_s);
  void set_width(double px);

  double x_of(double t_s) const { return (t_s - view_start_) * scale(); }
  double t_of(double x) const { return view_start_ + x / scale(); }
  double scale() const { return width_ / (view_end_ - view_start_); }  // pixels per second

  // factor > 1 zooms in; the time under `anchor_x` stays there. Clamped to the data range and min_span_s.
  void zoom(double factor, double anchor_x);
  // Moves the view by dx pixels (positive: later times come into view).
  void pan(double dx);
  // Shows [a, b] (clamped).
  void show(double a_s, double b_s);
  void fit() { show(start_, end_); }

  double view_start() const { return view_start_; }
  double view_end() const { return view_end_; }
  double start() const { return start_; }
  double end() const { return end_; }
  double width() const { return width_; }
  bool zoomed() const { return view_start_ > start_ || view_end_ < end_; }

  // Ticks at a 1-2-5 step so that labels sit at least min_spacing_px apart.
  std::vector<Tick> ticks(double min_spacing_px = 80) const;

  static constexpr double min_span_s = 1e-9;

 private:
  void clamp();
  double start_ = 0, end_ = 1;
  double view_start_ = 0, view_end_ = 1;
  double width_ = 1;
};

// "1.25 s", "350 ms", "12.5 µs", "80 ns": three significant digits at most, the unit chosen by magnitude.
std::string format_duration(double s);
// A tick label precise enough to tell ticks `step` apart: unit by the step, "1.4 s", "1050 ms", "500000.2 µs".
std::string format_tick(double t, double step);

}  // namespace zs::gui
