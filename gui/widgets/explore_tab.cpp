#include "gui/widgets/explore_tab.h"

#include <QCheckBox>
#include <QComboBox>
#include <QEvent>
#include <QFile>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListView>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedWidget>
#include <QTextStream>
#include <QTreeView>
#include <QVBoxLayout>

#include <cmath>
#include <cstdio>

#include "core/paths.h"
#include "gui/charts/charts.h"
#include "gui/models/format.h"

namespace zs::gui {
namespace {

QString stem(const std::string& path) { return QFileInfo(QString::fromStdString(path)).completeBaseName(); }

void fill_shipped(QComboBox* c, core::InputKind kind) {
  for (const auto& p : core::shipped_inputs(kind)) c->addItem(stem(p), stem(p));
}

// Selects the entry whose data is `ref`, adding it (a path) when it is not listed.
void select_ref(QComboBox* c, const std::string& ref) {
  const QString r = QString::fromStdString(ref);
  int i = c->findData(r);
  if (i < 0) i = c->findData(stem(ref));
  if (i < 0) {
    c->addItem(QFileInfo(r).fileName() + QStringLiteral(" (file)"), r);
    i = c->count() - 1;
  }
  c->setCurrentIndex(i);
}

QString compact(int64_t v) {
  char b[32];
  if (v >= 1000000 && v % 1000000 == 0 && v < 1000000000000LL)
    std::snprintf(b, sizeof b, "%.4ge%d", static_cast<double>(v) / std::pow(10.0, std::floor(std::log10(static_cast<double>(v)))),
                  static_cast<int>(std::floor(std::log10(static_cast<double>(v)))));
  else
    std::snprintf(b, sizeof b, "%lld", static_cast<long long>(v));
  return QString::fromUtf8(b);
}

QGroupBox* group(const QString& title, QWidget* parent) {
  auto* g = new QGroupBox(title, parent);
  QFont f = g->font();
  f.setBold(true);
  g->setFont(f);
  return g;
}

// Child widgets of a bold group box keep a normal font.
template <class W>
W* plain(W* w) {
  QFont f = w->font();
  f.setBold(false);
  w->setFont(f);
  return w;
}

// A column whose minimum height is what its layout needs at its current width (the wrapped verdict, subtitle and
// legends included), so that nothing in it is squeezed: the scroll area around it scrolls instead.
class FitColumn : public QWidget {
 public:
  // What QScrollArea asks of a widget whose layout wraps: the least height at that width, not the preferred one.
  int heightForWidth(int w) const override { return layout() ? layout()->totalMinimumHeightForWidth(w) : -1; }

