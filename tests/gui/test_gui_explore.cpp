// The Explore tab, headless: every shipped model × hardware × config opens without error (the GUI twin of
// tests/cli/fit_all.sh), with QAbstractItemModelTester watching the tab's models through every change; edits by
// keyboard and by field, one-click fixes, HF import and ds_config load/save.
#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QElapsedTimer>
#include <QLabel>
#include <QListView>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>

#include "core/paths.h"
#include "gui/widgets/explore_tab.h"

using namespace zs;
using namespace zs::gui;

namespace {
std::vector<std::string> shipped(core::InputKind k) { return core::shipped_inputs(k); }
QString verdict(const ExploreTab& t) { return t.findChild<QLabel*>(QStringLiteral("verdict"))->text(); }
}  // namespace

class TestGuiExplore : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void everyShippedCombination() {
    ExploreTab tab;
    tab.resize(1400, 900);
    tab.show();
    using Mode = QAbstractItemModelTester::FailureReportingMode;
    QAbstractItemModelTester t1(tab.memory_model(), Mode::QtTest), t2(tab.suggestion_model(), Mode::QtTest),
        t3(tab.hardware_model(), Mode::QtTest), t4(tab.model_card(), Mode::QtTest);
    int n = 0, fits = 0;
    QElapsedTimer clock;
    clock.start();
    for (const auto& m : shipped(core::InputKind::model))
      for (const auto& h : shipped(core::InputKind::hardware))
        for (const auto& c : shipped(core::InputKind::deepspeed)) {
          const bool ok = tab.open({m, h, c});
          const QString what = QStringLiteral("%1 × %2 × %3: %4").arg(QString::fromStdString(m), QString::fromStdString(h),
                                                                    QString::fromStdString(c), tab.last_error());
          QVERIFY2(ok, qPrintable(what));
          QTRY_VERIFY_WITH_TIMEOUT(!tab.fixes_pending(), 30000);  // the fixes follow in the background
          QVERIFY2(tab.last_error().isEmpty(), qPrintable(what));
          QCOMPARE(tab.memory_model()->rowCount(), 3);
          QVERIFY(tab.hardware_model()->rowCount() > 0);
          const bool f = tab.report().fits;
          QVERIFY2(verdict(tab).startsWith(f ? QStringLiteral("FITS") : QStringLiteral("DOES NOT FIT")), qPrintable(what));
          // A config that does not fit always comes with something to try.
          if (!f) QVERIFY2(tab.suggestion_model()->rowCount() > 0, qPrintable(what));
          fits += f;
          ++n;
        }
    QVERIFY(n >= 300);
    qInfo("%d combinations (%d fit) opened in Explore in %.1f s", n, fits, clock.elapsed() / 1000.0);
  }

  void keyboardEditsGoThroughCore() {
    ExploreTab tab;
    tab.show();
    QVERIFY(tab.open({"gpt2-1.5b", "dgx2", "zero3-offload-cpu"}));
    auto* stage = tab.findChild<QComboBox*>(QStringLiteral("knob_stage"));
    QVERIFY(stage);
    stage->setFocus();
    QTest::keyClick(stage, Qt::Key_Up);  // 3 → 2
    QCOMPARE(tab.scenario().strategy.zero.stage, 2);
    QVERIFY(tab.scenario().strategy.zero.offload_param.device == core::OffloadDevice::none);
    auto* param = tab.findChild<QComboBox*>(QStringLiteral("knob_offload_param"));
    QVERIFY(!param->isEnabled());  // stage-3 only
    auto* mb = tab.findChild<QSpinBox*>(QStringLiteral("knob_micro_batch"));
    mb->setValue(4);
    QCOMPARE(tab.scenario().strategy.micro_batch_per_gpu, int64_t{4});
    QCOMPARE(tab.scenario().strategy.train_batch_size, int64_t{4 * 16});
    // A value core refuses: the error shows, the scenario and the form stay as they were.
    QVERIFY(!tab.set_knob(Knob::offload_param, "cpu"));
    QVERIFY(tab.last_error().contains(QStringLiteral("stage 3")));
    QCOMPARE(param->currentText(), QStringLiteral("none"));
    QVERIFY(tab.set_knob(Knob::stage, "3"));
    QVERIFY(tab.last_error().isEmpty());
  }

  void hardwareFieldEditChangesTheVerdict() {
    ExploreTab tab;
    QVERIFY(tab.open({"gpt2-1.5b", "dgx2", "zero3-offload-cpu"}));
    QVERIFY(tab.report().fits);
    int changes = 0;
    tab.on_changed([&] { ++changes; });
    QVERIFY(tab.hardware_model()->set_field("gpu.memory_GiB", QStringLiteral("2")));
    QCOMPARE(changes, 1);
    QCOMPARE(tab.scenario().hardware.gpu.memory_GiB, 2.0);
    QVERIFY(!tab.report().fits);
    QVERIFY(verdict(tab).startsWith(QStringLiteral("DOES NOT FIT")));
  }

  void oneClickFix() {
    ExploreTab tab;
    tab.resize(1400, 900);
    tab.show();
    QVERIFY(QTest::qWaitForWindowExposed(&tab));
    QVERIFY(tab.open({"llama2-13b", "v100-32gb-workstation", "zero2-offload-cpu"}));
    QVERIFY(!tab.report().fits);
    QTRY_VERIFY_WITH_TIMEOUT(!tab.fixes_pending(), 30000);
    auto* list = tab.findChild<QListView*>(QStringLiteral("fixes"));
    QVERIFY(list);
    int row = -1;
    for (int i = 0; i < tab.suggestion_model()->rowCount() && row < 0; ++i)
      if (tab.suggestion_model()->index(i).data(FitsRole).toBool()) row = i;
    QVERIFY(row >= 0);
    list->scrollTo(tab.suggestion_model()->index(row));
    const QRect r = list->visualRect(tab.suggestion_model()->index(row));
    QVERIFY(r.isValid());
    QTest::mouseClick(list->viewport(), Qt::LeftButton, {}, r.center());
    QTest::mouseDClick(list->viewport(), Qt::LeftButton, {}, r.center());
    QVERIFY(tab.report().fits);
    QVERIFY(verdict(tab).startsWith(QStringLiteral("FITS")));
  }

  void importAndConfigFiles() {
    ExploreTab tab;
    QVERIFY(tab.open({"gpt2-124m", "dgx-a100-80gb", "zero2"}));
    QVERIFY(tab.import_hf_config(QStringLiteral(ZS_TEST_DATA "/hf/Llama-2-7b-hf.json")));
    QCOMPARE(tab.scenario().model.layers, int64_t{32});
    QVERIFY(!tab.import_hf_config(QStringLiteral(ZS_TEST_DATA "/hf/bert-base-uncased.json")));  // unsupported type
    QVERIFY(!tab.last_error().isEmpty());
    QCOMPARE(tab.scenario().model.layers, int64_t{32});  // unchanged
    QVERIFY(tab.set_knob(Knob::micro_batch, "3"));
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("ds_config.json"));
    QVERIFY(tab.save_ds_config(path));
    QVERIFY(tab.set_knob(Knob::micro_batch, "1"));
    QVERIFY(tab.load_ds_config(path));
    QCOMPARE(tab.scenario().strategy.micro_batch_per_gpu, int64_t{3});
    QVERIFY(!tab.load_ds_config(dir.filePath(QStringLiteral("missing.json"))));
    // An edited profile saved and loaded back (as a `zerosim probe` profile would be).
    QVERIFY(tab.hardware_model()->set_field("measured.cpu_adam_params_per_s", QStringLiteral("2e9")));
    const QString hw = dir.filePath(QStringLiteral("probed.json"));
    QVERIFY(tab.save_hardware(hw));
    QVERIFY(tab.open({"gpt2-124m", "dgx-a100-80gb", "zero2"}));
    QVERIFY(!tab.scenario().hardware.measured.cpu_adam_params_per_s);
    QVERIFY2(tab.load_hardware(hw), qPrintable(tab.last_error()));
    QCOMPARE(*tab.scenario().hardware.measured.cpu_adam_params_per_s, 2e9);
  }
};

QTEST_MAIN(TestGuiExplore)
#include "test_gui_explore.moc"
