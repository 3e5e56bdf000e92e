// The Explore tab's Fine-tune choice (declared in explore_tab.h): full fine-tuning, LoRA, or QLoRA (4-bit NF4), with
// LoRA's rank, alpha and targets, QLoRA's double quantisation, a PEFT adapter_config.json, and the trainable count
// as PEFT's print_trainable_parameters prints it.
#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QGridLayout>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>

#include <algorithm>
#include <set>

#include "core/adapter.h"
#include "core/model.h"
#include "gui/models/format.h"
#include "gui/widgets/explore_tab.h"

namespace zs::gui {

namespace {

// The attention projections of `base` as PEFT target names: each module's last name ("q_proj"), or, where a last
// name alone would also match an MLP module (GPT-2's c_proj), the last two of each ("attn.c_attn", "attn.c_proj").
std::vector<std::string> attention_targets(const core::ModelSpec& base) {
  core::ModelSpec m = base;
  m.adapter = {};
  std::vector<std::string> attn;
  std::set<std::string> other_leaves;
  auto tail = [](const std::string& module, int parts) {
    size_t at = module.size();
    for (int i = 0; i < parts && at != std::string::npos; ++i) at = at == 0 ? std::string::npos : module.rfind('.', at - 1);
    return at == std::string::npos ? module : module.substr(at + 1);
  };
  std::vector<std::string> modules;
  for (const auto& t : core::tensor_table(m)) {
    if (!t.is_matmul || t.layer < 0) continue;
    if (t.role == core::ModuleRole::qkv || t.role == core::ModuleRole::attn_out)
      modules.push_back(t.module);
    else
      other_leaves.insert(tail(t.module, 1));
  }
  bool collide = false;
  for (const auto& module : modules) collide = collide || other_leaves.count(tail(module, 1)) > 0;
  for (const auto& module : modules) {
    const std::string name = tail(module, collide ? 2 : 1);
    if (std::find(attn.begin(), attn.end(), name) == attn.end()) attn.push_back(name);
  }
  return attn;
}

// 41943040 → "41,943,040", as Python's f"{n:,}" in print_trainable_parameters.
QString grouped(int64_t n) {
  QString digits = QString::number(n < 0 ? -n : n);
  for (qsizetype at = digits.size() - 3; at > 0; at -= 3) digits.insert(at, QLatin1Char(','));
  return n < 0 ? QStringLiteral("-") + digits : digits;
}

std::string dtype_name(core::Precision p) {
  return p == core::Precision::bf16 ? "bfloat16" : p == core::Precision::fp16 ? "float16" : "float32";
}

}  // namespace

QWidget* ExploreTab::build_adapter(QWidget* parent) {
  auto* w = new QWidget(parent);
  auto* g = new QGridLayout(w);
  g->setContentsMargins(0, 0, 0, 0);
  adapter_combo_ = new QComboBox(w);
  adapter_combo_->setObjectName(QStringLiteral("adapter"));
  adapter_combo_->addItem(QStringLiteral("Full fine-tune"), static_cast<int>(Adapter::full));
  adapter_combo_->addItem(QStringLiteral("LoRA"), static_cast<int>(Adapter::lora));
  adapter_combo_->addItem(QStringLiteral("QLoRA (4-bit NF4)"), static_cast<int>(Adapter::qlora));
  adapter_combo_->setToolTip(QStringLiteral("What trains: every parameter, a LoRA adapter on the frozen model (PEFT), "
                                            "or LoRA on a bitsandbytes 4-bit NF4 base (QLoRA)"));
  auto* peft = new QPushButton(QStringLiteral("PEFT…"), w);
  peft->setObjectName(QStringLiteral("load_peft"));
  peft->setToolTip(QStringLiteral("Load a PEFT adapter_config.json (its r, lora_alpha, target_modules, …)"));
  rank_spin_ = new QSpinBox(w);
  rank_spin_->setObjectName(QStringLiteral("lora_r"));
  rank_spin_->setRange(1, 4096);
  rank_spin_->setPrefix(QStringLiteral("r "));
  alpha_spin_ = new QSpinBox(w);
  alpha_spin_->setObjectName(QStringLiteral("lora_alpha"));
  alpha_spin_->setRange(1, 65536);
  alpha_spin_->setPrefix(QStringLiteral("α "));
  targets_combo_ = new QComboBox(w);
  targets_combo_->setObjectName(QStringLiteral("lora_targets"));
  targets_combo_->addItem(QStringLiteral("all-linear"), false);
  targets_combo_->addItem(QStringLiteral("attention only"), true);
  double_quant_ = new QCheckBox(QStringLiteral("double quant"), w);
  double_quant_->setObjectName(QStringLiteral("double_quant"));
  double_quant_->setToolTip(QStringLiteral("bnb_4bit_use_double_quant: 8-bit absmax constants"));
  trainable_ = new QLabel(w);
  trainable_->setObjectName(QStringLiteral("trainable"));
  trainable_->setWordWrap(true);
  g->addWidget(adapter_combo_, 0, 0, 1, 3);
  g->addWidget(peft, 0, 3);
  g->addWidget(rank_spin_, 1, 0);
  g->addWidget(alpha_spin_, 1, 1);
  g->addWidget(targets_combo_, 1, 2);
  g->addWidget(double_quant_, 1, 3);
  g->addWidget(trainable_, 2, 0, 1, 4);

  auto edited = [this](bool drops_peft) {
    if (syncing_ || !scenario_) return;
    if (drops_peft) peft_.reset();
    AdapterForm f;
    f.kind = static_cast<Adapter>(adapter_combo_->currentData().toInt());
    f.r = rank_spin_->value();
    f.alpha = alpha_spin_->value();
    f.attention_only = targets_combo_->currentData().toBool();
    f.double_quant = double_quant_->isChecked();
    set_adapter(f);
  };
  connect(adapter_combo_, &QComboBox::activated, this, [edited] { edited(false); });
  connect(rank_spin_, &QSpinBox::valueChanged, this, [edited] { edited(true); });
  connect(alpha_spin_, &QSpinBox::valueChanged, this, [edited] { edited(true); });
  connect(targets_combo_, &QComboBox::activated, this, [edited] { edited(true); });
  connect(double_quant_, &QCheckBox::toggled, this, [edited] { edited(false); });
  connect(peft, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, QStringLiteral("PEFT adapter_config.json"), QString(),
                                                      QStringLiteral("JSON (*.json)"));
    if (!path.isEmpty()) load_peft(path);
  });
  return w;
}

