#include "gui/widgets/sweep_tab.h"

#include <QComboBox>
#include <QFileInfo>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QLinearGradient>
#include <QPainter>
#include <QPainterPath>
#include <QProgressBar>
#include <QPushButton>
#include <QStyledItemDelegate>
#include <QTableView>
#include <QThread>
#include <QVBoxLayout>

#include <algorithm>

#include "gui/models/format.h"

namespace zs::gui {
namespace {

// "DOES NOT FIT — gpu needs 83.2 GiB, has 80.0 GiB (…)" → "gpu needs 83.2 GiB"; "invalid: …" → "invalid".
QString short_reason(const std::string& r) {
  const QString s = fmt::qs(r);
  if (s.startsWith(QStringLiteral("invalid"))) return QStringLiteral("invalid");
  const int dash = s.indexOf(QStringLiteral("— "));
  if (dash >= 0) {
    QString t = s.mid(dash + 2);
    return t.left(t.indexOf(QLatin1Char(',')));
  }
  return s.left(s.indexOf(QLatin1Char(':')));
}

// A heat cell: a rounded tile in the model's colour with tokens/s, or a hatched tile with the reason.
class HeatmapDelegate : public QStyledItemDelegate {
 public:
  using QStyledItemDelegate::QStyledItemDelegate;
  void paint(QPainter* p, const QStyleOptionViewItem& opt, const QModelIndex& index) const override {
    const auto* m = dynamic_cast<const SweepModel*>(index.model());
    if (!m) return QStyledItemDelegate::paint(p, opt, index);
    const SweepCell& c = m->cell(index.row(), index.column());
    p->save();
    p->setRenderHint(QPainter::Antialiasing);
    const QRectF r = QRectF(opt.rect).adjusted(2, 2, -2, -2);
    QPainterPath path;
    path.addRoundedRect(r, 4, 4);
    p->fillPath(path, index.data(Qt::BackgroundRole).value<QColor>());
    const bool done = c.state == CellState::done;
    if (done && !c.feasible) {
      p->setClipPath(path);
      p->setPen(QPen(QColor(0xd0, 0xc8, 0xc4), 1));
      for (double x = r.left() - r.height(); x < r.right(); x += 7) p->drawLine(QPointF(x, r.bottom()), QPointF(x + r.height(), r.top()));
      p->setClipping(false);
    }
    if (opt.state & QStyle::State_Selected) {
      p->setPen(QPen(QColor(0x21, 0x21, 0x21), 2.5));
      p->drawPath(path);
    }
    QFont f = opt.font;
    p->setPen(index.data(Qt::ForegroundRole).value<QBrush>().color());
    if (done && c.feasible) {
      f.setBold(true);
      p->setFont(f);
      p->drawText(r.adjusted(0, 2, 0, -r.height() / 2.6), Qt::AlignCenter, index.data().toString());
      QFont s = opt.font;
      s.setPointSizeF(s.pointSizeF() * 0.8);
      p->setFont(s);
      p->drawText(r.adjusted(0, r.height() / 2.2, 0, -2), Qt::AlignCenter, QStringLiteral("MFU ") + fmt::percent(c.mfu));
    } else if (done) {
      QFont s = opt.font;
      s.setPointSizeF(s.pointSizeF() * 0.8);
      p->setFont(s);
      p->setPen(QColor(0x8a, 0x2a, 0x2a));
      const QString text = QStringLiteral("✕ ") + short_reason(c.reason);
      p->drawText(r.adjusted(4, 2, -4, -2), Qt::AlignCenter | Qt::TextWordWrap,
                  QFontMetrics(s).elidedText(text, Qt::ElideRight, static_cast<int>(r.width() * 1.9 - 8)));
    } else {
      p->setFont(f);
      p->drawText(r, Qt::AlignCenter, QStringLiteral("…"));
    }
    p->restore();
  }
};

// The colour scale: worst → best tokens/s of the feasible cells.
class LegendBar : public QWidget {
 public:
  explicit LegendBar(QWidget* parent) : QWidget(parent) { setFixedHeight(34); }
  void set_range(double lo, double hi) {
    lo_ = lo;
    hi_ = hi;
    update();
  }

