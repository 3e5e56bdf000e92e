// zerosim-gui: the desktop app. With --screenshot it renders one tab headless (offscreen), after that tab's work
// (a simulation, a sweep) has finished, writes the PNG and exits: 0 on success, 1 when the work failed, 2 on bad
// arguments or inputs.
//   zerosim-gui --model gpt2-1.5b --hardware dgx2 --ds-config zero3-offload-cpu
//   zerosim-gui --screenshot simulate.png --tab simulate --model gpt2-1.5b
#include <QApplication>
#include <QCommandLineParser>
#include <QFont>
#include <QPixmap>
#include <QStyleFactory>
#include <QTimer>

#include <cstdio>

#include "gui/models/scenario.h"
#include "gui/models/sweep.h"
#include "gui/widgets/explore_tab.h"
#include "gui/widgets/main_window.h"
#include "gui/widgets/sweep_tab.h"

namespace {

// "micro_batch=1,2,4" → an axis; false when the knob is unknown.
bool parse_axis_option(const QString& text, zs::gui::SweepAxis& axis) {
  const int eq = static_cast<int>(text.indexOf(QLatin1Char('=')));
  const auto knob = zs::gui::parse_knob(text.left(eq < 0 ? text.size() : eq).toStdString());
  if (!knob) return false;
  axis.knob = *knob;
  axis.values = zs::gui::parse_axis_values(*knob, eq < 0 ? std::string() : text.mid(eq + 1).toStdString());
  return !axis.values.empty();
}

}  // namespace

