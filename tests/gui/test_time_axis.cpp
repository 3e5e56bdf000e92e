// The timeline's pure time ↔ pixel mapping (gui/models/time_axis.h): round trips, zoom about an anchor, pan and
// clamping to the data, and ticks at 1-2-5 steps with readable labels.
#include <QtTest>

#include "gui/models/time_axis.h"

using zs::gui::TimeAxis;

class TestTimeAxis : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void mapsBothWays() {
    TimeAxis a;
    a.set_range(0, 2.5);
    a.set_width(1000);
    QCOMPARE(a.x_of(0), 0.0);
    QCOMPARE(a.x_of(2.5), 1000.0);
    QCOMPARE(a.x_of(1.0), 400.0);
    QCOMPARE(a.t_of(400), 1.0);
    for (double t : {0.0, 0.1234, 1.7, 2.5}) QCOMPARE(a.t_of(a.x_of(t)), t);
    QCOMPARE(a.scale(), 400.0);
    QVERIFY(!a.zoomed());
  }

  void zoomKeepsTheAnchor() {
    TimeAxis a;
    a.set_range(0, 10);
    a.set_width(1000);
    const double t = a.t_of(250);
    a.zoom(4, 250);
    QVERIFY(a.zoomed());
    QCOMPARE(a.view_end() - a.view_start(), 2.5);
    QCOMPARE(a.t_of(250), t);  // the time under the mouse stays under it
    a.zoom(0.25, 250);
    QCOMPARE(a.view_start(), 0.0);
    QCOMPARE(a.view_end(), 10.0);
    a.zoom(0.01, 500);  // never wider than the data
    QCOMPARE(a.view_end() - a.view_start(), 10.0);
    for (int i = 0; i < 200; ++i) a.zoom(10, 500);  // never narrower than min_span_s
    QVERIFY(a.view_end() - a.view_start() >= TimeAxis::min_span_s * 0.999);
    QVERIFY(a.view_start() >= 0 && a.view_end() <= 10);
  }

  void panIsClamped() {
    TimeAxis a;
    a.set_range(0, 10);
    a.set_width(1000);
    a.show(2, 4);
    a.pan(100);  // 100 px at 500 px/s = 0.2 s
    QCOMPARE(a.view_start(), 2.2);
    QCOMPARE(a.view_end(), 4.2);
    a.pan(-1e6);
    QCOMPARE(a.view_start(), 0.0);
    QCOMPARE(a.view_end(), 2.0);
    a.pan(1e6);
    QCOMPARE(a.view_end(), 10.0);
    QCOMPARE(a.view_start(), 8.0);
    a.fit();
    QVERIFY(!a.zoomed());
    a.show(7, 3);  // reversed bounds are fine
    QCOMPARE(a.view_start(), 3.0);
  }

  void widthChangesScaleNotWindow() {
    TimeAxis a;
    a.set_range(0, 1);
    a.show(0.2, 0.6);
    a.set_width(400);
    QCOMPARE(a.scale(), 1000.0);
    a.set_width(800);
    QCOMPARE(a.view_start(), 0.2);
    QCOMPARE(a.scale(), 2000.0);
  }

  void ticksAreNice() {
    TimeAxis a;
    a.set_range(0, 1.6);
    a.set_width(1200);
    const auto ticks = a.ticks(90);
    QVERIFY(ticks.size() >= 5);
    const double step = ticks[1].t_s - ticks[0].t_s;
    QCOMPARE(step, 0.2);  // 1-2-5 steps: 0.1 s would be 75 px at 750 px/s, 0.2 s is the first at least 90 px
    for (size_t i = 1; i < ticks.size(); ++i) QVERIFY(ticks[i].x - ticks[i - 1].x >= 90 - 1e-9);
    QCOMPARE(QString::fromStdString(ticks[0].label), QStringLiteral("0"));
    QCOMPARE(QString::fromStdString(ticks[3].label), QStringLiteral("0.6 s"));
    // Deep zoom: labels stay distinct (precision follows the step, not the magnitude).
    a.show(0.5, 0.5 + 2e-6);
    const auto fine = a.ticks(90);
    QVERIFY(fine.size() >= 5);
    QCOMPARE(QString::fromStdString(fine[0].label), QStringLiteral("500000.0 µs"));
    QCOMPARE(QString::fromStdString(fine[1].label), QStringLiteral("500000.2 µs"));
    for (const auto& t : fine) QVERIFY(t.x >= -1e-6 && t.x <= 1200 + 1e-6);
    QCOMPARE(QString::fromStdString(zs::gui::format_tick(1.05, 0.05)), QStringLiteral("1050 ms"));
  }

  void formatsDurations() {
    using zs::gui::format_duration;
    QCOMPARE(QString::fromStdString(format_duration(1.25)), QStringLiteral("1.25 s"));
    QCOMPARE(QString::fromStdString(format_duration(0.35)), QStringLiteral("350 ms"));
    QCOMPARE(QString::fromStdString(format_duration(12.5e-6)), QStringLiteral("12.5 µs"));
    QCOMPARE(QString::fromStdString(format_duration(80e-9)), QStringLiteral("80 ns"));
    QCOMPARE(QString::fromStdString(format_duration(0)), QStringLiteral("0"));
  }
};

QTEST_APPLESS_MAIN(TestTimeAxis)
#include "test_time_axis.moc"