 protected:
  bool event(QEvent* e) override {
    const bool done = QWidget::event(e);
    if ((e->type() == QEvent::Resize || e->type() == QEvent::LayoutRequest) && layout()) {
      const int h = std::max(0, layout()->totalMinimumHeightForWidth(width()));
      if (h != minimumHeight()) setMinimumHeight(h);
    }
    return done;
  }
};

// Scrolls vertically only: as wide as its widget's minimum (the splitter keeps to it, as it did without the scroll
// area), as short as the window needs.
class VerticalScroll : public QScrollArea {
 public:
  explicit VerticalScroll(QWidget* parent) : QScrollArea(parent) {
    setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    setWidgetResizable(true);
    setFrameShape(QFrame::NoFrame);
  }
  QSize minimumSizeHint() const override {
    const int w = widget() ? widget()->minimumSizeHint().width() : 0;
    return {w + verticalScrollBar()->sizeHint().width(), QScrollArea::minimumSizeHint().height()};
  }
};

}  // namespace

ExploreTab::ExploreTab(QWidget* parent) : QWidget(parent), fixes_job_(new FixesJob(this)) {
  auto* split = new QSplitter(Qt::Horizontal, this);
  auto* scroll = new QScrollArea(split);
  scroll->setWidget(build_inputs());
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setMinimumWidth(400);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  split->addWidget(scroll);
  // The results scroll only when the window is shorter than they need (bars, every legend entry, breakdown, fixes):
  // nothing in them is squeezed, and the window's minimum stays small.
  auto* results = new VerticalScroll(split);
  results->setObjectName(QStringLiteral("results_scroll"));
  results->setWidget(build_results());
  split->addWidget(results);
  split->setStretchFactor(0, 0);
  split->setStretchFactor(1, 1);
  split->setSizes({430, 1100});
  auto* l = new QVBoxLayout(this);
  l->setContentsMargins(6, 6, 6, 6);
  l->addWidget(split);
  hardware_.on_edited([this](const std::string&) { hardware_edited(); });
  connect(fixes_job_, &Job::done, this, [this] {
    suggestions_.set_suggestions(fixes_job_->result());
    const bool any = suggestions_.rowCount() > 0;
    apply_->setEnabled(any);
    fixes_stack_->setCurrentWidget(any ? static_cast<QWidget*>(suggestion_view_) : no_fixes_);
    if (any) suggestion_view_->setCurrentIndex(suggestions_.index(0));
    if (!any) {  // it fits, or no change helps: then say what the hardware lacks (core::memory_limits), not a fix
      const auto& r = memory_.report();
      QStringList text{r.fits ? QStringLiteral("It fits as it is: no fix needed.\nRanked fixes appear here when a tier overflows.")
                              : QStringLiteral("No single change or combination found that helps. Limits as configured:")};
      for (const auto& l : core::memory_limits(r)) text << fmt::qs(l.text);
      no_fixes_->setText(text.join(QStringLiteral("\n")));
      no_fixes_->setStyleSheet(r.fits ? QStringLiteral("color: #2e7d32; background: #f4faf4; border: 1px solid #dcebdc;")
                                      : QStringLiteral("color: #b71c1c; background: #fdf4f4; border: 1px solid #f0d0d0;"));
    }
  });
}

bool ExploreTab::fixes_pending() const { return fixes_job_->running(); }

QWidget* ExploreTab::build_inputs() {
  auto* w = new QWidget;
  auto* col = new QVBoxLayout(w);
  col->setContentsMargins(0, 0, 6, 0);

  // Model
  auto* mg = group(QStringLiteral("Model"), w);
  auto* ml = new QVBoxLayout(mg);
  auto* mrow = new QHBoxLayout;
  model_combo_ = plain(new QComboBox(mg));
  model_combo_->setObjectName(QStringLiteral("model"));
  fill_shipped(model_combo_, core::InputKind::model);
  model_combo_->setToolTip(QStringLiteral("Shipped models (models/*.json); Import adds a HuggingFace config.json"));
  auto* import = plain(new QPushButton(QStringLiteral("Import HF…"), mg));
  import->setToolTip(QStringLiteral("Import a HuggingFace config.json (Ctrl+I)"));
  import->setObjectName(QStringLiteral("import_hf"));
  mrow->addWidget(model_combo_, 1);
  mrow->addWidget(import);
  ml->addLayout(mrow);
  ml->addWidget(build_adapter(mg));
  card_view_ = plain(new QTreeView(mg));
  card_view_->setModel(&card_);
  card_view_->setHeaderHidden(true);
  card_view_->setRootIsDecorated(false);
  card_view_->setItemsExpandable(false);
  card_view_->setSelectionMode(QAbstractItemView::NoSelection);
  card_view_->setFixedHeight(142);
  card_view_->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  ml->addWidget(card_view_);
  col->addWidget(mg);

  // Hardware
  auto* hg = group(QStringLiteral("Hardware"), w);
  auto* hl = new QVBoxLayout(hg);
  hardware_combo_ = plain(new QComboBox(hg));
  hardware_combo_->setObjectName(QStringLiteral("hardware"));
  fill_shipped(hardware_combo_, core::InputKind::hardware);
  hardware_combo_->setToolTip(QStringLiteral("Shipped profiles (configs/hardware/*.json); Load… reads one written by zerosim probe"));
  auto* hrow = new QHBoxLayout;
  auto* hload = plain(new QPushButton(QStringLiteral("Load…"), hg));
  hload->setToolTip(QStringLiteral("Load a hardware profile, e.g. one written by zerosim probe (Ctrl+H)"));
  auto* hsave = plain(new QPushButton(QStringLiteral("Save…"), hg));
  hsave->setToolTip(QStringLiteral("Save the profile with your edits as a hardware JSON"));
  hrow->addWidget(hardware_combo_, 1);
  hrow->addWidget(hload);
  hrow->addWidget(hsave);
  hl->addLayout(hrow);
  hardware_view_ = plain(new QTreeView(hg));
  hardware_view_->setModel(&hardware_);
  hardware_view_->setAlternatingRowColors(true);
  hardware_view_->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed |
                                  QAbstractItemView::SelectedClicked);
  hardware_view_->header()->setStretchLastSection(false);
  hardware_view_->header()->setSectionResizeMode(HardwareModel::Field, QHeaderView::Interactive);
  hardware_view_->header()->setSectionResizeMode(HardwareModel::Value, QHeaderView::Stretch);
  hardware_view_->header()->setSectionResizeMode(HardwareModel::Unit, QHeaderView::Fixed);
  hardware_view_->header()->resizeSection(HardwareModel::Field, 190);
  hardware_view_->header()->resizeSection(HardwareModel::Unit, 58);
  hardware_view_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  hardware_view_->setMinimumHeight(128);
  hardware_view_->setMaximumHeight(132);
  hardware_view_->setToolTip(QStringLiteral("Double-click a value to edit it; the verdict follows"));
  hl->addWidget(hardware_view_);
  col->addWidget(hg);

