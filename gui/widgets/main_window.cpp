#include "gui/widgets/main_window.h"

#include <QAction>
#include <QApplication>
#include <QFileDialog>
#include <QFileInfo>
#include <QKeySequence>
#include <QMenuBar>
#include <QMessageBox>
#include <QStatusBar>
#include <QTabWidget>

#include <memory>

#include "gui/models/format.h"
#include "gui/models/session.h"
#include "gui/widgets/compare_tab.h"
#include "gui/widgets/explore_tab.h"
#include "gui/widgets/simulate_tab.h"
#include "gui/widgets/sweep_tab.h"
#include "gui/widgets/timeline_view.h"

namespace zs::gui {
namespace {

// The shortcut table: one place for the menus and the F1 dialog.
struct Shortcut {
  const char* what;
  QKeySequence keys;
};

}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  tabs_ = new QTabWidget(this);
  tabs_->setDocumentMode(true);
  explore_ = new ExploreTab(tabs_);
  simulate_ = new SimulateTab(tabs_);
  compare_ = new CompareTab(tabs_);
  sweep_ = new SweepTab(tabs_);
  tabs_->addTab(explore_, QStringLiteral("Explore"));
  tabs_->addTab(simulate_, QStringLiteral("Simulate"));
  tabs_->addTab(compare_, QStringLiteral("Compare"));
  tabs_->addTab(sweep_, QStringLiteral("Sweep"));
  setCentralWidget(tabs_);
  build_menus();
  statusBar()->showMessage(QStringLiteral("Ready"));

  explore_->set_requests({[this] { import_hf(); }, [this] { load_ds_config(); }, [this] { save_ds_config(); },
                          [this] { load_hardware(); }, [this] { save_hardware(); }});
  explore_->on_changed([this] {
    simulate_->mark_stale();
    sweep_->set_base(explore_->scenario());
    const auto& r = explore_->report();
    statusBar()->showMessage(fmt::qs(verdict_text(r)));
    update_title();
  });
  simulate_->on_run_requested([this] { simulate(); });
  simulate_->on_result([this] { compare_->set_prediction(simulate_->shared_result()); });
  compare_->on_load_requested([this] { open_trace_dialog(); });
  sweep_->on_run_requested([this] { run_sweep(); });
  sweep_->on_cell_chosen([this](const Scenario& s) {
    explore_->set_scenario(s);
    statusBar()->showMessage(QStringLiteral("Cell loaded into Explore (Ctrl+1 to see it): ") + fmt::qs(verdict_text(explore_->report())));
  });
  sweep_->on_export_requested([this](int row, int column) {
    const QString path = QFileDialog::getSaveFileName(this, QStringLiteral("Export the cell's ds_config.json"),
                                                      QStringLiteral("ds_config.json"), QStringLiteral("JSON (*.json)"));
    if (path.isEmpty()) return;
    if (sweep_->export_cell(row, column, path))
      statusBar()->showMessage(QStringLiteral("Wrote ") + path);
    else
      QMessageBox::warning(this, QStringLiteral("Export"), QStringLiteral("Could not write ") + path);
  });
  resize(1600, 1000);
  update_title();
}

QStringList MainWindow::tab_names() {
  return {QStringLiteral("explore"), QStringLiteral("simulate"), QStringLiteral("compare"), QStringLiteral("sweep")};
}

