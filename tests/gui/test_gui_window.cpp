// The main window: keyboard shortcuts, simulate → compare with a trace file, the Compare tab's placeholder until a
// trace is loaded, sessions saved and restored, and the screenshot driver (prepare_tab + grab) for each tab.
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "core/json_reader.h"
#include "gui/models/format.h"
#include "gui/models/jobs.h"
#include "gui/widgets/compare_tab.h"
#include "gui/widgets/explore_tab.h"
#include "gui/widgets/main_window.h"
#include "gui/widgets/simulate_tab.h"
#include "gui/widgets/sweep_tab.h"
#include "gui/widgets/timeline_view.h"

using namespace zs;
using namespace zs::gui;

namespace {
// A measured step as the engine writes it (source "train"): forward, backward, CPU Adam; no prediction needed.
core::Trace small_measured_trace() {
  core::Trace t;
  t.source = "train";
  t.schedule = "deepspeed";
  core::TraceEvent f;
  f.op = 0, f.start_s = 0, f.end_s = 0.1, f.layer = 0;
  core::TraceEvent b = f;
  b.op = 1, b.kind = core::OpKind::backward, b.phase = core::Phase::backward, b.start_s = 0.1, b.end_s = 0.3;
  core::TraceEvent a = f;
  a.op = 2, a.stream = core::Stream::cpu_adam, a.kind = core::OpKind::adam_cpu, a.phase = core::Phase::optimizer;
  a.start_s = 0.3, a.end_s = 0.35, a.layer = -1;
  t.events = {f, b, a};
  t.step_time_s = 0.35;
  t.memory = {{0.0, {1 << 20, 4 << 20, 0}}, {0.1, {3 << 20, 4 << 20, 0}}, {0.35, {1 << 20, 4 << 20, 0}}};
  t.peak_bytes = {3 << 20, 4 << 20, 0};
  return t;
}
}  // namespace

