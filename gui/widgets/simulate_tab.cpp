#include "gui/widgets/simulate_tab.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QTreeView>
#include <QVBoxLayout>

#include "core/hardware.h"
#include "gui/charts/charts.h"
#include "gui/models/format.h"
#include "gui/widgets/timeline_view.h"

namespace zs::gui {

MemoryCharts::MemoryCharts(QWidget* parent) : QWidget(parent) {
  auto* l = new QVBoxLayout(this);
  l->setContentsMargins(0, 0, 0, 0);
  l->setSpacing(2);
  for (auto*& c : charts_) {
    c = new charts::LineChart(this);
    c->setMinimumHeight(110);
    l->addWidget(c);
  }
}

void MemoryCharts::set(const Prediction& p, const Prediction* m) {
  static const char* names[3] = {"GPU memory per rank", "CPU memory per node", "NVMe per node"};
  static const char* short_names[3] = {"GPU per rank", "CPU per node", "NVMe per node"};
  for (size_t t = 0; t < 3; ++t) {
    const bool used = p.peak_bytes[t] > 0 || (m && m->peak_bytes[t] > 0);
    charts_[t]->setVisible(used || t == 0);
    data_[t] = {};
    if (!used && t != 0) continue;
    // Against a measurement, both lines are the tensors' bytes: a trace's overhead_bytes (the CUDA context, the
    // allocator's reserve, the Python processes that simulate prices) are the framework's, and the engine's trace
    // has none, as `zerosim compare` sets them apart.
    const int64_t p_fixed = m ? p.trace.overhead_bytes[t] : 0, m_fixed = m ? m->trace.overhead_bytes[t] : 0;
    charts::LineChartData& d = data_[t];
    if (m) {
      d.title = QStringLiteral("%1, tensors (s) — peak %2, measured %3 (dashed)")
                    .arg(QString::fromUtf8(short_names[t]), fmt::bytes(p.peak_bytes[t] - p_fixed),
                         fmt::bytes(m->peak_bytes[t] - m_fixed));
      if (p_fixed > 0 || m_fixed > 0)
        d.title += QStringLiteral(
                       "<br><span style=\"font-weight:normal\">the framework's fixed bytes apart: %1 "
                       "predicted, %2 measured</span>")
                       .arg(fmt::bytes(p_fixed), fmt::bytes(m_fixed));
    } else {
      d.title = QStringLiteral("%1 over the step (s) — peak %2 of %3")
                    .arg(QString::fromUtf8(names[t]), fmt::bytes(p.peak_bytes[t]), fmt::bytes(p.capacity_bytes[t]));
    }
    d.legend = false;  // the title says which line is which; small charts keep their height for the plot
    auto series = [&](const Prediction& src, int64_t fixed, const QString& name, bool dashed, bool area, QColor color) {
      charts::LineSeries s;
      s.name = name;
      s.color = color;
      s.dashed = dashed;
      s.area = area;
      for (const auto& x : src.trace.memory) s.points.emplace_back(x.t_s, static_cast<double>(x.bytes[t] - fixed));
      if (!s.points.empty() && src.step_time_s > s.points.back().x())
        s.points.emplace_back(src.step_time_s, s.points.back().y());
      return s;
    };
    d.series.push_back(series(p, p_fixed, m ? QStringLiteral("predicted") : QStringLiteral("occupancy"), false, !m,
                              fmt::tier_color(static_cast<int>(t))));
    if (m) d.series.push_back(series(*m, m_fixed, QStringLiteral("measured"), true, false, QColor(0x33, 0x33, 0x33)));
    // Capacity bounds the whole process, not the tensors: drawn on the prediction alone.
    double top = 0;
    if (!m && p.capacity_bytes[t] > 0 && p.capacity_bytes[t] < 4 * std::max<int64_t>(p.peak_bytes[t], 1)) {
      d.reference = static_cast<double>(p.capacity_bytes[t]);
      d.reference_label = QStringLiteral("capacity");
      top = *d.reference;
    }
    // The axis in the unit of the largest value, so that a tiny model's MiB do not all read "0.0 GiB".
    for (const auto& s : d.series)
      for (const auto& q : s.points) top = std::max(top, q.y());
    constexpr double kMiB = 1024.0 * 1024.0;
    const double unit = top >= core::kGiB ? core::kGiB : top >= kMiB ? kMiB : 1024.0;
    d.y_label = unit == core::kGiB ? QStringLiteral("GiB")
                : unit == kMiB     ? QStringLiteral("MiB")
                                   : QStringLiteral("KiB");
    for (auto& s : d.series)
      for (auto& q : s.points) q.setY(q.y() / unit);
    if (d.reference) *d.reference /= unit;
    charts_[t]->set_data(d);
  }
}

SimulateTab::SimulateTab(QWidget* parent) : QWidget(parent), job_(new SimulationJob(this)) {
  auto* col = new QVBoxLayout(this);
  col->setContentsMargins(6, 6, 6, 6);

  auto* bar = new QHBoxLayout;
  run_ = new QPushButton(QStringLiteral("▶  Simulate"), this);
  run_->setObjectName(QStringLiteral("simulate"));
  run_->setToolTip(QStringLiteral("Simulate one training step of the Explore tab's configuration (F5)"));
  cancel_ = new QPushButton(QStringLiteral("■  Cancel"), this);
  cancel_->setToolTip(QStringLiteral("Stop waiting for the running simulation (Esc)"));
  cancel_->setEnabled(false);
  progress_ = new QProgressBar(this);
  progress_->setRange(0, 100);
  progress_->setMaximumWidth(220);
  progress_->setTextVisible(false);
  progress_->setVisible(false);
  status_ = new QLabel(simulator_available() ? QStringLiteral("Press F5 to simulate the configuration of the Explore tab.")
                                             : QStringLiteral("This build has no simulator (SimGrid not found)."),
                       this);
  status_->setStyleSheet(QStringLiteral("color: #555;"));
  ranks_ = new QComboBox(this);
  ranks_->addItem(QStringLiteral("rank 0"), 0);
  ranks_->addItem(QStringLiteral("all ranks of the node"), -1);
  ranks_->setToolTip(QStringLiteral("Lanes: rank 0's streams, or every simulated GPU's"));
  auto* zin = new QPushButton(QStringLiteral("+"), this);
  auto* zout = new QPushButton(QStringLiteral("−"), this);
  auto* zfit = new QPushButton(QStringLiteral("Fit"), this);
  zin->setToolTip(QStringLiteral("Zoom in (Ctrl++, or Ctrl+wheel on the timeline)"));
  zout->setToolTip(QStringLiteral("Zoom out (Ctrl+-)"));
  zfit->setToolTip(QStringLiteral("Show the whole step (Ctrl+0, or double-click the timeline)"));
  for (auto* b : {zin, zout}) b->setFixedWidth(32);
  bar->addWidget(run_);
  bar->addWidget(cancel_);
  bar->addWidget(progress_);
  bar->addWidget(status_, 1);
  bar->addWidget(new QLabel(QStringLiteral("Lanes:"), this));
  bar->addWidget(ranks_);
  bar->addWidget(zout);
  bar->addWidget(zin);
  bar->addWidget(zfit);
  col->addLayout(bar);

  headline_ = new QLabel(this);
  headline_->setObjectName(QStringLiteral("headline"));
  QFont hf = headline_->font();
  hf.setPointSizeF(hf.pointSizeF() * 1.25);
  hf.setBold(true);
  headline_->setFont(hf);
  headline_->setStyleSheet(QStringLiteral("padding: 6px; background: #eef3f8; border-left: 6px solid #4e79a7;"));
  headline_->setWordWrap(true);
  headline_->setVisible(false);
  col->addWidget(headline_);

  auto* split = new QSplitter(Qt::Vertical, this);
  timeline_ = new TimelineView(split);
  timeline_->set_model(&lanes_);
  timeline_->set_title(QStringLiteral("Step timeline (hover an op for details; Ctrl+wheel zooms, drag pans)"));
  split->addWidget(timeline_);

  auto* bottom = new QSplitter(Qt::Horizontal, split);
  summary_view_ = new QTreeView(bottom);
  summary_view_->setModel(&summary_);
  summary_view_->setRootIsDecorated(false);
  summary_view_->setAlternatingRowColors(true);
  summary_view_->setUniformRowHeights(false);
  summary_view_->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  summary_view_->header()->setStretchLastSection(true);
  summary_view_->setWordWrap(true);
  bottom->addWidget(summary_view_);
  auto* mid = new QWidget(bottom);
  auto* mid_l = new QVBoxLayout(mid);
  mid_l->setContentsMargins(0, 0, 0, 0);
  phases_ = new charts::BarChart(mid);
  exposure_ = new charts::BarChart(mid);
  mid_l->addWidget(phases_);
  mid_l->addWidget(exposure_);
  bottom->addWidget(mid);
  memory_ = new MemoryCharts(bottom);
  bottom->addWidget(memory_);
  bottom->setSizes({470, 520, 560});
  split->addWidget(bottom);
  split->setStretchFactor(0, 2);
  split->setStretchFactor(1, 3);
  split->setSizes({240, 600});
  col->addWidget(split, 1);

  connect(run_, &QPushButton::clicked, this, [this] {
    if (run_requested_) run_requested_();
  });
  connect(cancel_, &QPushButton::clicked, this, [this] { cancel(); });
  connect(zin, &QPushButton::clicked, this, [this] { timeline_->zoom_in(); });
  connect(zout, &QPushButton::clicked, this, [this] { timeline_->zoom_out(); });
  connect(zfit, &QPushButton::clicked, this, [this] { timeline_->fit(); });
  connect(ranks_, &QComboBox::activated, this, [this] {
    if (!result_) return;
    lanes_.set_trace(std::shared_ptr<const core::Trace>(result_, &result_->trace), ranks_->currentData().toInt());
  });
  connect(job_, &Job::progress, this, [this](double f, const QString& what) {
    progress_->setValue(static_cast<int>(f * 100));
    status_->setText(QStringLiteral("Simulating… ") + what);
  });
  connect(job_, &Job::done, this, [this] {
    result_ = job_->shared_result();
    show_result();
  });
  connect(job_, &Job::failed, this, [this](const QString& msg) {
    progress_->setVisible(false);
    cancel_->setEnabled(false);
    run_->setEnabled(true);
    status_->setText(msg == QStringLiteral("cancelled") ? QStringLiteral("Cancelled.")
                                                        : QStringLiteral("Simulation failed: ") + msg);
    status_->setStyleSheet(msg == QStringLiteral("cancelled") ? QStringLiteral("color: #555;") : QStringLiteral("color: #c62828;"));
  });
}

void SimulateTab::run(const Scenario& s) {
  progress_->setValue(0);
  progress_->setVisible(true);
  cancel_->setEnabled(true);
  status_->setStyleSheet(QStringLiteral("color: #555;"));
  status_->setText(QStringLiteral("Simulating %1 on %2…").arg(fmt::qs(s.model.name), fmt::qs(s.hardware.name)));
  job_->start(s);
}

void SimulateTab::cancel() { job_->cancel(); }

void SimulateTab::mark_stale() {
  if (!result_ || job_->running()) return;
  status_->setStyleSheet(QStringLiteral("color: #b26a00;"));
  status_->setText(QStringLiteral("The configuration changed since this run — press F5 to simulate it."));
}

void SimulateTab::show_result() {
  const Prediction& p = *result_;
  progress_->setVisible(false);
  cancel_->setEnabled(false);
  status_->setStyleSheet(QStringLiteral("color: #555;"));
  summary_.set_sections(summary_sections(p));
  summary_view_->expandAll();
  if (!p.feasible) {
    status_->setText(QStringLiteral("Does not fit — nothing to simulate."));
    headline_->setText(QStringLiteral("Does not fit: ") + fmt::qs(p.infeasible_reason));
    headline_->setStyleSheet(QStringLiteral("padding: 6px; background: #fdecea; color: #b71c1c; border-left: 6px solid #c62828;"));
    headline_->setVisible(true);
    lanes_.clear();
    if (on_result_) on_result_();
    return;
  }
  status_->setText(QStringLiteral("Simulated %1 ops per rank on %2 GPUs in %3.")
                       .arg(p.ops)
                       .arg(p.simulated_gpus)
                       .arg(fmt::duration(p.wall_s)));
  headline_->setStyleSheet(QStringLiteral("padding: 6px; background: #eef3f8; border-left: 6px solid #4e79a7;"));
  headline_->setText(QStringLiteral("%1 per step  ·  %2 tokens/s  ·  %3 TFLOPS/GPU  ·  MFU %4  ·  bottleneck: %5")
                         .arg(fmt::duration(p.step_time_s), fmt::rate(p.tokens_per_s, ""))
                         .arg(p.model_tflops_per_gpu, 0, 'f', 1)
                         .arg(fmt::percent(p.mfu), fmt::qs(p.bottleneck)));
  headline_->setVisible(true);
  lanes_.set_trace(std::shared_ptr<const core::Trace>(result_, &result_->trace), ranks_->currentData().toInt());
  timeline_->reset_range(p.step_time_s);

  const bool ms = p.step_time_s < 2;
  const double k = ms ? 1e3 : 1;
  const QString unit = ms ? QStringLiteral("ms") : QStringLiteral("s");
  charts::BarChartData ph;
  ph.title = QStringLiteral("Phase breakdown (%1 per step)").arg(fmt::duration(p.step_time_s));
  ph.categories = {QStringLiteral("forward"), QStringLiteral("backward"), QStringLiteral("optimizer")};
  ph.value_label = unit;
  ph.stacked = true;
  ph.legend = false;
  const double v[3] = {p.forward_s * k, p.backward_s * k, p.optimizer_s * k};
  for (int i = 0; i < 3; ++i) {
    charts::BarSet s{ph.categories[i], {0, 0, 0}, fmt::phase_color(static_cast<core::Phase>(i))};
    s.values[static_cast<size_t>(i)] = v[i];
    ph.sets.push_back(s);
  }
  phases_->set_data(ph);

  charts::BarChartData ex;
  ex.title = QStringLiteral("Transfers and CPU work: busy vs exposed (GPU idle)");
  ex.value_label = unit;
  ex.horizontal = true;
  charts::BarSet busy{QStringLiteral("busy"), {}, QColor(0xa0, 0xcb, 0xe8)};
  charts::BarSet exposed{QStringLiteral("exposed"), {}, QColor(0xe1, 0x57, 0x59)};
  for (const auto& x : p.exposed) {
    ex.categories << fmt::qs(x.label);
    busy.values.push_back(x.active_s * k);
    exposed.values.push_back(x.exposed_s * k);
  }
  ex.sets = {busy, exposed};
  exposure_->set_data(ex);
  memory_->set(p);
  if (on_result_) on_result_();
}

}  // namespace zs::gui
