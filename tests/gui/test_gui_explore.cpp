// The Explore tab, headless: every shipped model × hardware × config opens without error (the GUI twin of
// tests/cli/fit_all.sh), with QAbstractItemModelTester watching the tab's models through every change; edits by
// keyboard and by field, one-click fixes, HF import and ds_config load/save; the memory bars' legends name every
// item in full at the window's default size and at its smallest.
#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QElapsedTimer>
#include <QLabel>
#include <QLayout>
#include <QListView>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>

#include "core/paths.h"
#include "gui/widgets/explore_tab.h"
#include "gui/widgets/main_window.h"

using namespace zs;
using namespace zs::gui;

namespace {
std::vector<std::string> shipped(core::InputKind k) { return core::shipped_inputs(k); }
QString verdict(const ExploreTab& t) { return t.findChild<QLabel*>(QStringLiteral("verdict"))->text(); }

// Drawn whole: the widget's rectangle lies inside each ancestor's, up to `root` (nothing cut off by a parent).
bool whole(const QWidget* w, const QWidget* root) {
  for (const QWidget* c = w; c != root; c = c->parentWidget())
    if (!c->parentWidget() || !c->parentWidget()->rect().contains(c->geometry())) return false;
  return true;
}

// Every bar's legend names each item of its tier, in full and unclipped: each entry is a label with the item's
// whole name, as wide as its one-line text or as tall as its wrapped text needs, drawn whole within the results
// column (which has the height it needs at its width; it scrolls when the window is shorter).
void check_legends(const ExploreTab& tab, const QString& what) {
  const QWidget& root = *tab.findChild<QWidget*>(QStringLiteral("results"));
  QVERIFY(root.isVisible());
  QVERIFY2(root.height() >= root.layout()->totalMinimumHeightForWidth(root.width()), qPrintable(what));
  std::vector<QWidget*> legends;
  for (QWidget* l : tab.findChildren<QWidget*>(QStringLiteral("tier_legend")))
    if (l->isVisibleTo(&root)) legends.push_back(l);
  std::sort(legends.begin(), legends.end(), [&](QWidget* a, QWidget* b) {
    return a->mapTo(&root, QPoint()).y() < b->mapTo(&root, QPoint()).y();
  });
  const core::MemoryReport& r = tab.report();
  size_t k = 0;
  for (core::Tier t : core::kTiers) {
    const auto& tr = r.tier(t);
    if (t == core::Tier::nvme && tr.required_bytes == 0) continue;  // no bar
    QVERIFY2(k < legends.size(), qPrintable(what));
    QStringList texts;
    for (QLabel* e : legends[k]->findChildren<QLabel*>(QStringLiteral("legend_item"))) {
      const QString at = what + QStringLiteral(": \"") + e->text() + QStringLiteral("\"");
      QVERIFY2(e->isVisibleTo(&root), qPrintable(at));
      QVERIFY2(e->sizeHint().width() <= e->width() || e->heightForWidth(e->width()) <= e->height(), qPrintable(at));
      QVERIFY2(e->height() >= e->fontMetrics().height(), qPrintable(at));
      QVERIFY2(whole(e, &root), qPrintable(at));
      texts << e->text();
    }
    QCOMPARE(texts.size(), static_cast<qsizetype>(tr.items.size() + (tr.capacity_bytes > 0 ? 1 : 0)));
    for (const auto& it : tr.items) {
      const QString name = QString::fromStdString(it.label);
      bool found = false;
      for (const QString& x : texts) found = found || x.startsWith(name + QStringLiteral("  "));
      QVERIFY2(found, qPrintable(what + QStringLiteral(": no legend entry for \"") + name + QStringLiteral("\"")));
    }
    ++k;
  }
  QCOMPARE(legends.size(), k);
}
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
          // The fixes follow in the background; the timeout guards against a hang, not a speed target (a MoE model's
          // dozens of memory-model runs take seconds on a loaded 2-core machine).
          QTRY_VERIFY_WITH_TIMEOUT(!tab.fixes_pending(), 120000);
          QVERIFY2(tab.last_error().isEmpty(), qPrintable(what));
          QCOMPARE(tab.memory_model()->rowCount(), 3);
          QVERIFY(tab.hardware_model()->rowCount() > 0);
          const bool f = tab.report().fits;
          // fit's words: FITS or TIGHT (under 3% headroom) when it fits, else DOES NOT FIT.
          QVERIFY2(f ? verdict(tab).startsWith(QStringLiteral("FITS")) || verdict(tab).startsWith(QStringLiteral("TIGHT"))
                     : verdict(tab).startsWith(QStringLiteral("DOES NOT FIT")),
                   qPrintable(what));
          // A config that does not fit always comes with something to try.
          if (!f) QVERIFY2(tab.suggestion_model()->rowCount() > 0, qPrintable(what));
          fits += f;
          ++n;
        }
    QVERIFY(n >= 300);
    qInfo("%d combinations (%d fit) opened in Explore in %.1f s", n, fits, clock.elapsed() / 1000.0);
  }

  // The legend under each tier's bar names all of its items (7 or more on the GPU for llama2-13b, ZeRO-2 with CPU
  // offload), none elided or cut off, at the window's default size and at its smallest.
  void legendNamesEverySegment() {
    MainWindow w;  // the default size
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.open({"llama2-13b", "dgx-a100-80gb", "zero2-offload-cpu"}));
    QVERIFY(w.explore()->report().tier(core::Tier::gpu).items.size() >= 7);  // issue 31: 2 of 7 named
    for (const QSize size : {QSize(), QSize(800, 560)}) {
      if (size.isValid()) {
        w.resize(size);  // the window keeps its minimum: the inputs and the results side by side
        QTest::qWait(50);
        // A small window still: the results scroll rather than set its height, and no legend sets its width.
        const QString got = QStringLiteral("%1x%2").arg(w.width()).arg(w.height());
        QVERIFY2(w.width() <= 1200 && w.height() <= 720, qPrintable(got));
      }
      for (const char* c : {"zero2-offload-cpu", "zero3-offload-nvme", "zero3"}) {
        QVERIFY(w.open({"llama2-13b", "dgx-a100-80gb", c}));
        QTest::qWait(50);  // the layouts settle (each legend's height follows its width)
        const QString what = QStringLiteral("%1 at %2x%3").arg(QString::fromUtf8(c)).arg(w.width()).arg(w.height());
        check_legends(*w.explore(), what);
        if (QTest::currentTestFailed()) return;
        qInfo("legends whole: %s", qPrintable(what));
      }
    }
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
    // offload_param below stage 3: only ZeRO-3 reads it (DeepSpeed ignores it, and core with a note, or refuses it
    // naming stage 3): either way the parameters stay on the GPU and the form says so.
    if (!tab.set_knob(Knob::offload_param, "cpu")) QVERIFY(tab.last_error().contains(QStringLiteral("stage 3")));
    QVERIFY(tab.scenario().strategy.zero.offload_param.device == core::OffloadDevice::none);
    QCOMPARE(param->currentText(), QStringLiteral("none"));
    // A value refused: the error shows, the scenario and the form stay as they were.
    QVERIFY(!tab.set_knob(Knob::prefetch_bucket_size, "1e7"));
    QVERIFY(tab.last_error().contains(QStringLiteral("stage 3")));
    QCOMPARE(tab.scenario().strategy.micro_batch_per_gpu, int64_t{4});
    QCOMPARE(mb->value(), 4);
    QVERIFY(tab.set_knob(Knob::stage, "3"));
    QVERIFY(tab.last_error().isEmpty());
  }

  // The Fine-tune choice builds the model's adapter; the trainable count is PEFT's print_trainable_parameters line.
  void adapterChoiceChangesTheTrainableCount() {
    ExploreTab tab;
    tab.show();
    QVERIFY(tab.open({"llama2-7b", "dgx-a100-80gb", "zero3"}));
    auto* trainable = tab.findChild<QLabel*>(QStringLiteral("trainable"));
    auto* choice = tab.findChild<QComboBox*>(QStringLiteral("adapter"));
    auto* targets = tab.findChild<QComboBox*>(QStringLiteral("lora_targets"));
    QVERIFY(trainable && choice && targets);
    QCOMPARE(trainable->text(), QStringLiteral("trainable params: 6,738,415,616 || all params: 6,738,415,616 || "
                                               "trainable%: 100.0000"));
    choice->setFocus();
    QTest::keyClick(choice, Qt::Key_Down);  // Full fine-tune → LoRA (r 16, all-linear)
    QVERIFY(tab.scenario().model.adapter.lora_enabled());
    QVERIFY(tab.scenario().model.adapter.lora.all_linear);
    // 32 layers × 16 × ((4096+4096)·4 + (4096+11008)·3): every Linear but lm_head.
    QCOMPARE(trainable->text(), QStringLiteral("trainable params: 39,976,960 || all params: 6,778,392,576 || "
                                               "trainable%: 0.5898"));
    QVERIFY(tab.model_card()->index(0, 1, tab.model_card()->index(0, 0)).data().toString().contains(
        QStringLiteral("40.0 M trainable")));
    targets->setFocus();
    QTest::keyClick(targets, Qt::Key_Down);  // attention only: q, k, v, o
    QCOMPARE(tab.scenario().model.adapter.lora.target_modules,
             (std::vector<std::string>{"q_proj", "k_proj", "v_proj", "o_proj"}));
    QVERIFY(trainable->text().startsWith(QStringLiteral("trainable params: 16,777,216 || all params: 6,755,192,832")));
    choice->setFocus();
    QTest::keyClick(choice, Qt::Key_Down);  // QLoRA: NF4, double quant, stored in the model dtype
    const core::QuantSpec& q = tab.scenario().model.adapter.quant;
    QVERIFY(q.kind == core::QuantKind::nf4);
    QVERIFY(q.double_quant);
    QCOMPARE(q.storage, std::string("bfloat16"));
    QVERIFY(trainable->text().startsWith(QStringLiteral("trainable params: 16,777,216 ")));
    QVERIFY(tab.set_adapter({}));  // back to a full fine-tune
    QVERIFY(!tab.scenario().model.adapter.lora_enabled() && !tab.scenario().model.adapter.quant.enabled());
    QCOMPARE(choice->currentText(), QStringLiteral("Full fine-tune"));
    // A PEFT adapter_config.json: r 16, alpha 32 on q, k, v, o.
    QVERIFY(tab.load_peft(QStringLiteral(ZS_TEST_DATA "/peft/lora_llama_attn.json")));
    QCOMPARE(choice->currentText(), QStringLiteral("LoRA"));
    QCOMPARE(tab.findChild<QSpinBox*>(QStringLiteral("lora_alpha"))->value(), 32);
    QVERIFY(trainable->text().startsWith(QStringLiteral("trainable params: 16,777,216 ")));
    QVERIFY(!tab.load_peft(QStringLiteral(ZS_TEST_DATA "/peft/ia3.json")));
    QVERIFY(tab.last_error().contains(QStringLiteral("\"IA3\" is not modelled")));
  }

  void gpt2AttentionTargetsAreItsAttentionModules() {
    ExploreTab tab;
    QVERIFY(tab.open({"gpt2-124m", "dgx-a100-80gb", "zero2"}));
    QVERIFY(tab.set_adapter({.kind = ExploreTab::Adapter::lora, .r = 16, .alpha = 32, .attention_only = true}));
    // c_proj alone would also match mlp.c_proj (PEFT matches name suffixes), so the attention ones are qualified.
    QCOMPARE(tab.scenario().model.adapter.lora.target_modules, (std::vector<std::string>{"attn.c_attn", "attn.c_proj"}));
    // 12 layers × 16 × ((768+2304) + (768+768))
    QCOMPARE(core::trainable_parameter_count(tab.scenario().model), int64_t{884736});
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