  // Strategy
  auto* sg = group(QStringLiteral("Strategy (ds_config.json)"), w);
  auto* sl = new QVBoxLayout(sg);
  auto* crow = new QHBoxLayout;
  config_combo_ = plain(new QComboBox(sg));
  config_combo_->setObjectName(QStringLiteral("ds_config"));
  fill_shipped(config_combo_, core::InputKind::deepspeed);
  auto* load = plain(new QPushButton(QStringLiteral("Load…"), sg));
  load->setObjectName(QStringLiteral("load_ds_config"));
  load->setToolTip(QStringLiteral("Load a ds_config.json (Ctrl+L)"));
  auto* save = plain(new QPushButton(QStringLiteral("Save…"), sg));
  save->setObjectName(QStringLiteral("save_ds_config"));
  save->setToolTip(QStringLiteral("Save the resolved strategy as ds_config.json (Ctrl+E)"));
  crow->addWidget(config_combo_, 1);
  crow->addWidget(load);
  crow->addWidget(save);
  sl->addLayout(crow);
  auto* form = new QFormLayout;
  form->setLabelAlignment(Qt::AlignRight);
  form->setVerticalSpacing(2);
  auto add_combo = [&](Knob k, const QString& label) {
    auto* c = plain(new QComboBox(sg));
    for (const auto& v : knob_info(k).choices) c->addItem(fmt::qs(v), fmt::qs(v));
    combos_[k] = c;
    c->setObjectName(QStringLiteral("knob_") + QString::fromUtf8(knob_info(k).key));
    form->addRow(plain(new QLabel(label, sg)), c);
    connect(c, &QComboBox::activated, this, [this, k, c] { set_knob(k, c->currentData().toString().toStdString()); });
  };
  auto add_spin = [&](Knob k, const QString& label, int max) {
    auto* s = plain(new QSpinBox(sg));
    s->setRange(1, max);
    s->setKeyboardTracking(false);
    s->setAccelerated(true);
    spins_[k] = s;
    s->setObjectName(QStringLiteral("knob_") + QString::fromUtf8(knob_info(k).key));
    form->addRow(plain(new QLabel(label, sg)), s);
    connect(s, &QSpinBox::valueChanged, this, [this, k](int v) {
      if (!syncing_) set_knob(k, std::to_string(v));
    });
  };
  auto add_edit = [&](Knob k, const QString& label) {
    auto* e = plain(new QLineEdit(sg));
    e->setToolTip(QStringLiteral("elements; 5e8 or 500000000"));
    edits_[k] = e;
    e->setObjectName(QStringLiteral("knob_") + QString::fromUtf8(knob_info(k).key));
    form->addRow(plain(new QLabel(label, sg)), e);
    connect(e, &QLineEdit::editingFinished, this, [this, k, e] {
      if (!syncing_ && e->isModified()) {
        e->setModified(false);
        set_knob(k, e->text().trimmed().toStdString());
      }
    });
  };
  add_combo(Knob::stage, QStringLiteral("ZeRO stage"));
  add_combo(Knob::offload_optimizer, QStringLiteral("Optimizer offload"));
  add_combo(Knob::offload_param, QStringLiteral("Parameter offload"));
  add_combo(Knob::precision, QStringLiteral("Precision"));
  add_spin(Knob::micro_batch, QStringLiteral("Micro batch / GPU"), 1 << 16);
  add_spin(Knob::grad_accum, QStringLiteral("Gradient accumulation"), 1 << 16);
  add_spin(Knob::nodes, QStringLiteral("Nodes"), 1 << 16);
  add_spin(Knob::gpus_per_node, QStringLiteral("GPUs per node"), 1024);
  add_spin(Knob::seq_len, QStringLiteral("Sequence length"), 1 << 24);
  checkpointing_ = plain(new QCheckBox(QStringLiteral("checkpoint every block"), sg));
  checkpointing_->setObjectName(QStringLiteral("knob_checkpointing"));
  form->addRow(plain(new QLabel(QStringLiteral("Activation ckpt"), sg)), checkpointing_);
  connect(checkpointing_, &QCheckBox::toggled, this, [this](bool on) {
    if (!syncing_) set_knob(Knob::checkpointing, on ? "on" : "off");
  });
  add_edit(Knob::reduce_bucket_size, QStringLiteral("Reduce bucket"));
  add_edit(Knob::allgather_bucket_size, QStringLiteral("Allgather bucket"));
  add_edit(Knob::prefetch_bucket_size, QStringLiteral("Prefetch bucket (Z3)"));
  add_edit(Knob::sub_group_size, QStringLiteral("Sub-group size"));
  add_edit(Knob::max_live_parameters, QStringLiteral("Max live params (Z3)"));
  add_combo(Knob::schedule, QStringLiteral("Schedule"));
  combos_[Knob::schedule]->setToolTip(
      QStringLiteral("deepspeed: as DeepSpeed runs; dpu: delayed parameter update; overlap: optimizer overlapped per layer"));
  sl->addLayout(form);
  col->addWidget(sg);
  col->addStretch(1);

