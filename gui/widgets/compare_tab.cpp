#include "gui/widgets/compare_tab.h"

#include <QFileInfo>
#include <QFrame>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QSplitter>
#include <QStackedWidget>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>

#include "gui/charts/charts.h"
#include "gui/models/format.h"
#include "gui/widgets/simulate_tab.h"
#include "gui/widgets/timeline_view.h"

namespace zs::gui {

CompareTab::CompareTab(QWidget* parent) : QWidget(parent) {
  auto* col = new QVBoxLayout(this);
  col->setContentsMargins(6, 6, 6, 6);
  auto* bar = new QHBoxLayout;
  auto* load = new QPushButton(QStringLiteral("Load trace…"), this);
  load->setObjectName(QStringLiteral("load_trace"));
  load->setToolTip(QStringLiteral("Load a measured trace JSON from zerosim train --trace (Ctrl+T)"));
  path_label_ = new QLabel(QStringLiteral("No measured trace loaded."), this);
  path_label_->setStyleSheet(QStringLiteral("color: #555;"));
  path_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* zin = new QPushButton(QStringLiteral("+"), this);
  auto* zout = new QPushButton(QStringLiteral("−"), this);
  auto* zfit = new QPushButton(QStringLiteral("Fit"), this);
  for (auto* b : {zin, zout}) b->setFixedWidth(32);
  bar->addWidget(load);
  bar->addWidget(path_label_, 1);
  bar->addWidget(zout);
  bar->addWidget(zin);
  bar->addWidget(zfit);
  col->addLayout(bar);

  headline_ = new QLabel(this);
  QFont hf = headline_->font();
  hf.setPointSizeF(hf.pointSizeF() * 1.2);
  hf.setBold(true);
  headline_->setFont(hf);
  headline_->setWordWrap(true);
  headline_->setStyleSheet(QStringLiteral("padding: 6px; background: #eef3f8; border-left: 6px solid #4e79a7;"));
  headline_->setText(QStringLiteral("Simulate (F5) and load a measured trace (Ctrl+T) to compare them."));
  col->addWidget(headline_);

  pages_ = new QStackedWidget(this);
  placeholder_ = build_placeholder();
  pages_->addWidget(placeholder_);
  auto* split = new QSplitter(Qt::Vertical, pages_);
  comparison_ = split;
  pages_->addWidget(split);
  auto* lanes = new QWidget(split);
  auto* lanes_l = new QVBoxLayout(lanes);
  lanes_l->setContentsMargins(0, 0, 0, 0);
  top_ = new TimelineView(lanes);
  bottom_ = new TimelineView(lanes);
  top_->set_model(&predicted_lanes_);
  bottom_->set_model(&measured_lanes_);
  top_->set_title(QStringLiteral("Predicted (simulate), rank 0"));
  bottom_->set_title(QStringLiteral("Measured, rank 0"));
  auto axis = std::make_shared<TimeAxis>();
  top_->share_axis(axis, [this] { bottom_->refresh(); });
  bottom_->share_axis(axis, [this] { top_->refresh(); });
  lanes_l->addWidget(top_);
  lanes_l->addWidget(bottom_);
  split->addWidget(lanes);

  auto* low = new QSplitter(Qt::Horizontal, split);
  table_ = new QTableView(low);
  table_->setModel(&phases_);
  table_->verticalHeader()->setVisible(false);
  table_->setAlternatingRowColors(true);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
  for (int c = 1; c < PhaseModel::ColumnCount; ++c) table_->horizontalHeader()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
  low->addWidget(table_);
  bars_ = new charts::BarChart(low);
  low->addWidget(bars_);
  memory_ = new MemoryCharts(low);
  low->addWidget(memory_);
  low->setSizes({430, 560, 560});
  split->addWidget(low);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  col->addWidget(pages_, 1);
  pages_->setCurrentWidget(placeholder_);
  headline_->setVisible(false);

  connect(load, &QPushButton::clicked, this, [this] {
    if (load_requested_) load_requested_();
  });
  update_views();  // the placeholder says whether a prediction is ready
  connect(zin, &QPushButton::clicked, this, [this] { zoom_in(); });
  connect(zout, &QPushButton::clicked, this, [this] { zoom_out(); });
  connect(zfit, &QPushButton::clicked, this, [this] { fit(); });
}

QWidget* CompareTab::build_placeholder() {
  // In a scroll area: its wrapped text must not set the window's minimum size.
  auto* scroll = new QScrollArea(this);
  scroll->setObjectName(QStringLiteral("compare_placeholder"));
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  auto* page = new QWidget(scroll);
  auto* outer = new QVBoxLayout(page);
  outer->setContentsMargins(24, 24, 24, 24);
  auto* card = new QFrame(page);
  card->setObjectName(QStringLiteral("placeholder_card"));
  card->setMaximumWidth(900);
  card->setStyleSheet(QStringLiteral("QFrame#placeholder_card { background: #f7f9fb; border: 1px solid #d8e0e8; "
                                     "border-left: 6px solid #4e79a7; }"));
  auto* cl = new QVBoxLayout(card);
  cl->setContentsMargins(20, 16, 20, 16);
  cl->setSpacing(10);
  auto* title = new QLabel(QStringLiteral("No measured trace loaded"), card);
  QFont tf = title->font();
  tf.setPointSizeF(tf.pointSizeF() * 1.35);
  tf.setBold(true);
  title->setFont(tf);
  cl->addWidget(title);
  auto* body = new QLabel(card);
  body->setObjectName(QStringLiteral("placeholder_text"));
  body->setWordWrap(true);
  body->setTextFormat(Qt::RichText);
  body->setTextInteractionFlags(Qt::TextSelectableByMouse);
  body->setText(QStringLiteral(
      "<p>This tab holds one training step <b>measured</b> on a real run against the <b>prediction</b> of the "
      "Explore configuration (the Simulate tab).</p>"
      "<p><b>What to load:</b> a zerosim trace JSON (<code>\"format\": \"zerosim-trace\"</code>, docs/TRACE.md). "
      "A run of the engine writes one:<br>"
      "&nbsp;&nbsp;<code>zerosim train -m MODEL --hardware HW -c ds_config.json --trace measured.json</code><br>"
      "(the run's most typical step); <code>zerosim simulate … --raw-trace predicted.json</code> writes a "
      "prediction in the same format. Chrome/Perfetto files (<code>simulate --trace</code>, "
      "<code>train --chrome-trace</code>) are not this format. Use the same model, hardware and ds_config as "
      "Explore for an op-by-op comparison; any other trace is still shown, with its phases by span.</p>"
      "<p><b>How:</b> click <b>Load trace…</b> below or at the top left, or <b>File ▸ Load measured trace…</b> "
      "(Ctrl+T). If nothing was simulated yet, loading a trace starts the simulation.</p>"
      "<p><b>Then this tab shows:</b> the predicted and the measured timelines of rank 0, one above the other on "
      "one time axis (zoom one, both follow); forward, backward, optimizer, the step and the exposed time of each "
      "kind of work (CPU Adam, casts, copies, collectives), predicted vs measured with the error, as a table and as "
      "bars; and each tier's memory over the step, the measured curve dashed over the predicted one.</p>"));
  cl->addWidget(body);
  placeholder_status_ = new QLabel(card);
  placeholder_status_->setObjectName(QStringLiteral("placeholder_status"));
  placeholder_status_->setWordWrap(true);
  placeholder_status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  cl->addWidget(placeholder_status_);
  auto* row = new QHBoxLayout;
  auto* load = new QPushButton(QStringLiteral("Load trace…"), card);
  load->setObjectName(QStringLiteral("placeholder_load_trace"));
  load->setToolTip(QStringLiteral("Load a zerosim trace JSON, e.g. from zerosim train --trace (Ctrl+T)"));
  row->addWidget(load);
  row->addStretch(1);
  cl->addLayout(row);
  connect(load, &QPushButton::clicked, this, [this] {
    if (load_requested_) load_requested_();
  });
  auto* h = new QHBoxLayout;
  h->addStretch(1);
  h->addWidget(card, 8);
  h->addStretch(1);
  outer->addLayout(h);
  outer->addStretch(1);
  scroll->setWidget(page);
  return scroll;
}

bool CompareTab::placeholder_shown() const { return pages_->currentWidget() == placeholder_; }

void CompareTab::zoom_in() { top_->zoom_in(); }
void CompareTab::zoom_out() { top_->zoom_out(); }
void CompareTab::fit() { top_->fit(); }

void CompareTab::set_prediction(std::shared_ptr<const Prediction> p) {
  predicted_ = std::move(p);
  update_views();
}

bool CompareTab::load_trace(const QString& path) {
  auto t = core::trace_from_json_file(path.toStdString());
  if (!t) {
    error_ = fmt::qs(t.error().message);
    path_label_->setText(QStringLiteral("Could not read the trace: ") + error_);
    path_label_->setStyleSheet(QStringLiteral("color: #c62828;"));
    update_views();
    return false;
  }
  error_.clear();
  path_ = path;
  measured_trace_ = std::make_shared<const core::Trace>(std::move(*t));
  path_label_->setStyleSheet(QStringLiteral("color: #555;"));
  path_label_->setText(QStringLiteral("Measured: %1  (source \"%2\", %3 events, step %4)")
                           .arg(QFileInfo(path).fileName(), fmt::qs(measured_trace_->source))
                           .arg(measured_trace_->events.size())
                           .arg(fmt::duration(measured_trace_->step_time_s)));
  update_views();
  return true;
}

void CompareTab::update_views() {
  const bool have_pred = predicted_ && predicted_->feasible;
  if (have_pred)
    predicted_lanes_.set_trace(std::shared_ptr<const core::Trace>(predicted_, &predicted_->trace), 0);
  else
    predicted_lanes_.clear();
  measured_.reset();
  QString how;
  if (measured_trace_) {
    measured_lanes_.set_trace(measured_trace_, 0);
    bottom_->set_title(QStringLiteral("Measured (%1), rank 0").arg(fmt::qs(measured_trace_->source)));
    core::Result<Prediction> m = have_pred ? measured(*predicted_, *measured_trace_)
                                           : core::Result<Prediction>(core::bad_input("no prediction"));
    if (m) {
      measured_ = std::make_shared<const Prediction>(std::move(*m));
      // The plan's ops, but maybe not its run: what `zerosim compare` warns of (core::compare_traces).
      const QString w = trace_warnings(predicted_->trace, *measured_trace_);
      if (!w.isEmpty()) how = QStringLiteral("  (") + w + QStringLiteral(")");
    } else {
      // Not the current plan's trace: phases by span, the rest from the trace alone.
      Prediction x;
      x.trace = *measured_trace_;
      x.step_time_s = measured_trace_->step_time_s;
      const auto ph = phase_spans(*measured_trace_);
      x.forward_s = ph[0], x.backward_s = ph[1], x.optimizer_s = ph[2];
      x.peak_bytes = measured_trace_->peak_bytes;
      if (have_pred) x.capacity_bytes = predicted_->capacity_bytes;
      measured_ = std::make_shared<const Prediction>(std::move(x));
      how = have_pred ? QStringLiteral("  (the trace is not of the current plan: ") + fmt::qs(m.error().message) +
                            QStringLiteral("; phases by span)")
                      : QString();
    }
  } else {
    measured_lanes_.clear();
  }
  const double end = std::max(have_pred ? predicted_->step_time_s : 0.0, measured_ ? measured_->step_time_s : 0.0);
  top_->reset_range(std::max(end, predicted_lanes_.end_s()));
  bottom_->refresh();

  Prediction empty;
  const Prediction& pred = have_pred ? *predicted_ : empty;
  pages_->setCurrentWidget(measured_ ? comparison_ : placeholder_);
  headline_->setVisible(measured_ != nullptr);
  if (!measured_) {
    QString status;
    if (have_pred)
      status = QStringLiteral("Prediction ready: %1 per step (Simulate). Load a trace to hold it against a "
                              "measurement.")
                   .arg(fmt::duration(pred.step_time_s));
    else if (predicted_)
      status = QStringLiteral("No prediction to compare: the Explore configuration does not fit%1. A trace loaded now "
                              "is shown on its own.")
                   .arg(predicted_->infeasible_reason.empty()
                            ? QString()
                            : QStringLiteral(" (%1)").arg(fmt::qs(predicted_->infeasible_reason)));
    else
      status = QStringLiteral("No prediction yet: press F5 to simulate the Explore configuration, or load a trace and "
                              "it starts.");
    if (!error_.isEmpty()) {
      // A file without zerosim's "format" key is most often a Chrome/Perfetto trace: say which one to use instead.
      const QString hint = error_.contains(QStringLiteral("format:"))
                               ? QStringLiteral(" — not a zerosim trace; Chrome/Perfetto files (simulate --trace, "
                                                "train --chrome-trace) are not read here: use train --trace or "
                                                "simulate --raw-trace")
                               : QString();
      status = QStringLiteral("<span style=\"color:#c62828\">Could not read the trace: %1%2</span><br>%3")
                   .arg(error_.toHtmlEscaped(), hint.toHtmlEscaped(), status.toHtmlEscaped());
    }
    placeholder_status_->setText(status);
    phases_.set_rows({});
    headline_->setText(have_pred ? QStringLiteral("Predicted %1 per step. Load a measured trace (Ctrl+T) to compare.")
                                       .arg(fmt::duration(pred.step_time_s))
                                 : QStringLiteral("Simulate (F5) and load a measured trace (Ctrl+T) to compare them."));
    if (have_pred) memory_->set(pred);
    return;
  }
  const Prediction& meas = *measured_;
  phases_.set_rows(phase_rows(pred, meas));
  if (have_pred) {
    const double err = meas.step_time_s > 0 ? core::relative_error(pred.step_time_s, meas.step_time_s) : 0;
    const PhaseRow* worst = phases_.largest_phase_error();
    const double werr = worst ? worst->error() : 0;
    headline_->setText(QStringLiteral("Step: predicted %1, measured %2 (error %3%4)  ·  largest phase error: %5 %6%7%8")
                           .arg(fmt::duration(pred.step_time_s), fmt::duration(meas.step_time_s),
                                err >= 0 ? QStringLiteral("+") : QString(), fmt::percent(err),
                                worst ? worst->label : QStringLiteral("—"), werr >= 0 ? QStringLiteral("+") : QString(),
                                fmt::percent(werr), how));
  } else {
    headline_->setText(QStringLiteral("Measured %1 per step. Simulate (F5) to put the prediction beside it.")
                           .arg(fmt::duration(meas.step_time_s)));
  }
  const double k = std::max(pred.step_time_s, meas.step_time_s) < 2 ? 1e3 : 1;
  charts::BarChartData d;
  d.title = QStringLiteral("Per phase: predicted vs measured");
  d.value_label = k > 1 ? QStringLiteral("ms") : QStringLiteral("s");
  charts::BarSet a{QStringLiteral("predicted"), {}, QColor(0x4e, 0x79, 0xa7)};
  charts::BarSet b{QStringLiteral("measured"), {}, QColor(0xf2, 0x8e, 0x2b)};
  for (const auto& r : phases_.rows()) {
    if (r.label.endsWith(QStringLiteral(" exposed"))) continue;
    d.categories << r.label;
    a.values.push_back(r.predicted_s * k);
    b.values.push_back(r.measured_s * k);
  }
  d.sets = {a, b};
  bars_->set_data(d);
  if (have_pred)
    memory_->set(pred, &meas);
  else
    memory_->set(meas);
}

}  // namespace zs::gui
