#include "gui/models/scenario.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/json_reader.h"

namespace zs::gui {
namespace {

using OJ = nlohmann::ordered_json;

const std::vector<std::string> kDevices = {"none", "cpu", "nvme"};
const std::vector<std::string> kOnOff = {"off", "on"};

core::Result<int64_t> parse_count(const std::string& v, const KnobInfo& k, int64_t lo, int64_t hi) {
  // Integers, also written as 5e7 or 5e+07 (bucket sizes are usually given that way).
  char* end = nullptr;
  const double d = std::strtod(v.c_str(), &end);
  if (v.empty() || end == v.c_str() || *end != '\0' || !std::isfinite(d) || d != std::floor(d) || d < double(lo) ||
      d > double(hi))
    return core::bad_input(std::string(k.label) + ": \"" + v + "\" is not an integer in [" + std::to_string(lo) + ", " +
                           std::to_string(hi) + "]");
  return static_cast<int64_t>(d);
}

core::Status check_choice(const std::string& v, const KnobInfo& k) {
  for (const auto& c : k.choices)
    if (c == v) return {};
  std::string allowed;
  for (const auto& c : k.choices) allowed += (allowed.empty() ? "" : ", ") + c;
  return core::bad_input(std::string(k.label) + ": \"" + v + "\" is not one of " + allowed);
}

// Stage-3-only keys as zero_optimization_to_json writes them; DeepSpeed ignores them under stage < 3 (core notes
// each), so a scenario drops them with the stage.
void erase_stage3_keys(OJ& z) {
  for (auto it = z.begin(); it != z.end();) {
    if (it.key().rfind("stage3_", 0) == 0)
      it = z.erase(it);
    else
      ++it;
  }
}

core::Result<core::Strategy> reparse(const OJ& j, const core::Strategy& old, const core::RunSettings& run) {
  std::string source = old.source;
  const std::string tag = " (edited)";
  if (source.size() < tag.size() || source.compare(source.size() - tag.size(), tag.size(), tag) != 0) source += tag;
  return core::parse_ds_config_text(j.dump(2), source, run);
}

core::Result<core::RunSettings> run_settings(const core::ModelSpec& m, const core::Hardware& hw, const RunOverrides& o) {
  core::RunSettings run;
  if (o.nodes < 0 || o.gpus_per_node < 0 || o.seq_len < 0)
    return core::bad_input("nodes, GPUs per node and sequence length must be positive");
  run.nodes = o.nodes > 0 ? o.nodes : hw.nodes;
  run.gpus_per_node = o.gpus_per_node > 0 ? o.gpus_per_node : hw.gpus_per_node;
  if (run.gpus_per_node > hw.gpus_per_node)
    return core::bad_input("GPUs per node " + std::to_string(run.gpus_per_node) + ": " + hw.name + " has " +
                           std::to_string(hw.gpus_per_node));
  run.seq_len = o.seq_len > 0 ? o.seq_len : core::default_seq_len(m);
  if (m.position == core::Position::learned && run.seq_len > m.max_seq_len)
    return core::bad_input("sequence length " + std::to_string(run.seq_len) + ": " + m.name +
                           " has learned positions for at most " + std::to_string(m.max_seq_len));
  run.hidden = m.hidden;
  run.checkpoint_activations = o.checkpoint_activations;
  return run;
}

}  // namespace

core::Result<Scenario> make_scenario(InputRefs refs, core::ModelSpec model, core::Hardware hw, const RunOverrides& o) {
  auto run = run_settings(model, hw, o);
  if (!run) return run.error();
  auto st = core::load_strategy(refs.ds_config, *run);
  if (!st) return st.error();
  Scenario s;
  s.refs = std::move(refs);
  s.model = std::move(model);
  s.hardware = std::move(hw);
  s.strategy = std::move(*st);
  return s;
}

core::Result<Scenario> load_scenario(const InputRefs& refs, const RunOverrides& o) {
  auto m = core::load_model(refs.model);
  if (!m) return m.error();
  auto h = core::load_hardware(refs.hardware);
  if (!h) return h.error();
  return make_scenario(refs, std::move(*m), std::move(*h), o);
}

const std::vector<KnobInfo>& knobs() {
  static const std::vector<KnobInfo> k = {
      {Knob::stage, "stage", "ZeRO stage", {"0", "1", "2", "3"}},
      {Knob::offload_optimizer, "offload_optimizer", "optimizer offload", kDevices},
      {Knob::offload_param, "offload_param", "parameter offload", kDevices},
      {Knob::precision, "precision", "precision", {"fp32", "fp16", "bf16"}},
      {Knob::micro_batch, "micro_batch", "micro batch per GPU", {}},
      {Knob::grad_accum, "grad_accum", "gradient accumulation", {}},
      {Knob::nodes, "nodes", "nodes", {}},
      {Knob::gpus_per_node, "gpus_per_node", "GPUs per node", {}},
      {Knob::seq_len, "seq_len", "sequence length", {}},
      {Knob::checkpointing, "checkpointing", "activation checkpointing", kOnOff},
      {Knob::schedule, "schedule", "schedule", {"deepspeed", "dpu", "overlap"}},
      {Knob::reduce_bucket_size, "reduce_bucket_size", "reduce bucket (elements)", {}},
      {Knob::allgather_bucket_size, "allgather_bucket_size", "allgather bucket (elements)", {}},
      {Knob::prefetch_bucket_size, "prefetch_bucket_size", "ZeRO-3 prefetch bucket (elements)", {}},
      {Knob::sub_group_size, "sub_group_size", "optimizer sub-group (elements)", {}},
      {Knob::max_live_parameters, "max_live_parameters", "ZeRO-3 max live parameters", {}},
  };
  return k;
}

const KnobInfo& knob_info(Knob k) {
  for (const auto& i : knobs())
    if (i.knob == k) return i;
  return knobs().front();
}

std::optional<Knob> parse_knob(const std::string& key) {
  for (const auto& i : knobs())
    if (key == i.key) return i.knob;
  return std::nullopt;
}

std::string knob_value(const Scenario& s, Knob k) {
  const auto& st = s.strategy;
  const auto& z = st.zero;
  switch (k) {
    case Knob::stage: return std::to_string(z.stage);
    case Knob::offload_optimizer: return core::to_string(z.offload_optimizer.device);
    case Knob::offload_param: return core::to_string(z.offload_param.device);
    case Knob::precision: return core::to_string(st.model_dtype());
    case Knob::micro_batch: return std::to_string(st.micro_batch_per_gpu);
    case Knob::grad_accum: return std::to_string(st.gradient_accumulation_steps);
    case Knob::nodes: return std::to_string(st.run.nodes);
    case Knob::gpus_per_node: return std::to_string(st.run.gpus_per_node);
    case Knob::seq_len: return std::to_string(st.run.seq_len);
    case Knob::checkpointing: return st.activation_checkpointing.enabled ? "on" : "off";
    case Knob::schedule: return core::to_string(s.schedule);
    case Knob::reduce_bucket_size: return std::to_string(z.reduce_bucket_size);
    case Knob::allgather_bucket_size: return std::to_string(z.allgather_bucket_size);
    case Knob::prefetch_bucket_size: return std::to_string(z.prefetch_bucket_size);
    case Knob::sub_group_size: return std::to_string(z.sub_group_size);
    case Knob::max_live_parameters: return std::to_string(z.max_live_parameters);
  }
  return "";
}

std::string ds_config_text(const core::Strategy& s) {
  OJ j = OJ::parse(core::resolved_config_json(s));
  if (!s.activation_checkpointing.enabled) j.erase("activation_checkpointing");
  return j.dump(2) + "\n";
}

core::Status save_ds_config(const core::Strategy& s, const std::string& path) {
  return core::write_file_atomic(path, ds_config_text(s));
}

core::Status save_hardware(const core::Hardware& h, const std::string& path) {
  return core::write_file_atomic(path, core::hardware_to_json(h));
}

core::Result<Scenario> with_knob(const Scenario& s, Knob k, const std::string& v) {
  const KnobInfo& info = knob_info(k);
  if (!info.choices.empty()) ZS_TRY(check_choice(v, info));
  if (k == Knob::schedule) {
    Scenario out = s;
    out.schedule = *core::parse_schedule(v);
    return out;
  }
  constexpr int64_t kMaxCount = int64_t{1} << 50;
  core::RunSettings run = s.strategy.run;
  run.checkpoint_activations = s.strategy.activation_checkpointing.enabled;
  OJ j = OJ::parse(ds_config_text(s.strategy));
  j.erase("train_batch_size");  // inferred again from micro × GA × world, which the knob may change
  OJ& z = j["zero_optimization"];
  auto set_count = [&](OJ& dst, const char* key, int64_t lo, int64_t hi) -> core::Status {
    auto n = parse_count(v, info, lo, hi);
    if (!n) return n.error();
    dst[key] = *n;
    return {};
  };
  auto set_device = [&](const char* block) {
    OJ& b = z[block];
    b["device"] = v;
    if (v == "nvme" && (!b.contains("nvme_path") || b["nvme_path"].is_null())) b["nvme_path"] = "/local_nvme";
  };
  switch (k) {
    case Knob::stage: {
      const int stage = v[0] - '0';
      z["stage"] = stage;
      z.erase("overlap_comm");  // its default depends on the stage (true for 3, false otherwise)
      if (stage < 3) {
        erase_stage3_keys(z);
        z["offload_param"]["device"] = "none";
        if (z["offload_optimizer"].value("ratio", 1.0) < 1.0) z["offload_optimizer"]["ratio"] = 1.0;
      }
      if (stage == 0) z["offload_optimizer"]["device"] = "none";
      break;
    }
    case Knob::offload_optimizer: set_device("offload_optimizer"); break;
    case Knob::offload_param:
      // DeepSpeed ignores offload_param below stage 3 (core notes it): a sweep cell must not pass it off as a change.
      if (s.strategy.zero.stage != 3 && v != "none")
        return core::bad_input("offload_param: only used by stage 3 (DeepSpeed ignores it below)");
      set_device("offload_param");
      break;
    case Knob::precision:
      j["fp16"]["enabled"] = v == "fp16";
      j["bf16"]["enabled"] = v == "bf16";
      break;
    case Knob::micro_batch: ZS_TRY(set_count(j, "train_micro_batch_size_per_gpu", 1, 1 << 20)); break;
    case Knob::grad_accum: ZS_TRY(set_count(j, "gradient_accumulation_steps", 1, 1 << 20)); break;
    case Knob::nodes: {
      auto n = parse_count(v, info, 1, 1 << 20);
      if (!n) return n.error();
      run.nodes = *n;
      break;
    }
    case Knob::gpus_per_node: {
      auto n = parse_count(v, info, 1, s.hardware.gpus_per_node);
      if (!n) return n.error();
      run.gpus_per_node = *n;
      break;
    }
    case Knob::seq_len: {
      const int64_t hi = s.model.position == core::Position::learned ? s.model.max_seq_len : int64_t{1} << 24;
      auto n = parse_count(v, info, 1, hi);
      if (!n) return n.error();
      run.seq_len = *n;
      break;
    }
    case Knob::checkpointing:
      run.checkpoint_activations = v == "on";
      if (v == "off") j.erase("activation_checkpointing");
      break;
    case Knob::reduce_bucket_size: ZS_TRY(set_count(z, "reduce_bucket_size", 1, kMaxCount)); break;
    case Knob::allgather_bucket_size: ZS_TRY(set_count(z, "allgather_bucket_size", 1, kMaxCount)); break;
    case Knob::prefetch_bucket_size:
      if (s.strategy.zero.stage != 3) return core::bad_input("ZeRO-3 prefetch bucket: only used by stage 3");
      ZS_TRY(set_count(z, "stage3_prefetch_bucket_size", 0, kMaxCount));
      break;
    case Knob::sub_group_size: ZS_TRY(set_count(z, "sub_group_size", 1, kMaxCount)); break;
    case Knob::max_live_parameters:
      if (s.strategy.zero.stage != 3) return core::bad_input("ZeRO-3 max live parameters: only used by stage 3");
      ZS_TRY(set_count(z, "stage3_max_live_parameters", 0, kMaxCount));
      break;
    case Knob::schedule: break;
  }
  auto st = reparse(j, s.strategy, run);
  if (!st) return st.error();
  Scenario out = s;
  out.strategy = std::move(*st);
  return out;
}

core::Result<Scenario> with_model(const Scenario& s, const core::ModelSpec& m) {
  core::RunSettings run = s.strategy.run;
  run.checkpoint_activations = s.strategy.activation_checkpointing.enabled;
  run.hidden = m.hidden;
  // A default sequence length follows the model (min(max_seq_len, 4096)); a chosen one stays unless the new model
  // cannot take it.
  if (run.seq_len == core::default_seq_len(s.model) ||
      (m.position == core::Position::learned && run.seq_len > m.max_seq_len))
    run.seq_len = core::default_seq_len(m);
  OJ j = OJ::parse(ds_config_text(s.strategy));
  j.erase("train_batch_size");
  auto st = core::parse_ds_config_text(j.dump(2), s.strategy.source, run);
  if (!st) return st.error();
  Scenario out = s;
  out.model = m;
  out.strategy = std::move(*st);
  return out;
}

core::Result<Scenario> with_hardware(const Scenario& s, const core::Hardware& hw) {
  if (hw.gpus_per_node < 1 || hw.nodes < 1) return core::bad_input(hw.name + ": nodes and GPUs per node must be ≥ 1");
  Scenario out = s;
  out.hardware = hw;
  if (s.strategy.run.gpus_per_node <= hw.gpus_per_node) return out;
  core::RunSettings run = s.strategy.run;
  run.gpus_per_node = hw.gpus_per_node;
  run.checkpoint_activations = s.strategy.activation_checkpointing.enabled;
  OJ j = OJ::parse(ds_config_text(s.strategy));
  j.erase("train_batch_size");
  auto st = reparse(j, s.strategy, run);
  if (!st) return st.error();
  out.strategy = std::move(*st);
  return out;
}

Scenario with_strategy(const Scenario& s, const core::Strategy& strategy) {
  Scenario out = s;
  out.strategy = strategy;
  return out;
}

core::Result<Scenario> with_ds_config_text(const Scenario& s, const std::string& text, const std::string& source) {
  core::RunSettings run = s.strategy.run;
  auto st = core::parse_ds_config_text(text, source, run);
  if (!st) return st.error();
  Scenario out = s;
  out.strategy = std::move(*st);
  return out;
}

std::string verdict_text(const core::MemoryReport& r) {
  if (!r.binding) return "no verdict";
  const auto& b = r.tier(*r.binding);
  const std::string tier = core::to_string(*r.binding);
  if (core::verdict(r) == core::Verdict::tight)  // fit's word: under 3% headroom is within the model's error
    return "TIGHT — tightest tier " + tier + ", " + core::format_bytes(b.headroom_bytes()) +
           " headroom (under 3%: it may not fit)";
  if (r.fits)
    return "FITS — tightest tier " + tier + ", " + core::format_bytes(b.headroom_bytes()) + " headroom";
  if (b.fits() && !r.problems.empty())  // every tier has room: DeepSpeed itself refuses the config
    return "DOES NOT FIT — DeepSpeed refuses it: " + r.problems.front();
  return "DOES NOT FIT — " + tier + " needs " + core::format_bytes(b.required_bytes) + ", has " +
         core::format_bytes(b.capacity_bytes) + " (short by " + core::format_bytes(-b.headroom_bytes()) + ")";
}

}  // namespace zs::gui