  connect(model_combo_, &QComboBox::activated, this, [this] {
    if (!scenario_) return;
    const std::string ref = model_combo_->currentData().toString().toStdString();
    auto m = core::load_model(ref);
    if (!m) return show_error(fmt::qs(m.error().message)), sync_form();
    auto s = with_model(*scenario_, with_adapter(*m));
    if (!s) return show_error(fmt::qs(s.error().message)), sync_form();
    s->refs.model = ref;
    install(std::move(*s));
  });
  connect(hardware_combo_, &QComboBox::activated, this, [this] {
    if (!scenario_) return;
    const std::string ref = hardware_combo_->currentData().toString().toStdString();
    auto h = core::load_hardware(ref);
    if (!h) return show_error(fmt::qs(h.error().message)), sync_form();
    auto s = with_hardware(*scenario_, *h);
    if (!s) return show_error(fmt::qs(s.error().message)), sync_form();
    s->refs.hardware = ref;
    install(std::move(*s));
  });
  connect(config_combo_, &QComboBox::activated, this, [this] {
    if (!scenario_) return;
    const std::string ref = config_combo_->currentData().toString().toStdString();
    core::RunSettings run = scenario_->strategy.run;
    auto st = core::load_strategy(ref, run);
    if (!st) return show_error(fmt::qs(st.error().message)), sync_form();
    Scenario s = with_strategy(*scenario_, *st);
    s.refs.ds_config = ref;
    install(std::move(s));
  });
  connect(hload, &QPushButton::clicked, this, [this] {
    if (requests_.load_hardware) requests_.load_hardware();
  });
  connect(hsave, &QPushButton::clicked, this, [this] {
    if (requests_.save_hardware) requests_.save_hardware();
  });
  connect(import, &QPushButton::clicked, this, [this] {
    if (requests_.import) requests_.import();
  });
  connect(load, &QPushButton::clicked, this, [this] {
    if (requests_.load) requests_.load();
  });
  connect(save, &QPushButton::clicked, this, [this] {
    if (requests_.save) requests_.save();
  });
  return w;
}

