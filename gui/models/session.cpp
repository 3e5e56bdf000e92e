#include "gui/models/session.h"

#include "core/json_reader.h"
#include "gui/models/hardware_model.h"

namespace zs::gui {
namespace {

using OJ = nlohmann::ordered_json;
constexpr int kSessionVersion = 1;
const std::vector<std::string> kTabs = {"explore", "simulate", "compare", "sweep"};

std::vector<std::string> knob_keys() {
  std::vector<std::string> k;
  for (const auto& i : knobs()) k.push_back(i.key);
  return k;
}

OJ axis_json(const SweepAxis& a) { return {{"knob", knob_info(a.knob).key}, {"values", a.values}}; }

SweepAxis read_axis(core::ObjectReader r) {
  SweepAxis a;
  a.knob = *parse_knob(r.choice({"knob"}, "micro_batch", knob_keys()));
  if (const core::Json* v = r.raw({"values"})) {
    if (!v->is_array()) {
      r.fail("values", "must be an array of strings");
      return a;
    }
    for (const auto& x : *v) {
      if (!x.is_string()) {
        r.fail("values", "must be an array of strings");
        return a;
      }
      a.values.push_back(x.get<std::string>());
    }
  }
  return a;
}

}  // namespace

Session capture(const Scenario& s) {
  Session out;
  out.refs = s.refs;
  out.ds_config_text = ds_config_text(s.strategy);
  out.run = {s.strategy.run.nodes, s.strategy.run.gpus_per_node, s.strategy.run.seq_len, s.strategy.run.checkpoint_activations};
  out.schedule = s.schedule;
  // Hardware edits: fields that differ from the profile file (everything, if the file cannot be read now).
  HardwareModel current, original;
  current.set_hardware(s.hardware);
  auto file = core::load_hardware(s.refs.hardware);
  if (file) original.set_hardware(*file);
  for (const auto& key : current.field_keys()) {
    const QVariant a = current.field(key), b = original.field(key);
    if (!file || a != b) out.hardware_edits[key] = a.isValid() ? a.toString().toStdString() : "";
  }
  return out;
}

core::Result<Scenario> restore(const Session& s) {
  auto m = core::load_model(s.refs.model);
  if (!m) return m.error();
  auto h = core::load_hardware(s.refs.hardware);
  if (!h) return h.error();
  HardwareModel hm;
  hm.set_hardware(*h);
  for (const auto& [key, value] : s.hardware_edits)
    if (!hm.set_field(key, QString::fromStdString(value)))
      return core::bad_input("session: hardware_edits." + key + ": \"" + value + "\" is not a valid value for that field");
  Scenario sc;
  sc.refs = s.refs;
  sc.model = std::move(*m);
  sc.hardware = hm.hardware();
  sc.schedule = s.schedule;
  core::RunSettings run;
  run.nodes = s.run.nodes;
  run.gpus_per_node = s.run.gpus_per_node;
  run.seq_len = s.run.seq_len > 0 ? s.run.seq_len : core::default_seq_len(sc.model);
  run.hidden = sc.model.hidden;
  run.checkpoint_activations = s.run.checkpoint_activations;
  if (run.nodes < 1 || run.gpus_per_node < 1 || run.gpus_per_node > sc.hardware.gpus_per_node)
    return core::bad_input("session: run: GPUs per node " + std::to_string(run.gpus_per_node) + " and nodes " +
                           std::to_string(run.nodes) + " must be ≥ 1 and fit " + sc.hardware.name);
  auto st = s.ds_config_text.empty() ? core::load_strategy(s.refs.ds_config, run)
                                     : core::parse_ds_config_text(s.ds_config_text, "session ds_config (" + s.refs.ds_config + ")", run);
  if (!st) return st.error();
  sc.strategy = std::move(*st);
  return sc;
}

std::string session_to_json(const Session& s) {
  OJ j;
  j["format"] = "zerosim-gui-session";
  j["version"] = kSessionVersion;
  j["model"] = s.refs.model;
  j["hardware"] = s.refs.hardware;
  j["hardware_edits"] = OJ::object();
  for (const auto& [k, v] : s.hardware_edits) j["hardware_edits"][k] = v;
  j["ds_config"] = s.refs.ds_config;
  j["ds_config_text"] = s.ds_config_text;
  j["run"] = {{"nodes", s.run.nodes},
              {"gpus_per_node", s.run.gpus_per_node},
              {"seq_len", s.run.seq_len},
              {"checkpoint_activations", s.run.checkpoint_activations}};
  j["schedule"] = core::to_string(s.schedule);
  j["tab"] = s.tab;
  j["sweep"] = {{"x", axis_json(s.sweep.x)}, {"y", axis_json(s.sweep.y)}};
  j["trace"] = s.trace_path;
  return j.dump(2) + "\n";
}

core::Result<Session> session_from_json(const std::string& text, const std::string& source) {
  auto j = core::parse_json_text(text, source);
  if (!j) return j.error();
  core::ObjectReader r(*j, source, "");
  Session s;
  if (r.req_string("format") != "zerosim-gui-session" && !r.failed())
    r.fail("format", "is not \"zerosim-gui-session\" (not a zerosim-gui session file)");
  r.integer({"version"}, kSessionVersion, kSessionVersion, kSessionVersion);
  s.refs.model = r.req_string("model");
  s.refs.hardware = r.req_string("hardware");
  s.refs.ds_config = r.req_string("ds_config");
  s.ds_config_text = r.string({"ds_config_text"}, "");
  if (const core::Json* e = r.raw({"hardware_edits"})) {
    if (!e->is_object())
      r.fail("hardware_edits", "must be an object of field → value text");
    else
      for (auto it = e->begin(); it != e->end(); ++it) {
        if (!it->is_string()) {
          r.fail("hardware_edits", it.key() + " must be a string");
          break;
        }
        s.hardware_edits[it.key()] = it->get<std::string>();
      }
  }
  core::ObjectReader run = r.object({"run"});
  s.run.nodes = run.integer({"nodes"}, 0, 0, 1 << 20);
  s.run.gpus_per_node = run.integer({"gpus_per_node"}, 0, 0, 1 << 16);
  s.run.seq_len = run.integer({"seq_len"}, 0, 0, int64_t{1} << 24);
  s.run.checkpoint_activations = run.boolean({"checkpoint_activations"}, false);
  s.schedule = *core::parse_schedule(r.choice({"schedule"}, "deepspeed", {"deepspeed", "dpu", "overlap"}));
  s.tab = r.choice({"tab"}, "explore", kTabs);
  core::ObjectReader sw = r.object({"sweep"});
  if (sw.present()) {
    s.sweep.x = read_axis(sw.object({"x"}));
    s.sweep.y = read_axis(sw.object({"y"}));
  }
  s.trace_path = r.string({"trace"}, "");
  ZS_TRY(r.finish());
  return s;
}

core::Status write_session(const Session& s, const std::string& path) {
  return core::write_file_atomic(path, session_to_json(s));
}

core::Result<Session> read_session(const std::string& path) {
  auto j = core::read_json_file(path);
  if (!j) return j.error();
  return session_from_json(j->dump(), path);
}

}  // namespace zs::gui