void MainWindow::build_menus() {
  auto add = [this](QMenu* m, const QString& text, QKeySequence keys, std::function<void()> f) {
    QAction* a = m->addAction(text);
    a->setShortcut(keys);
    a->setShortcutContext(Qt::WindowShortcut);
    connect(a, &QAction::triggered, this, std::move(f));
    addAction(a);  // shortcuts work while the menu bar is hidden too
    return a;
  };
  QMenu* file = menuBar()->addMenu(QStringLiteral("&File"));
  add(file, QStringLiteral("&Open session…"), QKeySequence(Qt::CTRL | Qt::Key_O), [this] {
    const QString p = QFileDialog::getOpenFileName(this, QStringLiteral("Open session"), {}, QStringLiteral("zerosim session (*.zsession *.json)"));
    if (!p.isEmpty() && !open_session(p)) QMessageBox::warning(this, QStringLiteral("Open session"), error_);
  });
  add(file, QStringLiteral("&Save session"), QKeySequence(Qt::CTRL | Qt::Key_S), [this] {
    QString p = session_path_;
    if (p.isEmpty())
      p = QFileDialog::getSaveFileName(this, QStringLiteral("Save session"), QStringLiteral("session.zsession"),
                                       QStringLiteral("zerosim session (*.zsession)"));
    if (!p.isEmpty() && !save_session(p)) QMessageBox::warning(this, QStringLiteral("Save session"), error_);
  });
  add(file, QStringLiteral("Save session &as…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S), [this] {
    const QString p = QFileDialog::getSaveFileName(this, QStringLiteral("Save session"), QStringLiteral("session.zsession"),
                                                   QStringLiteral("zerosim session (*.zsession)"));
    if (!p.isEmpty() && !save_session(p)) QMessageBox::warning(this, QStringLiteral("Save session"), error_);
  });
  file->addSeparator();
  add(file, QStringLiteral("&Import HF config.json…"), QKeySequence(Qt::CTRL | Qt::Key_I), [this] { import_hf(); });
  add(file, QStringLiteral("Load &hardware profile…"), QKeySequence(Qt::CTRL | Qt::Key_H), [this] { load_hardware(); });
  add(file, QStringLiteral("&Load ds_config.json…"), QKeySequence(Qt::CTRL | Qt::Key_L), [this] { load_ds_config(); });
  add(file, QStringLiteral("&Export ds_config.json…"), QKeySequence(Qt::CTRL | Qt::Key_E), [this] { save_ds_config(); });
  add(file, QStringLiteral("Load measured &trace…"), QKeySequence(Qt::CTRL | Qt::Key_T), [this] { open_trace_dialog(); });
  file->addSeparator();
  add(file, QStringLiteral("&Quit"), QKeySequence(Qt::CTRL | Qt::Key_Q), [this] { close(); });

  QMenu* run = menuBar()->addMenu(QStringLiteral("&Run"));
  add(run, QStringLiteral("&Simulate"), QKeySequence(Qt::Key_F5), [this] { simulate(); });
  add(run, QStringLiteral("Run s&weep"), QKeySequence(Qt::CTRL | Qt::Key_R), [this] { run_sweep(); });
  add(run, QStringLiteral("&Cancel"), QKeySequence(Qt::Key_Escape), [this] { cancel(); });

  QMenu* view = menuBar()->addMenu(QStringLiteral("&View"));
  const QStringList names = {QStringLiteral("&Explore"), QStringLiteral("&Simulate"), QStringLiteral("&Compare"), QStringLiteral("S&weep")};
  for (int i = 0; i < 4; ++i)
    add(view, names[i], QKeySequence(Qt::CTRL | static_cast<Qt::Key>(Qt::Key_1 + i)), [this, i] { tabs_->setCurrentIndex(i); });
  view->addSeparator();
  auto timeline_do = [this](void (TimelineView::*f)(), void (CompareTab::*g)()) {
    if (tabs_->currentWidget() == compare_) (compare_->*g)();
    else (simulate_->timeline()->*f)();
  };
  add(view, QStringLiteral("Zoom &in"), QKeySequence(Qt::CTRL | Qt::Key_Equal),
      [=] { timeline_do(&TimelineView::zoom_in, &CompareTab::zoom_in); });
  add(view, QStringLiteral("Zoom &out"), QKeySequence(Qt::CTRL | Qt::Key_Minus),
      [=] { timeline_do(&TimelineView::zoom_out, &CompareTab::zoom_out); });
  add(view, QStringLiteral("&Fit timeline"), QKeySequence(Qt::CTRL | Qt::Key_0),
      [=] { timeline_do(&TimelineView::fit, &CompareTab::fit); });

  QMenu* help = menuBar()->addMenu(QStringLiteral("&Help"));
  add(help, QStringLiteral("&Keyboard shortcuts"), QKeySequence(Qt::Key_F1), [this] { show_shortcuts(); });
}