QWidget* ExploreTab::build_results() {
  auto* w = new FitColumn;
  w->setObjectName(QStringLiteral("results"));
  auto* col = new QVBoxLayout(w);
  col->setContentsMargins(6, 0, 0, 0);
  verdict_ = new QLabel(w);
  verdict_->setObjectName(QStringLiteral("verdict"));
  QFont vf = verdict_->font();
  vf.setPointSizeF(vf.pointSizeF() * 1.35);
  vf.setBold(true);
  verdict_->setFont(vf);
  verdict_->setMargin(8);
  verdict_->setWordWrap(true);  // a long verdict must not set the window's minimum width
  col->addWidget(verdict_);
  subtitle_ = new QLabel(w);
  subtitle_->setWordWrap(true);
  subtitle_->setStyleSheet(QStringLiteral("color: #555;"));
  col->addWidget(subtitle_);
  error_label_ = new QLabel(w);
  error_label_->setWordWrap(true);
  error_label_->setStyleSheet(QStringLiteral("color: #c62828; background: #fdecea; padding: 4px; border-radius: 3px;"));
  error_label_->setVisible(false);
  error_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  col->addWidget(error_label_);
  bars_ = new charts::TierBarsChart(w);  // its height: each bar and its legend (every item, wrapped to the width)
  col->addWidget(bars_, 3);

  auto* bottom = new QSplitter(Qt::Horizontal, w);
  auto* mem_box = new QWidget(bottom);
  auto* mem_l = new QVBoxLayout(mem_box);
  mem_l->setContentsMargins(0, 0, 0, 0);
  auto* mem_title = new QLabel(QStringLiteral("<b>Memory breakdown</b> (as DeepSpeed allocates it)"), mem_box);
  mem_l->addWidget(mem_title);
  memory_view_ = new QTreeView(mem_box);
  memory_view_->setModel(&memory_);
  memory_view_->setAlternatingRowColors(true);
  memory_view_->setUniformRowHeights(true);
  memory_view_->header()->setSectionResizeMode(MemoryTreeModel::Name, QHeaderView::Stretch);
  memory_view_->header()->setStretchLastSection(false);
  for (int c = 1; c < MemoryTreeModel::ColumnCount; ++c)
    memory_view_->header()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
  mem_l->addWidget(memory_view_);

  auto* fix_box = new QWidget(bottom);
  auto* fix_l = new QVBoxLayout(fix_box);
  fix_l->setContentsMargins(0, 0, 0, 0);
  auto* fix_row = new QHBoxLayout;
  fix_row->addWidget(new QLabel(QStringLiteral("<b>Suggested fixes</b> (cheapest first; ✓ makes it fit)"), fix_box), 1);
  apply_ = new QPushButton(QStringLiteral("Apply"), fix_box);
  apply_->setObjectName(QStringLiteral("apply_fix"));
  apply_->setToolTip(QStringLiteral("Replace the strategy with the selected fix (Ctrl+Return)"));
  apply_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Return));
  apply_->setEnabled(false);
  fix_row->addWidget(apply_);
  fix_l->addLayout(fix_row);
  suggestion_view_ = new QListView(fix_box);
  suggestion_view_->setObjectName(QStringLiteral("fixes"));
  suggestion_view_->setModel(&suggestions_);
  suggestion_view_->setWordWrap(true);
  suggestion_view_->setAlternatingRowColors(true);
  suggestion_view_->setSpacing(1);
  no_fixes_ = new QLabel(QStringLiteral("It fits as it is: no fix needed.\nRanked fixes appear here when a tier overflows."), fix_box);
  no_fixes_->setAlignment(Qt::AlignCenter);
  no_fixes_->setStyleSheet(QStringLiteral("color: #2e7d32; background: #f4faf4; border: 1px solid #dcebdc;"));
  fixes_stack_ = new QStackedWidget(fix_box);
  fixes_stack_->addWidget(suggestion_view_);
  fixes_stack_->addWidget(no_fixes_);
  finding_fixes_ = new QLabel(QStringLiteral("Finding fixes…"), fix_box);
  finding_fixes_->setAlignment(Qt::AlignCenter);
  finding_fixes_->setStyleSheet(QStringLiteral("color: #555;"));
  fixes_stack_->addWidget(finding_fixes_);
  fix_l->addWidget(fixes_stack_, 3);
  fix_l->addWidget(new QLabel(QStringLiteral("<b>Notes</b>"), fix_box));
  notes_ = new QPlainTextEdit(fix_box);
  notes_->setReadOnly(true);
  QFont nf = notes_->font();
  nf.setPointSizeF(nf.pointSizeF() * 0.9);
  notes_->setFont(nf);
  fix_l->addWidget(notes_, 1);
  bottom->addWidget(mem_box);
  bottom->addWidget(fix_box);
  bottom->setSizes({560, 520});
  col->addWidget(bottom, 4);

  connect(suggestion_view_, &QListView::doubleClicked, this, [this](const QModelIndex& i) { apply_suggestion(i.row()); });
  connect(apply_, &QPushButton::clicked, this, [this] {
    const QModelIndex i = suggestion_view_->currentIndex();
    apply_suggestion(i.isValid() ? i.row() : 0);
  });
  return w;
}