core::ModelSpec ExploreTab::with_adapter(core::ModelSpec m) {
  // A config.json quantised by bitsandbytes cannot be fully fine-tuned: the choice follows the file.
  if (m.adapter.quant.enabled() && adapter_form_.kind == Adapter::full) adapter_form_.kind = Adapter::qlora;
  const AdapterForm& f = adapter_form_;
  m.adapter = {};
  if (f.kind == Adapter::full) return m;
  m.adapter.kind = core::AdapterKind::lora;
  if (peft_) {
    m.adapter.lora = *peft_;
  } else {
    m.adapter.lora.r = f.r;
    m.adapter.lora.alpha = f.alpha;
    m.adapter.lora.all_linear = !f.attention_only;
    if (f.attention_only) m.adapter.lora.target_modules = attention_targets(m);
  }
  if (f.kind == Adapter::qlora) {
    core::QuantSpec& q = m.adapter.quant;
    q.kind = core::QuantKind::nf4;
    q.double_quant = f.double_quant;
    // ZeRO-3 partitions the packed weight as a tensor of the model dtype: bnb_4bit_quant_storage must match it.
    const std::string dtype = scenario_ ? dtype_name(scenario_->strategy.model_dtype()) : "bfloat16";
    q.storage = dtype;
    q.compute_dtype = dtype;
  }
  return m;
}

bool ExploreTab::apply_adapter() {
  if (!scenario_) return false;
  core::ModelSpec base = scenario_->model;
  base.adapter = {};  // the form decides, not the adapter it replaces
  auto s = with_model(*scenario_, with_adapter(std::move(base)));
  if (!s) return show_error(fmt::qs(s.error().message)), sync_form(), false;
  install(std::move(*s));
  return true;
}

bool ExploreTab::set_adapter(const AdapterForm& f) {
  adapter_form_ = f;
  return apply_adapter();
}

bool ExploreTab::load_peft(const QString& path) {
  if (!scenario_) return false;
  auto l = core::load_peft_config(path.toStdString());
  if (!l) return show_error(fmt::qs(l.error().message)), false;
  peft_ = std::move(*l);
  if (adapter_form_.kind == Adapter::full) adapter_form_.kind = Adapter::lora;
  adapter_form_.r = static_cast<int>(peft_->r);
  adapter_form_.alpha = static_cast<int>(peft_->alpha);
  return apply_adapter();
}

QString ExploreTab::trainable_text() const {
  if (!scenario_) return {};
  const int64_t all = core::parameter_count(scenario_->model);
  const int64_t trainable = core::trainable_parameter_count(scenario_->model);
  return QStringLiteral("trainable params: %1 || all params: %2 || trainable%: %3")
      .arg(grouped(trainable), grouped(all))
      .arg(all > 0 ? 100.0 * static_cast<double>(trainable) / static_cast<double>(all) : 0.0, 0, 'f', 4);
}

// The form shows the scenario's adapter (a restored session or a sweep cell brings its own).
void ExploreTab::sync_adapter() {
  const core::AdapterSpec& a = scenario_->model.adapter;
  AdapterForm& f = adapter_form_;
  f.kind = !a.lora_enabled() ? Adapter::full : a.quant.enabled() ? Adapter::qlora : Adapter::lora;
  if (a.lora_enabled()) {
    f.r = static_cast<int>(a.lora.r);
    f.alpha = static_cast<int>(a.lora.alpha);
    f.attention_only = !a.lora.all_linear;
  }
  if (a.quant.enabled()) f.double_quant = a.quant.double_quant;
  adapter_combo_->setCurrentIndex(adapter_combo_->findData(static_cast<int>(f.kind)));
  rank_spin_->setValue(f.r);
  alpha_spin_->setValue(f.alpha);
  targets_combo_->setCurrentIndex(f.attention_only ? 1 : 0);
  targets_combo_->setToolTip(peft_ ? QStringLiteral("from ") + fmt::qs(peft_->source) : QString());
  double_quant_->setChecked(f.double_quant);
  const bool lora = f.kind != Adapter::full;
  rank_spin_->setEnabled(lora);
  alpha_spin_->setEnabled(lora);
  targets_combo_->setEnabled(lora);
  double_quant_->setEnabled(f.kind == Adapter::qlora);
  trainable_->setText(trainable_text());
}

}  // namespace zs::gui