void MainWindow::show_shortcuts() {
  QString text = QStringLiteral("<table cellspacing=4>");
  for (QAction* a : actions())
    if (!a->shortcut().isEmpty())
      text += QStringLiteral("<tr><td><b>%1</b></td><td>%2</td></tr>")
                  .arg(a->shortcut().toString(QKeySequence::NativeText), a->text().remove(QLatin1Char('&')));
  text += QStringLiteral("<tr><td><b>Ctrl+wheel / drag</b></td><td>zoom / pan a timeline</td></tr>"
                         "<tr><td><b>Double-click</b></td><td>fit a timeline; apply a fix</td></tr>"
                         "<tr><td><b>Ctrl+Return</b></td><td>apply the selected fix</td></tr></table>");
  QMessageBox::information(this, QStringLiteral("Keyboard shortcuts"), text);
}

void MainWindow::update_title() {
  QString t = QStringLiteral("zerosim");
  if (explore_->has_scenario()) {
    const Scenario& s = explore_->scenario();
    t += QStringLiteral(" — %1 on %2").arg(fmt::qs(s.model.name), fmt::qs(s.hardware.name));
  }
  if (!session_path_.isEmpty()) t += QStringLiteral(" [%1]").arg(QFileInfo(session_path_).fileName());
  setWindowTitle(t);
}

bool MainWindow::open(const InputRefs& refs, const RunOverrides& run) {
  if (!explore_->open(refs, run)) {
    error_ = explore_->last_error();
    statusBar()->showMessage(error_);
    return false;
  }
  return true;
}

bool MainWindow::open_session(const QString& path) {
  auto s = read_session(path.toStdString());
  if (!s) return error_ = fmt::qs(s.error().message), false;
  auto sc = restore(*s);
  if (!sc) return error_ = fmt::qs(sc.error().message), false;
  explore_->set_scenario(*sc);
  if (!s->sweep.x.values.empty() && !s->sweep.y.values.empty()) sweep_->set_spec(s->sweep);
  if (!s->trace_path.empty()) compare_->load_trace(fmt::qs(s->trace_path));
  session_path_ = path;
  show_tab(fmt::qs(s->tab));
  update_title();
  statusBar()->showMessage(QStringLiteral("Opened session ") + path);
  return true;
}

bool MainWindow::save_session(const QString& path) {
  if (!explore_->has_scenario()) return error_ = QStringLiteral("nothing to save"), false;
  Session s = capture(explore_->scenario());
  s.tab = current_tab().toStdString();
  s.sweep = sweep_->spec();
  s.trace_path = compare_->trace_path().toStdString();
  core::Status st = write_session(s, path.toStdString());
  if (!st.ok()) return error_ = fmt::qs(st.message()), false;
  session_path_ = path;
  update_title();
  statusBar()->showMessage(QStringLiteral("Saved session ") + path);
  return true;
}

void MainWindow::show_tab(const QString& name) {
  const int i = static_cast<int>(tab_names().indexOf(name.toLower()));
  if (i >= 0) tabs_->setCurrentIndex(i);
}

QString MainWindow::current_tab() const { return tab_names().value(tabs_->currentIndex()); }

void MainWindow::simulate() {
  if (!explore_->has_scenario()) return;
  if (tabs_->currentWidget() != compare_) tabs_->setCurrentWidget(simulate_);
  simulate_->run(explore_->scenario());
}

void MainWindow::run_sweep() {
  if (!explore_->has_scenario()) return;
  tabs_->setCurrentWidget(sweep_);
  sweep_->set_base(explore_->scenario());
  sweep_->run();
}

void MainWindow::cancel() {
  if (tabs_->currentWidget() == sweep_) sweep_->cancel();
  else simulate_->cancel();
}

bool MainWindow::load_trace(const QString& path) {
  if (!compare_->load_trace(path)) return error_ = compare_->last_error(), false;
  if (!simulate_->has_result() && !simulate_->running() && explore_->has_scenario()) simulate_->run(explore_->scenario());
  return true;
}

void MainWindow::open_trace_dialog() {
  const QString p = QFileDialog::getOpenFileName(this, QStringLiteral("Load a measured trace"), {},
                                                 QStringLiteral("zerosim trace (*.json)"));
  if (p.isEmpty()) return;
  tabs_->setCurrentWidget(compare_);
  if (!load_trace(p)) QMessageBox::warning(this, QStringLiteral("Load trace"), error_);
}

