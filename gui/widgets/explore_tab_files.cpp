// The Explore tab's file actions (declared in explore_tab.h): an HF model config, a hardware profile and a
// ds_config loaded into the scenario (each through core's readers) or saved from it.
#include "core/hardware.h"
#include "core/model.h"
#include "core/strategy.h"
#include "gui/models/format.h"
#include "gui/widgets/explore_tab.h"

#include <QComboBox>

namespace zs::gui {

bool ExploreTab::import_hf_config(const QString& path) {
  if (!scenario_) return false;
  auto m = core::import_hf_config(path.toStdString());
  if (!m) return show_error(fmt::qs(m.error().message)), false;
  auto s = with_model(*scenario_, with_adapter(*m));
  if (!s) return show_error(fmt::qs(s.error().message)), false;
  s->refs.model = path.toStdString();
  if (model_combo_->findData(path) < 0) model_combo_->addItem(QStringLiteral("HF: ") + fmt::qs(m->name), path);
  install(std::move(*s));
  return true;
}

bool ExploreTab::load_hardware(const QString& path) {
  if (!scenario_) return false;
  auto h = core::load_hardware(path.toStdString());
  if (!h) return show_error(fmt::qs(h.error().message)), false;
  auto s = with_hardware(*scenario_, *h);
  if (!s) return show_error(fmt::qs(s.error().message)), false;
  s->refs.hardware = path.toStdString();
  install(std::move(*s));
  return true;
}

bool ExploreTab::save_hardware(const QString& path) {
  if (!scenario_) return false;
  core::Status st = gui::save_hardware(scenario_->hardware, path.toStdString());
  if (!st.ok()) return show_error(fmt::qs(st.message())), false;
  return true;
}

bool ExploreTab::load_ds_config(const QString& path) {
  if (!scenario_) return false;
  auto st = core::load_ds_config(path.toStdString(), scenario_->strategy.run);
  if (!st) return show_error(fmt::qs(st.error().message)), false;
  Scenario s = with_strategy(*scenario_, *st);
  s.refs.ds_config = path.toStdString();
  install(std::move(s));
  return true;
}

bool ExploreTab::save_ds_config(const QString& path) {
  if (!scenario_) return false;
  core::Status st = gui::save_ds_config(scenario_->strategy, path.toStdString());
  if (!st.ok()) return show_error(fmt::qs(st.message())), false;
  return true;
}

}  // namespace zs::gui