int main(int argc, char** argv) {
  // Headless rendering needs no display: choose the offscreen platform before QApplication exists.
  for (int i = 1; i < argc; ++i)
    if (qstrcmp(argv[i], "--screenshot") == 0 && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
      qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  QApplication::setApplicationName(QStringLiteral("zerosim-gui"));
  QApplication::setApplicationVersion(QStringLiteral("0.1.0"));
  QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
  QFont font = QApplication::font();
  font.setPointSizeF(9.5);
  QApplication::setFont(font);

  QCommandLineParser p;
  p.setApplicationDescription(QStringLiteral("zerosim: does it fit, how fast, which config — for DeepSpeed ZeRO offload training"));
  p.addHelpOption();
  p.addVersionOption();
  const QCommandLineOption model({QStringLiteral("m"), QStringLiteral("model")}, QStringLiteral("model: shipped name or path (models/*.json, HF config.json)"),
                                 QStringLiteral("M"), QStringLiteral("llama2-7b"));
  const QCommandLineOption hardware(QStringLiteral("hardware"), QStringLiteral("hardware profile: shipped name or path"),
                                    QStringLiteral("H"), QStringLiteral("dgx-a100-80gb"));
  const QCommandLineOption config({QStringLiteral("c"), QStringLiteral("ds-config")}, QStringLiteral("DeepSpeed config: shipped name or path"),
                                  QStringLiteral("C"), QStringLiteral("zero3-offload-cpu"));
  const QCommandLineOption nodes(QStringLiteral("nodes"), QStringLiteral("nodes (default: the hardware profile's)"), QStringLiteral("N"), QStringLiteral("0"));
  const QCommandLineOption gpus(QStringLiteral("gpus-per-node"), QStringLiteral("GPUs per node (default: the profile's)"), QStringLiteral("G"), QStringLiteral("0"));
  const QCommandLineOption seq(QStringLiteral("seq-len"), QStringLiteral("sequence length (default: the model's)"), QStringLiteral("S"), QStringLiteral("0"));
  const QCommandLineOption ckpt(QStringLiteral("checkpoint-activations"), QStringLiteral("activation checkpointing per block (HF gradient_checkpointing)"));
  const QCommandLineOption peft(QStringLiteral("peft"), QStringLiteral("PEFT adapter_config.json: a LoRA run on the frozen model (QLoRA on a bitsandbytes-quantised config)"), QStringLiteral("FILE"));
  const QCommandLineOption trace(QStringLiteral("trace"), QStringLiteral("measured trace JSON for the Compare tab"), QStringLiteral("T"));
  const QCommandLineOption session(QStringLiteral("session"), QStringLiteral("open a saved session"), QStringLiteral("FILE"));
  const QCommandLineOption shot(QStringLiteral("screenshot"), QStringLiteral("render --tab headless to FILE.png and exit"), QStringLiteral("FILE.png"));
  const QCommandLineOption tab(QStringLiteral("tab"), QStringLiteral("explore | simulate | compare | sweep"), QStringLiteral("TAB"), QStringLiteral("explore"));
  const QCommandLineOption sweep_x(QStringLiteral("sweep-x"), QStringLiteral("sweep columns, knob=v1,v2,… (e.g. micro_batch=1,2,4,8)"), QStringLiteral("AXIS"));
  const QCommandLineOption sweep_y(QStringLiteral("sweep-y"), QStringLiteral("sweep rows, knob=v1,v2,… (e.g. offload_optimizer=none,cpu,nvme)"), QStringLiteral("AXIS"));
  const QCommandLineOption size(QStringLiteral("size"), QStringLiteral("window size WxH"), QStringLiteral("WxH"), QStringLiteral("1600x1000"));
  for (const auto& o : {model, hardware, config, nodes, gpus, seq, ckpt, peft, trace, session, shot, tab, sweep_x, sweep_y, size}) p.addOption(o);
  p.process(app);

  const QString tab_name = p.value(tab).toLower();
  if (!zs::gui::MainWindow::tab_names().contains(tab_name)) {
    std::fprintf(stderr, "zerosim-gui: --tab %s: not one of explore, simulate, compare, sweep\n", qPrintable(tab_name));
    return 2;
  }
  const QStringList wh = p.value(size).split(QLatin1Char('x'));
  const int w = wh.value(0).toInt(), h = wh.value(1).toInt();
  if (wh.size() != 2 || w < 400 || h < 300) {
    std::fprintf(stderr, "zerosim-gui: --size %s: expected WxH, at least 400x300\n", qPrintable(p.value(size)));
    return 2;
  }

  zs::gui::MainWindow win;
  win.resize(w, h);
  bool ok = true;
  if (p.isSet(session)) {
    ok = win.open_session(p.value(session));
  } else {
    zs::gui::InputRefs refs{p.value(model).toStdString(), p.value(hardware).toStdString(), p.value(config).toStdString()};
    zs::gui::RunOverrides run{p.value(nodes).toLongLong(), p.value(gpus).toLongLong(), p.value(seq).toLongLong(), p.isSet(ckpt)};
    ok = win.open(refs, run);
    if (ok && p.isSet(peft)) ok = win.explore()->load_peft(p.value(peft));
  }
  if (!ok) std::fprintf(stderr, "zerosim-gui: %s\n", qPrintable(win.last_error()));
  if (p.isSet(sweep_x) || p.isSet(sweep_y)) {
    zs::gui::SweepSpec spec = win.sweep()->spec();
    if ((p.isSet(sweep_x) && !parse_axis_option(p.value(sweep_x), spec.x)) ||
        (p.isSet(sweep_y) && !parse_axis_option(p.value(sweep_y), spec.y))) {
      std::fprintf(stderr, "zerosim-gui: --sweep-x/--sweep-y: expected knob=v1,v2,… with a known knob\n");
      return 2;
    }
    win.sweep()->set_spec(spec);
  }
  if (!p.isSet(session) || p.isSet(tab)) win.show_tab(tab_name);

  if (!p.isSet(shot)) {
    if (p.isSet(trace)) win.load_trace(p.value(trace));
    win.show();
    return QApplication::exec();
  }
  if (!ok) return 2;
  const QString file = p.value(shot);
  const QString shot_tab = p.isSet(session) && !p.isSet(tab) ? win.current_tab() : tab_name;
  win.show();
  int rc = 0;
  QTimer::singleShot(0, &win, [&] {
    win.prepare_tab(shot_tab, p.value(trace), [&](bool done_ok, const QString& msg) {
      if (!done_ok) std::fprintf(stderr, "zerosim-gui: %s: %s\n", qPrintable(shot_tab), qPrintable(msg));
      // Let the views lay out and paint the results before grabbing.
      QTimer::singleShot(150, &win, [&, done_ok] {
        const QPixmap pm = win.grab();
        if (!pm.save(file, "PNG")) {
          std::fprintf(stderr, "zerosim-gui: cannot write %s\n", qPrintable(file));
          rc = 3;
        } else {
          rc = done_ok ? 0 : 1;
          std::printf("wrote %s (%dx%d, tab %s)\n", qPrintable(file), pm.width(), pm.height(), qPrintable(shot_tab));
        }
        QApplication::exit(rc);
      });
    });
  });
  QTimer::singleShot(10 * 60 * 1000, &win, [] {
    std::fprintf(stderr, "zerosim-gui: --screenshot timed out after 10 minutes\n");
    QApplication::exit(1);
  });
  return QApplication::exec();
}