void MainWindow::import_hf() {
  const QString p = QFileDialog::getOpenFileName(this, QStringLiteral("Import a HuggingFace config.json"), {},
                                                 QStringLiteral("config.json (*.json)"));
  if (p.isEmpty()) return;
  tabs_->setCurrentWidget(explore_);
  if (!explore_->import_hf_config(p)) QMessageBox::warning(this, QStringLiteral("Import"), explore_->last_error());
}

void MainWindow::load_hardware() {
  const QString p = QFileDialog::getOpenFileName(this, QStringLiteral("Load a hardware profile"), {}, QStringLiteral("JSON (*.json)"));
  if (p.isEmpty()) return;
  tabs_->setCurrentWidget(explore_);
  if (!explore_->load_hardware(p)) QMessageBox::warning(this, QStringLiteral("Load hardware"), explore_->last_error());
}

void MainWindow::save_hardware() {
  const QString p = QFileDialog::getSaveFileName(this, QStringLiteral("Save the hardware profile"), QStringLiteral("hardware.json"),
                                                 QStringLiteral("JSON (*.json)"));
  if (p.isEmpty()) return;
  if (explore_->save_hardware(p))
    statusBar()->showMessage(QStringLiteral("Wrote ") + p);
  else
    QMessageBox::warning(this, QStringLiteral("Save hardware"), explore_->last_error());
}

void MainWindow::load_ds_config() {
  const QString p = QFileDialog::getOpenFileName(this, QStringLiteral("Load a ds_config.json"), {}, QStringLiteral("JSON (*.json)"));
  if (p.isEmpty()) return;
  tabs_->setCurrentWidget(explore_);
  if (!explore_->load_ds_config(p)) QMessageBox::warning(this, QStringLiteral("Load ds_config"), explore_->last_error());
}

void MainWindow::save_ds_config() {
  const QString p = QFileDialog::getSaveFileName(this, QStringLiteral("Save the strategy as ds_config.json"),
                                                 QStringLiteral("ds_config.json"), QStringLiteral("JSON (*.json)"));
  if (p.isEmpty()) return;
  if (explore_->save_ds_config(p))
    statusBar()->showMessage(QStringLiteral("Wrote ") + p);
  else
    QMessageBox::warning(this, QStringLiteral("Save ds_config"), explore_->last_error());
}

void MainWindow::prepare_tab(const QString& tab, const QString& trace, std::function<void(bool, QString)> done) {
  show_tab(tab);
  auto finish = std::make_shared<std::function<void(bool, QString)>>(std::move(done));
  auto conns = std::make_shared<std::vector<QMetaObject::Connection>>();
  auto once = [finish, conns](bool ok, const QString& msg) {
    for (auto& c : *conns) QObject::disconnect(c);
    if (*finish) {
      auto f = std::move(*finish);
      *finish = nullptr;
      f(ok, msg);
    }
  };
  if (tab == QStringLiteral("explore")) {
    if (!explore_->fixes_pending()) return once(explore_->has_scenario(), explore_->last_error());
    conns->push_back(connect(explore_->fixes_job(), &Job::done, this, [once] { once(true, {}); }));
    conns->push_back(connect(explore_->fixes_job(), &Job::failed, this, [once](const QString& m) { once(false, m); }));
    return;
  }
  if (!explore_->has_scenario()) return once(false, QStringLiteral("no configuration: ") + explore_->last_error());
  if (tab == QStringLiteral("sweep")) {
    Job* job = sweep_->job();
    conns->push_back(connect(job, &Job::done, this, [once] { once(true, {}); }));
    conns->push_back(connect(job, &Job::failed, this, [once](const QString& m) { once(false, m); }));
    run_sweep();
    return;
  }
  if (tab == QStringLiteral("compare") && !trace.isEmpty() && !compare_->load_trace(trace))
    return once(false, compare_->last_error());
  Job* job = simulate_->job();
  conns->push_back(connect(job, &Job::done, this, [once] { once(true, {}); }));
  conns->push_back(connect(job, &Job::failed, this, [once](const QString& m) { once(false, m); }));
  simulate();
  show_tab(tab);
}

}  // namespace zs::gui
