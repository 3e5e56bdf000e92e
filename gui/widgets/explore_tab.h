// ExploreTab: choose a model (shipped or an imported HF config.json), hardware (shipped, edited field by field)
// and a strategy (the knobs of scenario.h, or a ds_config.json loaded/saved); the fit verdict, per-tier stacked
// bars against capacity and the ranked fixes follow every change. Applying a fix replaces the strategy with it.
//   ExploreTab t;  t.open({.model = "gpt2-1.5b", .hardware = "dgx2", .ds_config = "zero2"});
#pragma once

#include <QString>
#include <QWidget>

#include <functional>
#include <map>
#include <optional>

#include "gui/models/fit_models.h"
#include "gui/models/hardware_model.h"
#include "gui/models/jobs.h"
#include "gui/models/key_value_model.h"
#include "gui/models/scenario.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QListView;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;
class QStackedWidget;
class QTreeView;

namespace zs::gui {
namespace charts {
class TierBarsChart;
}

class ExploreTab : public QWidget {
 public:
  explicit ExploreTab(QWidget* parent = nullptr);

  // Loads the three inputs; false with the error shown (and in last_error()) when core rejects them.
  bool open(const InputRefs& refs, const RunOverrides& run = {});
  // Installs a scenario (a restored session, a sweep cell) and re-evaluates.
  void set_scenario(const Scenario& s);
  bool has_scenario() const { return scenario_.has_value(); }
  const Scenario& scenario() const { return *scenario_; }
  const core::MemoryReport& report() const { return memory_.report(); }
  QString last_error() const { return error_; }
  // The fixes are computed in the background after each change; true until they are shown.
  bool fixes_pending() const;
  Job* fixes_job() const { return fixes_job_; }

  // Actions (menus and shortcuts call these; paths come from dialogs or tests).
  bool import_hf_config(const QString& path);
  bool load_hardware(const QString& path);  // a profile file (zerosim probe writes them)
  bool save_hardware(const QString& path);  // the profile with its edits
  bool load_ds_config(const QString& path);
  bool save_ds_config(const QString& path);
  bool apply_suggestion(int row);
  bool set_knob(Knob k, const std::string& value);

  // What trains (the Fine-tune choice, explore_tab_adapter.cpp): the whole model, a LoRA adapter, or QLoRA (LoRA on
  // a 4-bit NF4 base stored in the model dtype, as ZeRO-3 needs). The form builds the model's core::AdapterSpec.
  enum class Adapter { full, lora, qlora };
  struct AdapterForm {
    Adapter kind = Adapter::full;
    int r = 16;
    int alpha = 32;
    bool attention_only = false;  // q,k,v,o (GPT-2: attn.c_attn, attn.c_proj); else "all-linear"
    bool double_quant = true;     // QLoRA's bnb_4bit_use_double_quant
  };
  bool set_adapter(const AdapterForm& f);
  AdapterForm adapter_form() const { return adapter_form_; }
  // A PEFT adapter_config.json: its LoRA spec replaces the form's rank, alpha and targets until they are edited.
  bool load_peft(const QString& path);
  // PEFT's print_trainable_parameters line for the current model ("trainable params: … || all params: … || …").
  QString trainable_text() const;

  // Called after every change of the scenario (other tabs mark their results stale).
  void on_changed(std::function<void()> f) { changed_ = std::move(f); }
  // The window answers the buttons that need a file dialog (Import HF…, Load…, Save…).
  struct Requests {
    std::function<void()> import, load, save, load_hardware, save_hardware;
  };
  void set_requests(Requests r) { requests_ = std::move(r); }

  MemoryTreeModel* memory_model() { return &memory_; }
  SuggestionModel* suggestion_model() { return &suggestions_; }
  HardwareModel* hardware_model() { return &hardware_; }
  KeyValueModel* model_card() { return &card_; }

 private:
  QWidget* build_inputs();
  QWidget* build_results();
  QWidget* build_adapter(QWidget* parent);
  core::ModelSpec with_adapter(core::ModelSpec m);  // the form's adapter on `m` (a 4-bit file turns Full into QLoRA)
  bool apply_adapter();
  void sync_adapter();
  void install(Scenario s);  // evaluate and refresh every view
  void sync_form();
  void show_error(const QString& e);
  void hardware_edited();

  std::optional<Scenario> scenario_;
  MemoryTreeModel memory_;
  SuggestionModel suggestions_;
  FixesJob* fixes_job_ = nullptr;
  HardwareModel hardware_;
  KeyValueModel card_;
  std::function<void()> changed_;
  QString error_;
  bool syncing_ = false;
  bool editing_hardware_ = false;
  Requests requests_;

  QComboBox* model_combo_ = nullptr;
  QComboBox* hardware_combo_ = nullptr;
  QComboBox* config_combo_ = nullptr;
  QTreeView* hardware_view_ = nullptr;
  QTreeView* card_view_ = nullptr;
  std::map<Knob, QComboBox*> combos_;
  std::map<Knob, QSpinBox*> spins_;
  std::map<Knob, QLineEdit*> edits_;
  QCheckBox* checkpointing_ = nullptr;
  AdapterForm adapter_form_;
  std::optional<core::LoraSpec> peft_;  // loaded by load_peft; dropped when rank, alpha or targets are edited
  QComboBox* adapter_combo_ = nullptr;
  QSpinBox* rank_spin_ = nullptr;
  QSpinBox* alpha_spin_ = nullptr;
  QComboBox* targets_combo_ = nullptr;
  QCheckBox* double_quant_ = nullptr;
  QLabel* trainable_ = nullptr;
  QLabel* verdict_ = nullptr;
  QLabel* subtitle_ = nullptr;
  QLabel* error_label_ = nullptr;
  charts::TierBarsChart* bars_ = nullptr;
  QTreeView* memory_view_ = nullptr;
  QListView* suggestion_view_ = nullptr;
  QPushButton* apply_ = nullptr;
  QStackedWidget* fixes_stack_ = nullptr;
  QLabel* no_fixes_ = nullptr;
  QLabel* finding_fixes_ = nullptr;
  QPlainTextEdit* notes_ = nullptr;
};

}  // namespace zs::gui