class TestGuiWindow : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void shortcutsSwitchTabs() {
    MainWindow w;
    w.show();
    QVERIFY(QTest::qWaitForWindowActive(&w));  // window shortcuts need the active window
    QVERIFY(w.open({"gpt2-124m", "dgx-a100-80gb", "zero2"}));
    const Qt::Key keys[] = {Qt::Key_1, Qt::Key_2, Qt::Key_3, Qt::Key_4};
    for (int i = 3; i >= 0; --i) {
      QTest::keyClick(&w, keys[i], Qt::ControlModifier);
      QCOMPARE(w.current_tab(), MainWindow::tab_names()[i]);
    }
    w.show_tab(QStringLiteral("compare"));
    QCOMPARE(w.current_tab(), QStringLiteral("compare"));
  }

  void simulateThenCompare() {
    if (!simulator_available()) QSKIP("built without SimGrid: no simulator");
    MainWindow w;
    w.show();
    QVERIFY(QTest::qWaitForWindowActive(&w));  // window shortcuts need the active window
    QVERIFY(w.open({"gpt2-355m", "dgx-a100-80gb", "zero3-offload-cpu"}));
    QSignalSpy done(w.simulate_tab()->job(), &Job::done);
    QTest::keyClick(&w, Qt::Key_F5);
    QCOMPARE(w.current_tab(), QStringLiteral("simulate"));
    QVERIFY(done.wait(60000));
    const Prediction& p = w.simulate_tab()->result();
    QVERIFY(p.feasible && p.step_time_s > 0);
    QVERIFY(w.simulate_tab()->timeline_model()->lanes() > 0);
    QVERIFY(w.simulate_tab()->summary_model()->rowCount() > 3);
    // Zoom by shortcut: the Simulate timeline's axis narrows, Ctrl+0 fits again.
    TimelineView* tv = w.simulate_tab()->timeline();
    QTest::keyClick(&w, Qt::Key_Equal, Qt::ControlModifier);
    QVERIFY(tv->axis().zoomed());
    QTest::keyClick(&w, Qt::Key_0, Qt::ControlModifier);
    QVERIFY(!tv->axis().zoomed());
    // A "measured" trace: the prediction's own, written as zerosim trace JSON — every error is then zero.
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("measured.json"));
    QVERIFY(core::write_file_atomic(path.toStdString(), core::trace_to_json(p.trace)).ok());
    QVERIFY2(w.load_trace(path), qPrintable(w.last_error()));
    PhaseModel* pm = w.compare()->phase_model();
    QVERIFY(pm->rowCount() >= 4);
    QVERIFY(pm->max_abs_error() < 1e-9);
    QCOMPARE(w.compare()->measured_model()->lanes(), w.compare()->predicted_model()->lanes());
    // Memory against a measurement: the tensors' bytes, the framework's fixed bytes set apart. An engine's trace has
    // none; the same timeline without them shows the same tensor peak on both lines.
    QVERIFY(p.trace.overhead_bytes[0] > 0);
    const double tensors = static_cast<double>(p.peak_bytes[0] - p.trace.overhead_bytes[0]);
    // A series' largest value in bytes (the chart's unit is its y label).
    auto series_max = [](const charts::LineChartData& d, size_t i) {
      const double unit = d.y_label == QStringLiteral("GiB")   ? core::kGiB
                          : d.y_label == QStringLiteral("MiB") ? 1048576.0
                                                               : 1024.0;
      double y = -1;
      for (const auto& q : d.series.at(i).points) y = std::max(y, q.y());
      return y * unit;
    };
    {
      const auto& d = w.compare()->memory_charts()->data(0);
      QVERIFY2(d.title.contains(QStringLiteral("tensors")), qPrintable(d.title));
      QCOMPARE(d.series.size(), size_t{2});
      QVERIFY(std::abs(series_max(d, 0) - tensors) < 1e-6 * tensors);
      QVERIFY(std::abs(series_max(d, 1) - tensors) < 1e-6 * tensors);
    }
    core::Trace engine_like = p.trace;
    for (auto& x : engine_like.memory)
      for (size_t t = 0; t < 3; ++t) x.bytes[t] -= engine_like.overhead_bytes[t];
    for (size_t t = 0; t < 3; ++t) engine_like.peak_bytes[t] -= engine_like.overhead_bytes[t];
    engine_like.overhead_bytes = {};
    const QString engine_path = dir.filePath(QStringLiteral("engine.json"));
    QVERIFY(core::write_file_atomic(engine_path.toStdString(), core::trace_to_json(engine_like)).ok());
    QVERIFY2(w.load_trace(engine_path), qPrintable(w.last_error()));
    {
      const auto& d = w.compare()->memory_charts()->data(0);
      QVERIFY2(d.title.contains(fmt::bytes(p.trace.overhead_bytes[0]) + QStringLiteral(" predicted")),
               qPrintable(d.title));
      QVERIFY(std::abs(series_max(d, 0) - tensors) < 1e-6 * tensors);
      QVERIFY(std::abs(series_max(d, 1) - tensors) < 1e-6 * tensors);
      QVERIFY(!d.reference.has_value());  // capacity bounds the process, not its tensors
    }
    QVERIFY(!w.load_trace(dir.filePath(QStringLiteral("none.json"))));
    // Scenario edits mark the result stale but keep it.
    QVERIFY(w.explore()->set_knob(Knob::micro_batch, "2"));
    QVERIFY(w.simulate_tab()->has_result());
  }

  // Until a trace is loaded, Compare says which file to load, how, and what it will show — not blank space.
  void comparePlaceholderUntilATraceIsLoaded() {
    {
      MainWindow w;
      w.show();
      QVERIFY(w.open({"gpt2-124m", "dgx-a100-80gb", "zero2"}));
      w.show_tab(QStringLiteral("compare"));
      QVERIFY(w.compare()->placeholder_shown());
      QVERIFY(w.compare()->placeholder()->isVisible());
    }
    CompareTab tab;
    tab.resize(1280, 760);
    tab.show();
    QVERIFY(QTest::qWaitForWindowExposed(&tab));
    QVERIFY(tab.placeholder_shown());
    auto* text = tab.findChild<QLabel*>(QStringLiteral("placeholder_text"));
    QVERIFY(text && text->isVisible());
    // Which file (the zerosim trace JSON, and the commands that write it), where to click, what it then shows.
    for (const char* s : {"zerosim-trace", "zerosim train", "--trace", "--raw-trace", "Load trace…", "Ctrl+T",
                          "timelines", "predicted vs measured", "error", "memory"})
      QVERIFY2(text->text().contains(QString::fromUtf8(s)), s);
    // Its wrapped text is all on screen: the label has the height its width needs.
    QVERIFY(text->height() >= text->heightForWidth(text->width()));
    auto* button = tab.findChild<QPushButton*>(QStringLiteral("placeholder_load_trace"));
    QVERIFY(button && button->isVisible());
    int asked = 0;
    tab.on_load_requested([&] { ++asked; });
    QTest::mouseClick(button, Qt::LeftButton);
    QCOMPARE(asked, 1);
    auto* status = tab.findChild<QLabel*>(QStringLiteral("placeholder_status"));
    QVERIFY(status->text().contains(QStringLiteral("F5")));

    QTemporaryDir dir;
    // A file that is not a zerosim trace (here Chrome/Perfetto events): the placeholder stays and says why.
    const core::Trace t = small_measured_trace();
    const QString chrome = dir.filePath(QStringLiteral("chrome.json"));
    QVERIFY(core::write_file_atomic(chrome.toStdString(), core::trace_to_chrome_json(t)).ok());
    QVERIFY(!tab.load_trace(chrome));
    QVERIFY(tab.placeholder_shown());
    QVERIFY2(status->text().contains(QStringLiteral("Could not read the trace")), qPrintable(status->text()));
    QVERIFY2(status->text().contains(QStringLiteral("--chrome-trace")), qPrintable(status->text()));  // the hint
    // A trace: the placeholder goes, the measured timeline and the phases show.
    const QString path = dir.filePath(QStringLiteral("measured.json"));
    QVERIFY(core::write_file_atomic(path.toStdString(), core::trace_to_json(t)).ok());
    QVERIFY2(tab.load_trace(path), qPrintable(tab.last_error()));
    QVERIFY(!tab.placeholder_shown());
    QVERIFY(!tab.placeholder()->isVisible());
    QVERIFY(tab.measured_model()->lanes() > 0);
    QVERIFY(tab.phase_model()->rowCount() >= 4);
  }

  void sessionsSaveAndRestore() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("a.zsession"));
    {
      MainWindow w;
      QVERIFY(w.open({"gpt2-1.5b", "dgx2", "zero2-offload-cpu"}));
      QVERIFY(w.explore()->set_knob(Knob::micro_batch, "2"));
      QVERIFY(w.explore()->set_knob(Knob::schedule, "dpu"));
      QVERIFY(w.explore()->hardware_model()->set_field("cpu.memory_GiB", QStringLiteral("512")));
      w.sweep()->set_spec({{Knob::stage, {"1", "2", "3"}}, {Knob::offload_optimizer, {"none", "cpu"}}});
      w.show_tab(QStringLiteral("sweep"));
      QVERIFY2(w.save_session(path), qPrintable(w.last_error()));
      QVERIFY(w.windowTitle().contains(QStringLiteral("a.zsession")));
    }
    MainWindow w;
    QVERIFY2(w.open_session(path), qPrintable(w.last_error()));
    const Scenario& s = w.explore()->scenario();
    QCOMPARE(s.strategy.micro_batch_per_gpu, int64_t{2});
    QVERIFY(s.schedule == core::Schedule::dpu);
    QCOMPARE(s.hardware.cpu.memory_GiB, 512.0);
    QCOMPARE(w.current_tab(), QStringLiteral("sweep"));
    const SweepSpec sp = w.sweep()->spec();
    QVERIFY(sp.x.knob == Knob::stage);
    QCOMPARE(sp.x.values.size(), size_t{3});
    QVERIFY(!w.open_session(dir.filePath(QStringLiteral("missing.zsession"))));
    QVERIFY(!w.last_error().isEmpty());
  }

  void screenshotDriverRendersEveryTab() {
    if (!simulator_available()) QSKIP("built without SimGrid: no simulator");
    for (const QString& tab : MainWindow::tab_names()) {
      MainWindow w;
      w.resize(1280, 800);
      w.show();
      QVERIFY(w.open({"gpt2-124m", "dgx-a100-80gb", "zero3-offload-cpu"}));
      w.sweep()->set_spec({{Knob::micro_batch, {"1", "2"}}, {Knob::offload_optimizer, {"none", "cpu"}}});
      bool finished = false, ok = false;
      w.prepare_tab(tab, {}, [&](bool o, const QString&) { finished = true, ok = o; });
      QTRY_VERIFY_WITH_TIMEOUT(finished, 120000);
      QVERIFY2(ok, qPrintable(tab));
      QCOMPARE(w.current_tab(), tab);
      const QPixmap pm = w.grab();
      QCOMPARE(pm.size(), w.size());
      QVERIFY(!pm.toImage().isNull());
    }
  }
};

QTEST_MAIN(TestGuiWindow)
#include "test_gui_window.moc"