 protected:
  void paintEvent(QPaintEvent*) override {
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    const QRectF bar(90, 4, std::max(60, width() - 180), 12);
    QLinearGradient g(bar.topLeft(), bar.topRight());
    for (int i = 0; i <= 10; ++i) g.setColorAt(i / 10.0, heat_color(i / 10.0));
    p.fillRect(bar, g);
    QFont f = font();
    f.setPointSizeF(f.pointSizeF() * 0.85);
    p.setFont(f);
    p.setPen(QColor(0x44, 0x44, 0x44));
    p.drawText(QRectF(0, 0, 86, 20), Qt::AlignRight | Qt::AlignVCenter, fmt::rate(lo_, ""));
    p.drawText(QRectF(bar.right() + 4, 0, 120, 20), Qt::AlignLeft | Qt::AlignVCenter, fmt::rate(hi_, "") + QStringLiteral(" tokens/s"));
    p.drawText(QRectF(bar.left(), 17, bar.width(), 16), Qt::AlignCenter, QStringLiteral("predicted tokens/s (feasible cells)"));
  }

 private:
  double lo_ = 0, hi_ = 0;
};

}  // namespace

SweepTab::SweepTab(QWidget* parent) : QWidget(parent), job_(new SweepJob(this)) {
  auto* col = new QVBoxLayout(this);
  col->setContentsMargins(6, 6, 6, 6);
  auto* grid = new QGridLayout;
  const char* axis_names[2] = {"Columns (x):", "Rows (y):"};
  for (int a = 0; a < 2; ++a) {
    knob_[a] = new QComboBox(this);
    for (const auto& k : knobs()) knob_[a]->addItem(QString::fromUtf8(k.label), QString::fromUtf8(k.key));
    values_[a] = new QLineEdit(this);
    values_[a]->setPlaceholderText(QStringLiteral("values, e.g. 1, 2, 4, 8 (empty: every choice)"));
    grid->addWidget(new QLabel(QString::fromUtf8(axis_names[a]), this), a, 0);
    grid->addWidget(knob_[a], a, 1);
    grid->addWidget(values_[a], a, 2);
    connect(knob_[a], &QComboBox::activated, this, [this, a] { axis_changed(a); });
  }
  grid->setColumnStretch(2, 1);
  run_ = new QPushButton(QStringLiteral("▶  Run sweep"), this);
  run_->setObjectName(QStringLiteral("run_sweep"));
  run_->setToolTip(QStringLiteral("Predict every cell in the background (Ctrl+R)"));
  cancel_ = new QPushButton(QStringLiteral("■  Cancel"), this);
  cancel_->setEnabled(false);
  cancel_->setToolTip(QStringLiteral("Stop the sweep (Esc)"));
  grid->addWidget(run_, 0, 3);
  grid->addWidget(cancel_, 1, 3);
  col->addLayout(grid);

  auto* status_row = new QHBoxLayout;
  progress_ = new QProgressBar(this);
  progress_->setMaximumWidth(260);
  progress_->setFormat(QStringLiteral("%v / %m cells"));
  progress_->setVisible(false);
  status_ = new QLabel(QStringLiteral("Pick two knobs and their values, then Run (Ctrl+R). The base is the Explore tab's configuration."), this);
  status_->setStyleSheet(QStringLiteral("color: #555;"));
  status_row->addWidget(progress_);
  status_row->addWidget(status_, 1);
  col->addLayout(status_row);

  auto* body = new QHBoxLayout;
  auto* left = new QVBoxLayout;
  legend_ = new QLabel(this);
  legend_->setStyleSheet(QStringLiteral("color: #333;"));
  left->addWidget(legend_);
  view_ = new QTableView(this);
  view_->setModel(&model_);
  view_->setItemDelegate(new HeatmapDelegate(view_));
  view_->setShowGrid(false);
  view_->setSelectionMode(QAbstractItemView::SingleSelection);
  view_->setMouseTracking(true);
  view_->horizontalHeader()->setDefaultSectionSize(112);
  view_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  view_->verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
  view_->verticalHeader()->setMinimumWidth(64);
  view_->setStyleSheet(QStringLiteral("QTableView { background: white; }"));
  left->addWidget(view_, 1);
  auto* scale = new LegendBar(this);
  left->addWidget(scale);
  body->addLayout(left, 3);

  auto* side = new QVBoxLayout;
  auto* dt = new QLabel(QStringLiteral("<b>Selected cell</b>"), this);
  side->addWidget(dt);
  details_ = new QLabel(QStringLiteral("Click a cell to load its configuration into Explore."), this);
  details_->setWordWrap(true);
  details_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  details_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  details_->setMinimumWidth(300);
  details_->setMaximumWidth(380);
  side->addWidget(details_, 1);
  load_ = new QPushButton(QStringLiteral("Load into Explore"), this);
  export_ = new QPushButton(QStringLiteral("Export ds_config.json…"), this);
  export_->setObjectName(QStringLiteral("export_cell"));
  load_->setEnabled(false);
  export_->setEnabled(false);
  side->addWidget(load_);
  side->addWidget(export_);
  body->addLayout(side, 1);
  col->addLayout(body, 1);

  connect(run_, &QPushButton::clicked, this, [this] {
    if (run_requested_) run_requested_();
  });
  connect(cancel_, &QPushButton::clicked, this, [this] { cancel(); });
  connect(view_, &QTableView::clicked, this, [this](const QModelIndex& i) { select(i.row(), i.column()); });
  connect(load_, &QPushButton::clicked, this, [this] {
    if (auto s = cell_scenario_at(sel_row_, sel_col_); s && chosen_) chosen_(*s);
  });
  connect(export_, &QPushButton::clicked, this, [this] {
    if (export_requested_) export_requested_(sel_row_, sel_col_);
  });
  connect(job_, &Job::partial, this, [this, scale](int i) {
    model_.set_cell(i, job_->cells()[static_cast<size_t>(i)]);
    progress_->setValue(model_.done());
    double lo = model_.best();
    for (int r = 0; r < model_.rowCount(); ++r)
      for (int c = 0; c < model_.columnCount(); ++c) {
        const SweepCell& x = model_.cell(r, c);
        if (x.state == CellState::done && x.feasible) lo = std::min(lo, x.tokens_per_s);
      }
    scale->set_range(lo, model_.best());
  });
  connect(job_, &Job::progress, this, [this](double, const QString& what) { status_->setText(QStringLiteral("Sweeping… ") + what); });
  connect(job_, &Job::done, this, [this] {
    progress_->setVisible(false);
    cancel_->setEnabled(false);
    int feasible = 0;
    for (const auto& c : job_->cells()) feasible += c.feasible;
    // Point at the best cell (details only: loading into Explore waits for a click).
    int best = -1;
    for (size_t i = 0; i < job_->cells().size(); ++i)
      if (job_->cells()[i].feasible && (best < 0 || job_->cells()[i].tokens_per_s > job_->cells()[static_cast<size_t>(best)].tokens_per_s))
        best = static_cast<int>(i);
    if (best >= 0) {
      const int nx = model_.columnCount();
      view_->setCurrentIndex(model_.index(best / nx, best % nx));
      show_details(best / nx, best % nx);
    }
    status_->setText(QStringLiteral("%1 cells: %2 feasible, %3 infeasible; best %4 tokens/s. Click a cell to load it.")
                         .arg(job_->cells().size())
                         .arg(feasible)
                         .arg(job_->cells().size() - static_cast<size_t>(feasible))
                         .arg(fmt::rate(model_.best(), "")));
  });
  connect(job_, &Job::failed, this, [this](const QString& msg) {
    progress_->setVisible(false);
    cancel_->setEnabled(false);
    status_->setText(msg == QStringLiteral("cancelled") ? QStringLiteral("Cancelled after %1 cells.").arg(model_.done())
                                                        : QStringLiteral("Sweep failed: ") + msg);
  });
  set_spec({{Knob::micro_batch, {"1", "2", "4", "8", "16"}}, {Knob::offload_optimizer, {"none", "cpu", "nvme"}}});
}

void SweepTab::resizeEvent(QResizeEvent* e) {
  QWidget::resizeEvent(e);
  fit_rows();
}

void SweepTab::fit_rows() {
  // Rows share the height, but a tile stays between 40 and 110 px tall (few rows do not become towers).
  const int rows = std::max(1, model_.rowCount());
  const int h = std::clamp(view_->viewport()->height() / rows, 40, 110);
  view_->verticalHeader()->setDefaultSectionSize(h);
}

void SweepTab::axis_changed(int a) {
  const auto k = parse_knob(knob_[a]->currentData().toString().toStdString());
  if (!k) return;
  std::vector<std::string> v = base_ ? default_axis_values(*base_, *k) : knob_info(*k).choices;
  QStringList l;
  for (const auto& x : v) l << fmt::qs(x);
  values_[a]->setText(l.join(QStringLiteral(", ")));
}

void SweepTab::set_base(const Scenario& s) { base_ = s; }

void SweepTab::set_spec(const SweepSpec& spec) {
  const SweepAxis* axes[2] = {&spec.x, &spec.y};
  for (int a = 0; a < 2; ++a) {
    knob_[a]->setCurrentIndex(knob_[a]->findData(QString::fromUtf8(knob_info(axes[a]->knob).key)));
    QStringList l;
    for (const auto& x : axes[a]->values) l << fmt::qs(x);
    values_[a]->setText(l.join(QStringLiteral(", ")));
  }
}

SweepSpec SweepTab::spec() const {
  SweepSpec s;
  SweepAxis* axes[2] = {&s.x, &s.y};
  for (int a = 0; a < 2; ++a) {
    axes[a]->knob = parse_knob(knob_[a]->currentData().toString().toStdString()).value_or(Knob::micro_batch);
    axes[a]->values = parse_axis_values(axes[a]->knob, values_[a]->text().toStdString());
  }
  return s;
}

void SweepTab::run(Predictor predictor) {
  if (!base_) {
    status_->setText(QStringLiteral("Nothing to sweep: open a configuration in Explore first."));
    return;
  }
  const SweepSpec s = spec();
  if (s.cells() == 0) {
    status_->setText(QStringLiteral("Both axes need at least one value."));
    return;
  }
  ran_ = base_;
  model_.reset(s);
  fit_rows();
  legend_->setText(QStringLiteral("<b>%1</b> across (columns)  ×  <b>%2</b> down (rows) — %3 on %4, %5")
                       .arg(QString::fromUtf8(knob_info(s.x.knob).label), QString::fromUtf8(knob_info(s.y.knob).label),
                            fmt::qs(ran_->model.name), fmt::qs(ran_->hardware.name),
                            QFileInfo(fmt::qs(ran_->refs.ds_config)).completeBaseName()));
  sel_row_ = sel_col_ = -1;
  load_->setEnabled(false);
  export_->setEnabled(false);
  progress_->setRange(0, static_cast<int>(s.cells()));
  progress_->setValue(0);
  progress_->setVisible(true);
  cancel_->setEnabled(true);
  status_->setText(QStringLiteral("Sweeping %1 cells in the background…").arg(s.cells()));
  job_->start(*ran_, s, std::move(predictor), std::max(1, QThread::idealThreadCount() / 2));
}

void SweepTab::cancel() { job_->cancel(); }

std::optional<Scenario> SweepTab::cell_scenario_at(int row, int column) const {
  if (!ran_ || row < 0 || column < 0 || row >= model_.rowCount() || column >= model_.columnCount()) return std::nullopt;
  auto s = cell_scenario(*ran_, model_.spec(), static_cast<size_t>(column), static_cast<size_t>(row));
  if (!s) return std::nullopt;
  return *s;
}

bool SweepTab::export_cell(int row, int column, const QString& path) {
  auto s = cell_scenario_at(row, column);
  if (!s) return false;
  return save_ds_config(s->strategy, path.toStdString()).ok();
}

void SweepTab::select(int row, int column) {
  show_details(row, column);
  if (auto s = cell_scenario_at(row, column); s && chosen_) chosen_(*s);
}

void SweepTab::show_details(int row, int column) {
  sel_row_ = row;
  sel_col_ = column;
  const SweepCell& c = model_.cell(row, column);
  const SweepSpec& sp = model_.spec();
  QString text = QStringLiteral("%1 = <b>%2</b><br>%3 = <b>%4</b><br><br>")
                     .arg(QString::fromUtf8(knob_info(sp.x.knob).label), fmt::qs(sp.x.values[static_cast<size_t>(column)]),
                          QString::fromUtf8(knob_info(sp.y.knob).label), fmt::qs(sp.y.values[static_cast<size_t>(row)]));
  if (c.state != CellState::done)
    text += QStringLiteral("pending…");
  else if (c.feasible)
    text += QStringLiteral("<b>%1 tokens/s</b><br>step %2 · MFU %3<br><br>%4")
                .arg(fmt::rate(c.tokens_per_s, ""), fmt::duration(c.step_time_s), fmt::percent(c.mfu), fmt::qs(c.bottleneck).toHtmlEscaped());
  else
    text += QStringLiteral("<span style='color:#b71c1c'><b>infeasible</b></span><br>") + fmt::qs(c.reason).toHtmlEscaped();
  const auto s = cell_scenario_at(row, column);
  details_->setText(text);
  load_->setEnabled(s.has_value());
  export_->setEnabled(s.has_value());
}

}  // namespace zs::gui