bool ExploreTab::open(const InputRefs& refs, const RunOverrides& run) {
  auto s = load_scenario(refs, run);
  if (!s) {
    show_error(fmt::qs(s.error().message));
    return false;
  }
  if (auto a = with_model(*s, with_adapter(s->model))) s = std::move(a);
  install(std::move(*s));
  return true;
}

void ExploreTab::set_scenario(const Scenario& s) { install(s); }

void ExploreTab::show_error(const QString& e) {
  error_ = e;
  error_label_->setText(e);
  error_label_->setVisible(!e.isEmpty());
}

bool ExploreTab::set_knob(Knob k, const std::string& value) {
  if (!scenario_) return false;
  auto s = with_knob(*scenario_, k, value);
  if (!s) {
    show_error(fmt::qs(s.error().message));
    sync_form();
    return false;
  }
  install(std::move(*s));
  return true;
}

void ExploreTab::hardware_edited() {
  if (!scenario_ || syncing_) return;
  auto s = with_hardware(*scenario_, hardware_.hardware());
  if (!s) {
    show_error(fmt::qs(s.error().message));
    return;
  }
  editing_hardware_ = true;  // the model already holds the edit: keep the tree as it is
  install(std::move(*s));
  editing_hardware_ = false;
}

bool ExploreTab::apply_suggestion(int row) {
  if (!scenario_ || row < 0 || row >= suggestions_.rowCount()) return false;
  install(with_strategy(*scenario_, suggestions_.suggestion(row).strategy));
  return true;
}

void ExploreTab::install(Scenario s) {
  const core::MemoryReport r = core::memory_model(s.model, s.hardware, s.strategy);
  memory_.set_report(r);
  // Fixes of the previous scenario no longer apply: clear them, compute the new ones in the background.
  suggestions_.set_suggestions({});
  apply_->setEnabled(false);
  fixes_stack_->setCurrentWidget(finding_fixes_);
  fixes_job_->start(s);
  card_.set_sections(model_sections(s.model, s.strategy));
  card_view_->expandAll();
  scenario_ = std::move(s);
  show_error({});

  const bool fits = r.fits && r.problems.empty();
  verdict_->setText(fmt::qs(verdict_text(r)) + (r.problems.empty() ? QString() : QStringLiteral("  ·  DeepSpeed would refuse it")));
  verdict_->setStyleSheet(fits ? QStringLiteral("background: #e8f5e9; color: #1b5e20; border-left: 6px solid #2e7d32;")
                               : QStringLiteral("background: #fdecea; color: #b71c1c; border-left: 6px solid #c62828;"));
  const auto& st = scenario_->strategy;
  subtitle_->setText(QStringLiteral("%1 (%2 B params) on %3: %4 node × %5 GPU · ZeRO-%6 · optimizer → %7 · params → %8 · %9 · "
                                    "micro batch %10 × GA %11 · seq %12%13")
                         .arg(fmt::qs(scenario_->model.name))
                         .arg(r.sizes.params / 1e9, 0, 'f', 2)
                         .arg(fmt::qs(scenario_->hardware.name))
                         .arg(st.run.nodes)
                         .arg(st.run.gpus_per_node)
                         .arg(st.zero.stage)
                         .arg(fmt::qs(core::to_string(st.zero.offload_optimizer.device)),
                              fmt::qs(core::to_string(st.zero.offload_param.device)), fmt::qs(core::to_string(st.model_dtype())))
                         .arg(st.micro_batch_per_gpu)
                         .arg(st.gradient_accumulation_steps)
                         .arg(st.run.seq_len)
                         .arg(st.activation_checkpointing.enabled ? QStringLiteral(" · activation checkpointing") : QString()));

  std::vector<charts::TierBar> bars;
  for (core::Tier t : core::kTiers) {
    const auto& tr = r.tier(t);
    if (t == core::Tier::nvme && tr.required_bytes == 0) continue;  // unused: no bar
    charts::TierBar b;
    const double cap = tr.capacity_bytes / core::kGiB;
    static const char* names[3] = {"GPU memory", "CPU memory", "NVMe"};
    b.title = QStringLiteral("%1 %2 — %3 of %4%5")
                  .arg(QString::fromUtf8(names[static_cast<int>(t)]), fmt::qs(tr.scope), fmt::bytes(tr.required_bytes),
                       fmt::bytes(tr.capacity_bytes),
                       tr.capacity_bytes > 0 ? QStringLiteral(" (") + fmt::percent(static_cast<double>(tr.required_bytes) / tr.capacity_bytes) + QStringLiteral(")")
                                             : QString());
    b.capacity = cap;
    b.fits = tr.fits();
    for (const auto& it : tr.items) b.segments.push_back({fmt::qs(it.label), it.bytes / core::kGiB, fmt::key_color(it.key)});
    bars.push_back(std::move(b));
  }
  bars_->set_bars(bars);
  memory_view_->expandToDepth(0);

  QStringList notes;
  for (const auto& p : r.problems) notes << QStringLiteral("problem: ") + fmt::qs(p);
  for (const auto& n : r.notes) notes << fmt::qs(n);
  for (const auto& n : st.notes) notes << fmt::qs(n);
  notes_->setPlainText(notes.join(QStringLiteral("\n")));
  sync_form();
  if (changed_) changed_();
}

void ExploreTab::sync_form() {
  if (!scenario_) return;
  syncing_ = true;
  const Scenario& s = *scenario_;
  select_ref(model_combo_, s.refs.model);
  select_ref(hardware_combo_, s.refs.hardware);
  select_ref(config_combo_, s.refs.ds_config);
  if (!editing_hardware_) {
    hardware_.set_hardware(s.hardware);
    hardware_view_->expandAll();
  }
  for (auto& [k, c] : combos_) c->setCurrentIndex(c->findData(fmt::qs(knob_value(s, k))));
  spins_[Knob::gpus_per_node]->setMaximum(static_cast<int>(s.hardware.gpus_per_node));
  for (auto& [k, sp] : spins_) sp->setValue(static_cast<int>(std::stoll(knob_value(s, k))));
  for (auto& [k, e] : edits_) {
    e->setText(compact(std::stoll(knob_value(s, k))));
    e->setModified(false);
  }
  const bool z3 = s.strategy.zero.stage == 3;
  edits_[Knob::prefetch_bucket_size]->setEnabled(z3);
  edits_[Knob::max_live_parameters]->setEnabled(z3);
  combos_[Knob::offload_param]->setEnabled(z3);
  checkpointing_->setChecked(s.strategy.activation_checkpointing.enabled);
  sync_adapter();
  syncing_ = false;
}

}  // namespace zs::gui
