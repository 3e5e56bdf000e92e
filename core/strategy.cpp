// ds_config.json → Strategy with DeepSpeed v0.19's code semantics: HF "auto" resolution, batch inference,
// precision/optimizer/activation-checkpointing blocks, the resolved config writer. zero_optimization and aio
// are in strategy_zero.cpp. See docs/DS_CONFIG.md.
#include "core/strategy.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/json_reader.h"
#include "core/paths.h"

namespace zs::core {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr double kInf = std::numeric_limits<double>::infinity();

// HF TrainingArguments defaults used for "auto" when RunSettings does not say otherwise.
constexpr int64_t kHfMicroBatch = 8;  // per_device_train_batch_size
constexpr double kHfLr = 5e-5;        // learning_rate
constexpr double kHfMaxGradNorm = 1.0;

// Optimizer names DeepSpeed builds itself (case-insensitive); any other name is looked up in torch.optim.
const std::vector<std::string> kDsOptimizers = {"adam",    "adamw", "lamb",   "onebitadam", "onebitlamb", "zerooneadam",
                                                "adagrad", "lion",  "muadam", "muadamw",    "musgd",      "muon"};

bool is_auto(const Json& j) { return j.is_string() && j.get<std::string>() == "auto"; }

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::string lower(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// "Adam" / "AdamW" in any case: DeepSpeed builds FusedAdam, DeepSpeedCPUAdam or torch.optim.Adam(W) from them.
bool is_adam(const std::string& type) { return lower(type) == "adam" || lower(type) == "adamw"; }

// A whole number (4 or 4.0), as DeepSpeed would use it; nullopt otherwise.
std::optional<int64_t> whole(const Json* j) {
  if (!j || j->is_boolean() || !j->is_number()) return std::nullopt;
  double d = j->get<double>();
  if (j->is_number_float() && (std::floor(d) != d || std::fabs(d) > 9e18)) return std::nullopt;
  return j->is_number_float() ? static_cast<int64_t>(d) : j->get<int64_t>();
}

Json* member(Json* parent, const char* key) {
  if (!parent || !parent->is_object()) return nullptr;
  auto it = parent->find(key);
  return it == parent->end() ? nullptr : &*it;
}

// fp16 / bf16 under HF --fp16 / --bf16 (run.hf_precision), as the HF Trainer sets them up. transformers'
// HfTrainerDeepSpeedConfig.trainer_config_process calls fill_match("fp16.enabled", args.fp16 ...) and
// fill_match("bf16.enabled", args.bf16 ...): "auto" takes the flag, and an explicit value that differs is recorded
// as a mismatch that trainer_config_finalize raises. accelerate's DeepSpeedPlugin.set_mixed_precision (run when the
// Trainer builds its Accelerator) then adds {"enabled": true} (fp16: also "auto_cast": true) when the file has no
// such block, and raises if the other precision is enabled. Without a flag, "auto" → false and explicit values
// stand, as plain DeepSpeed reads them.
Status resolve_hf_precision(Json& root, const std::string& file, const RunSettings& run,
                            std::vector<std::string>& notes) {
  const bool flag_given = run.hf_precision && *run.hf_precision != Precision::fp32;
  const std::string flag = run.hf_precision == Precision::bf16 ? "--bf16" : "--fp16";
  for (const Precision p : {Precision::fp16, Precision::bf16}) {
    const bool want = run.hf_precision == p;
    std::string name = to_string(p);
    Json* block = member(&root, name.c_str());
    if (!block && p == Precision::bf16 && member(&root, "bfloat16")) {  // the old name, still read by DeepSpeed
      name = "bfloat16";
      block = member(&root, "bfloat16");
    }
    Json* enabled = member(block, "enabled");
    if (enabled && is_auto(*enabled)) {
      *enabled = want;
      notes.push_back(name + ".enabled: \"auto\" → " + (want ? "true" : "false") + " (" +
                      (flag_given ? "HF " + flag : "HF " + to_string(p) + " default false") + ")");
      continue;
    }
    if (!flag_given) continue;
    if (enabled && enabled->is_boolean() && enabled->get<bool>() != want)
      return bad_input(file + ": " + name + ".enabled: " + enabled->dump() + " contradicts " + flag +
                       " (the HF Trainer raises a mismatch: fill_match in transformers' integrations/deepspeed.py" +
                       (want ? "" : "; accelerate's set_mixed_precision refuses it too") + "); write \"auto\" or " +
                       (want ? "true" : "false") + ", or drop " + flag);
    if (!want) continue;
    if (!block) {
      root[name] = p == Precision::fp16 ? Json{{"enabled", true}, {"auto_cast", true}} : Json{{"enabled", true}};
      notes.push_back(name + ": " + root[name].dump() + " added for " + flag +
                      " (the file has no " + name + " block; accelerate's DeepSpeedPlugin.set_mixed_precision adds it)");
    } else if (block->is_object() && !enabled) {
      notes.push_back(name + ".enabled is not in the file: DeepSpeed's default false stands, so " + flag +
                      " does not change the precision (HF fills only \"auto\" and accelerate only a missing block)");
    }
  }
  return {};
}

// trainer_config_process / trainer_config_finalize of transformers' HfTrainerDeepSpeedConfig: fills the
// "auto" values it knows, from TrainingArguments (RunSettings stand-ins, else HF's defaults) and the model.
Status resolve_hf_autos(Json& root, const std::string& file, const RunSettings& run, std::vector<std::string>& notes) {
  auto fill = [&](Json* parent, const char* key, const std::string& path, const Json& value, const std::string& why) {
    Json* v = member(parent, key);
    if (!v || !is_auto(*v)) return;
    *v = value;
    notes.push_back(path + ": \"auto\" → " + value.dump() + " (" + why + ")");
  };
  // Batch: "auto" takes the TrainingArguments value; an explicit value stands (HF would raise a mismatch, but
  // zerosim's --micro-batch / --grad-accum override the file through batch_setting_changes instead).
  struct Hf {
    const char* key;
    std::optional<int64_t> given;
    int64_t dflt;
    const char* arg;
  };
  const Hf hf[] = {{"train_micro_batch_size_per_gpu", run.hf_micro_batch, kHfMicroBatch, "per_device_train_batch_size"},
                   {"gradient_accumulation_steps", run.hf_grad_accum, 1, "gradient_accumulation_steps"}};
  int64_t eff[2];
  for (int i = 0; i < 2; ++i) {
    auto explicit_value = whole(member(&root, hf[i].key));
    eff[i] = explicit_value.value_or(hf[i].given.value_or(hf[i].dflt));
    fill(&root, hf[i].key, hf[i].key, hf[i].given.value_or(hf[i].dflt),
         std::string("HF ") + hf[i].arg + (hf[i].given ? "" : " default"));
  }
  const int64_t world = run.world();
  fill(&root, "train_batch_size", "train_batch_size", world * eff[0] * eff[1],
       "world " + std::to_string(world) + " × micro " + std::to_string(eff[0]) + " × GA " + std::to_string(eff[1]) +
           " as HF Trainer");
  fill(&root, "gradient_clipping", "gradient_clipping", kHfMaxGradNorm, "HF max_grad_norm default");

  Json* op = member(member(&root, "optimizer"), "params");
  fill(op, "lr", "optimizer.params.lr", kHfLr, "HF learning_rate default");
  fill(op, "betas", "optimizer.params.betas", Json::array({0.9, 0.999}), "HF adam_beta1, adam_beta2 defaults");
  fill(op, "eps", "optimizer.params.eps", 1e-8, "HF adam_epsilon default");
  fill(op, "weight_decay", "optimizer.params.weight_decay", 0.0, "HF weight_decay default");
  Json* sp = member(member(&root, "scheduler"), "params");
  fill(sp, "warmup_min_lr", "scheduler.params.warmup_min_lr", 0, "as HF Trainer");
  fill(sp, "warmup_max_lr", "scheduler.params.warmup_max_lr", kHfLr, "HF learning_rate default");
  for (const char* k : {"total_num_steps", "warmup_num_steps"})
    if (Json* v = member(sp, k); v && is_auto(*v))
      notes.push_back(std::string("scheduler.params.") + k +
                      ": \"auto\" left as is (the HF Trainer fills it from the "
                      "training length; the scheduler is not modelled)");

  ZS_TRY(resolve_hf_precision(root, file, run, notes));
  fill(member(&root, "amp"), "enabled", "amp.enabled", false, "HF fp16_backend apex not selected");
  fill(member(&root, "amp"), "opt_level", "amp.opt_level", "O1", "HF fp16_opt_level default");

  Json* z = member(&root, "zero_optimization");
  const char* hidden_keys[] = {"reduce_bucket_size", "stage3_prefetch_bucket_size",
                               "stage3_param_persistence_threshold"};
  for (const char* k : hidden_keys)
    if (Json* v = member(z, k); v && is_auto(*v) && run.hidden <= 0)
      return bad_input(file + ": zero_optimization." + k +
                       ": \"auto\" needs the model's hidden size (the HF Trainer "
                       "takes model.config.hidden_size), which is unknown here; give a model or write an integer");
  const int64_t h = run.hidden;
  fill(z, "reduce_bucket_size", "zero_optimization.reduce_bucket_size", h * h, "hidden² as HF Trainer");
  if (whole(member(z, "stage")).value_or(0) == 3) {  // HF fills these for ZeRO-3 only
    fill(z, "stage3_prefetch_bucket_size", "zero_optimization.stage3_prefetch_bucket_size",
         static_cast<int64_t>(0.9 * static_cast<double>(h) * static_cast<double>(h)), "0.9·hidden² as HF Trainer");
    fill(z, "stage3_param_persistence_threshold", "zero_optimization.stage3_param_persistence_threshold", 10 * h,
         "10·hidden as HF Trainer");
  }
  return {};
}

bool mul(int64_t a, int64_t b, int64_t* out) { return !__builtin_mul_overflow(a, b, out); }

// _set_batch_related_parameters + _batch_assertion (deepspeed/runtime/config.py), with world = run.world().
void infer_batch(ObjectReader& r, Strategy& s) {
  const int64_t world = s.world();
  auto tbs = r.opt_integer({"train_batch_size"}, 1, kMax);
  auto micro = r.opt_integer({"train_micro_batch_size_per_gpu"}, 1, kMax);
  auto ga = r.opt_integer({"gradient_accumulation_steps"}, 1, kMax);
  if (r.failed()) return;
  const std::string W = std::to_string(world);
  auto n = [](int64_t v) { return std::to_string(v); };
  auto divide = [&](int64_t total, int64_t by, const char* key, const std::string& what) -> int64_t {
    if (by > 0 && total % by == 0 && total / by >= 1) return total / by;
    r.fail(key, "cannot infer: train_batch_size " + n(total) + " is not divisible by " + what +
                    " (DeepSpeed would floor it and then fail its batch assertion)");
    return 0;
  };
  int64_t prod = 0;
  if (tbs && micro && ga) {
    s.train_batch_size = *tbs, s.micro_batch_per_gpu = *micro, s.gradient_accumulation_steps = *ga;
  } else if (tbs && micro) {
    s.train_batch_size = *tbs, s.micro_batch_per_gpu = *micro;
    if (!mul(*micro, world, &prod)) prod = 0;
    s.gradient_accumulation_steps = divide(*tbs, prod, "gradient_accumulation_steps",
                                           "train_micro_batch_size_per_gpu " + n(*micro) + " × world size " + W);
    s.notes.push_back("gradient_accumulation_steps inferred: " + n(s.gradient_accumulation_steps) +
                      " = train_batch_size / (micro × world)");
  } else if (tbs && ga) {
    s.train_batch_size = *tbs, s.gradient_accumulation_steps = *ga;
    if (!mul(*ga, world, &prod)) prod = 0;
    s.micro_batch_per_gpu = divide(*tbs, prod, "train_micro_batch_size_per_gpu",
                                   "world size " + W + " × gradient_accumulation_steps " + n(*ga));
    s.notes.push_back("train_micro_batch_size_per_gpu inferred: " + n(s.micro_batch_per_gpu) +
                      " = train_batch_size / (world × GA)");
  } else if (tbs) {
    s.train_batch_size = *tbs, s.gradient_accumulation_steps = 1;
    s.micro_batch_per_gpu = divide(*tbs, world, "train_micro_batch_size_per_gpu", "world size " + W);
    s.notes.push_back(
        "only train_batch_size given: gradient_accumulation_steps = 1, train_micro_batch_size_per_gpu = " +
        n(s.micro_batch_per_gpu));
  } else if (micro) {
    s.micro_batch_per_gpu = *micro;
    s.gradient_accumulation_steps = ga.value_or(1);
    if (!ga) s.notes.push_back("only train_micro_batch_size_per_gpu given: gradient_accumulation_steps = 1");
  } else {
    r.fail("train_batch_size",
           "missing: set train_batch_size or train_micro_batch_size_per_gpu (DeepSpeed asserts one "
           "of them is set)");
    return;
  }
  if (r.failed()) return;
  int64_t expect = 0;
  bool ok = mul(s.micro_batch_per_gpu, s.gradient_accumulation_steps, &expect) && mul(expect, world, &expect);
  if (!tbs) {
    if (!ok) r.fail("train_batch_size", "micro × GA × world overflows");
    s.train_batch_size = expect;
  } else if (!ok || expect != s.train_batch_size) {
    r.fail("train_batch_size",
           n(s.train_batch_size) + " != train_micro_batch_size_per_gpu " + n(s.micro_batch_per_gpu) +
               " × gradient_accumulation_steps " + n(s.gradient_accumulation_steps) + " × world size " + W +
               (ok ? " (= " + n(expect) + ")" : "") + "; DeepSpeed asserts train_batch_size == micro × GA × world");
  }
}

void read_optimizer(ObjectReader& o, Strategy& s, Json& unmodelled) {
  OptimizerConfig& c = s.optimizer;
  c.given = true;
  c.type = o.req_string("type");  // kept as written; DeepSpeed compares its own names case-insensitively
  o.accept({"legacy_fusion"});
  const std::string name = contains(kDsOptimizers, lower(c.type)) ? lower(c.type) : c.type;
  const bool adam = name == "adam" || name == "adamw";
  const bool offload = s.zero.offload_optimizer.device != OffloadDevice::none;
  ObjectReader p = o.object({"params"});
  if (p.has("max_grad_norm"))  // engine.py _configure_basic_optimizer, for every optimizer
    p.fail("max_grad_norm",
           "not supported as an optimizer parameter: DeepSpeed raises ValueError; use the top-level "
           "\"gradient_clipping\"");
  if (offload && adam) p.accept({"fp32_optimizer_states"});  // popped for DeepSpeedCPUAdam
  c.lr = p.number({"lr"}, c.lr, 0.0, kInf);
  if (const Json* b = p.raw({"betas"}); b && !b->is_null()) {
    auto ok = [](const Json& x) { return x.is_number() && x.get<double>() >= 0.0 && x.get<double>() < 1.0; };
    if (b->is_array() && b->size() == 2 && ok((*b)[0]) && ok((*b)[1])) {
      c.beta1 = (*b)[0].get<double>(), c.beta2 = (*b)[1].get<double>();
    } else {
      p.fail("betas", b->dump() + " is not [beta1, beta2] with each in [0, 1)");
    }
  }
  c.eps = p.number({"eps"}, c.eps, 0.0, kInf);
  c.weight_decay = p.number({"weight_decay"}, c.weight_decay, 0.0, kInf);
  c.bias_correction = p.boolean({"bias_correction"}, c.bias_correction);
  c.adam_w_mode = p.boolean({"adam_w_mode"}, c.adam_w_mode) || name == "adamw";  // engine.py: AdamW forces it
  c.torch_adam = p.boolean({"torch_adam"}, c.torch_adam);
  if (p.boolean({"amsgrad"}, false) && !c.torch_adam)
    p.fail("amsgrad",
           "true is not supported: CPU Adam doesn't support it (DeepSpeedCPUAdam and FusedAdam have no "
           "AMSGrad; torch_adam true would use torch.optim)");
  if (!adam) {  // other optimizers take other params: carried as written (the resolved config writes them back)
    for (const auto& k : p.unknown_keys()) p.accept({k.c_str()});
    if (const Json* params = o.raw({"params"}); params && params->is_object())
      unmodelled["optimizer"]["params"] = *params;
    s.notes.push_back("optimizer.type \"" + c.type + "\": zerosim models Adam's optimizer state (fp32 m and v)");
  }
  // engine.py: _configure_basic_optimizer builds FusedLamb (a GPU kernel) for "Lamb", and 1-bit optimizers assert
  // they are not used with ZeRO; _configure_optimizer asserts an optimizer outside ZERO_SUPPORTED_OPTIMIZERS
  // (zero/utils.py: Adam(W), Adagrad, Lion, Muon and their CPU/fused forms) needs zero_allow_untested_optimizer.
  const bool zero_supported = adam || name == "adagrad" || name == "lion" || name == "muon";
  if (offload && name == "lamb")
    o.fail("type", "\"" + c.type +
                       "\" has no DeepSpeed CPU implementation: with offload_optimizer the fp32 partitions live on "
                       "the CPU and FusedLamb is a GPU kernel (use Adam/AdamW/Adagrad/Lion)");
  if (s.zero.stage > 0 && (name == "onebitadam" || name == "zerooneadam" || name == "onebitlamb"))
    o.fail("type", "\"" + c.type + "\" is not compatible with ZeRO (DeepSpeed asserts); use stage 0");
  if (s.zero.stage > 0 && !zero_supported && !s.zero_allow_untested_optimizer)
    o.fail("type", "\"" + c.type +
                       "\" is not one of ZeRO's tested optimizers; DeepSpeed asserts \"You are using an untested ZeRO "
                       "Optimizer\" unless \"zero_allow_untested_optimizer\": true");
}

void read_precision(ObjectReader& r, Strategy& s, Json& unmodelled) {
  ObjectReader f = r.object({"fp16"});
  auto& h = s.fp16;
  h.enabled = f.boolean({"enabled"}, h.enabled);
  h.auto_cast = f.boolean({"auto_cast"}, h.auto_cast);
  h.loss_scale = f.number({"loss_scale"}, h.loss_scale, 0.0, kInf);
  h.initial_scale_power = f.integer({"initial_scale_power"}, h.initial_scale_power, 0, 127);
  h.loss_scale_window = f.integer({"loss_scale_window"}, h.loss_scale_window, -kMax, kMax);
  h.hysteresis = f.integer({"hysteresis"}, h.hysteresis, -kMax, kMax);
  h.consecutive_hysteresis = f.boolean({"consecutive_hysteresis"}, h.consecutive_hysteresis);
  h.min_loss_scale = static_cast<double>(f.integer({"min_loss_scale"}, 1, -kMax, kMax));  // an int field
  h.fp16_master_weights_and_grads = f.boolean({"fp16_master_weights_and_grads"}, h.fp16_master_weights_and_grads);
  // DeepSpeedFP16Config._validate_dynamic_loss_scale_params: checked only for dynamic scaling (enabled, loss_scale 0).
  if (h.enabled && h.loss_scale == 0 && h.loss_scale_window <= 0)
    f.fail("loss_scale_window",
           std::to_string(h.loss_scale_window) +
               ": must be > 0 when dynamic loss scaling is enabled (loss_scale 0); DeepSpeed raises");
  if (h.enabled && h.loss_scale == 0 && h.min_loss_scale <= 0)
    f.fail("min_loss_scale", Json(h.min_loss_scale).dump() +
                                 ": must be > 0 when dynamic loss scaling is enabled (loss_scale 0); DeepSpeed raises");

  // get_bfloat16_config: "bf16" when present, else the old name "bfloat16"; DeepSpeedBF16Config forbids other keys.
  const Json* bf16 = r.raw({"bf16"});
  const bool old_name = (!bf16 || bf16->is_null()) && r.has("bfloat16");
  if (old_name) s.notes.push_back("bfloat16 is the old name of bf16 (DeepSpeed still reads it when bf16 is absent)");
  if (bf16 && !bf16->is_null() && r.has("bfloat16")) {
    r.raw({"bfloat16"});
    s.notes.push_back("bfloat16: ignored, because bf16 is given (DeepSpeed reads bfloat16 only when bf16 is absent)");
  }
  ObjectReader b = r.object({old_name ? "bfloat16" : "bf16"});
  auto& g = s.bf16;
  const DeepSpeedVersion& v = s.run.deepspeed_version;
  g.check_grad_overflow = v >= kBf16CheckGradOverflowSince;        // PR #8035
  g.immediate_grad_update = v < kBf16ImmediateGradUpdateOffSince;  // PR #6976
  g.enabled = b.boolean({"enabled"}, g.enabled);
  g.immediate_grad_update = b.boolean({"immediate_grad_update"}, g.immediate_grad_update);
  g.check_grad_overflow = b.boolean({"check_grad_overflow"}, g.check_grad_overflow);
  g.bf16_master_weights_and_grads = b.boolean({"bf16_master_weights_and_grads"}, g.bf16_master_weights_and_grads);
  g.bf16_optimizer_states = b.boolean({"bf16_optimizer_states"}, g.bf16_optimizer_states);
  if (h.enabled && g.enabled)
    b.fail("enabled", "fp16 and bf16 are both enabled; DeepSpeed asserts that at most one of them is");
  // DeepSpeedConfig._do_error_check.
  const bool zero = s.zero.stage >= 1;
  if (h.fp16_master_weights_and_grads && !zero)
    f.fail("fp16_master_weights_and_grads", "true needs ZeRO stage 1, 2 or 3 (DeepSpeed asserts)");
  if (g.bf16_master_weights_and_grads && !zero)
    b.fail("bf16_master_weights_and_grads", "true needs ZeRO stage 1, 2 or 3 (DeepSpeed asserts)");
  if (g.bf16_optimizer_states && (!zero || !g.bf16_master_weights_and_grads))
    b.fail("bf16_optimizer_states",
           "true needs ZeRO stage 1, 2 or 3 and bf16_master_weights_and_grads true (DeepSpeed asserts)");

  ObjectReader a = r.object({"amp"});
  if (a.present()) {
    s.amp_enabled = a.boolean({"enabled"}, false);
    for (const auto& k : a.unknown_keys()) a.accept({k.c_str()});  // apex.amp.initialize arguments
    unmodelled["amp"] = *r.raw({"amp"});
    if (s.amp_enabled && (h.enabled || g.enabled))
      a.fail("enabled", "amp cannot be enabled together with fp16 or bf16 (DeepSpeed asserts)");
  }
}

void read_activation_checkpointing(ObjectReader& r, Strategy& s) {
  ObjectReader a = r.object({"activation_checkpointing"});
  auto& c = s.activation_checkpointing;
  c.enabled = s.run.checkpoint_activations;
  if (!a.present()) return;
  // A config carrying this block is written for a model that checkpoints its blocks through
  // deepspeed.checkpointing (Megatron style), so the block implies checkpointing.
  c.enabled = true;
  if (a.has("enabled")) {  // read key by key by DeepSpeed, so ignored there
    a.accept({"enabled"});
    s.notes.push_back(
        "activation_checkpointing.enabled: not a DeepSpeed key (DeepSpeed ignores it: the model decides what is "
        "checkpointed); zerosim takes checkpointing as on because the block is present");
  }
  c.partition_activations = a.boolean({"partition_activations"}, c.partition_activations);
  c.cpu_checkpointing = a.boolean({"cpu_checkpointing"}, c.cpu_checkpointing);
  c.contiguous_memory_optimization = a.boolean({"contiguous_memory_optimization"}, c.contiguous_memory_optimization);
  c.number_checkpoints = a.opt_integer({"number_checkpoints"}, 1, kMax);
  c.synchronize_checkpoint_boundary = a.boolean({"synchronize_checkpoint_boundary"}, c.synchronize_checkpoint_boundary);
  c.profile = a.boolean({"profile"}, c.profile);
  detail::note_ignored_keys(a, s.notes);
  s.notes.push_back(
      "activation_checkpointing: on (the block is present, so the model is taken to checkpoint every block through "
      "deepspeed.checkpointing; without the block, --checkpoint-activations / HF gradient_checkpointing turns it on)");
}

std::optional<Precision> read_dtype(ObjectReader& r, const char* key, const std::vector<std::string>& allowed) {
  if (!r.has(key)) return std::nullopt;
  std::string v = r.choice({key}, "", allowed);
  if (v.rfind("torch.", 0) == 0) v = v.substr(6);
  if (v == "fp32" || v == "float32" || v == "float") return Precision::fp32;
  if (v == "fp16" || v == "float16" || v == "half") return Precision::fp16;
  if (v == "bf16" || v == "bfloat16") return Precision::bf16;
  return std::nullopt;
}

// Objects merge member-wise (recursively); anything else replaces.
void merge_into(nlohmann::ordered_json& dst, const Json& src) {
  for (auto it = src.begin(); it != src.end(); ++it) {
    auto& d = dst[it.key()];
    if (it->is_object() && (d.is_object() || d.is_null())) {
      if (d.is_null()) d = nlohmann::ordered_json::object();
      merge_into(d, *it);
    } else {
      d = nlohmann::ordered_json::parse(it->dump());
    }
  }
}

Result<Strategy> from_json(Json root, const std::string& file, const RunSettings& run) {
  const std::string config_text = root.dump();
  const Json original = run.config_changes.empty() ? Json() : root;
  // Without changes a non-object top level is left for the reader to name.
  if (!run.config_changes.empty()) ZS_TRY(apply_config_changes(root, run.config_changes, file));
  if (run.nodes < 1 || run.gpus_per_node < 1)
    return bad_input(file + ": world size must be at least 1 (nodes " + std::to_string(run.nodes) +
                     " × gpus_per_node " + std::to_string(run.gpus_per_node) + ")");
  Strategy s;
  s.source = file;
  s.config_text = config_text;
  s.run = run;
  if (!run.config_changes.empty()) detail::note_config_changes(original, root, run, s.notes);
  ZS_TRY(resolve_hf_autos(root, file, run, s.notes));
  ZS_TRY(detail::sweep_autos(root, file, s.notes));

  ObjectReader r(root, file, "");
  Json unmodelled = Json::object();
  infer_batch(r, s);

  if (const Json* zj = r.raw({"zero_optimization"}); zj && zj->is_boolean()) {  // read_zero_config_deprecated
    s.zero.stage = zj->get<bool>() ? 1 : 0;
    if (auto size = r.opt_integer({"allgather_size"}, 0, kMax)) s.zero.allgather_bucket_size = *size;
    s.notes.push_back("zero_optimization: a boolean is the deprecated format → stage " + std::to_string(s.zero.stage));
  } else {
    ObjectReader z = r.object({"zero_optimization"});
    detail::read_zero_optimization(z, s, unmodelled);
  }
  ObjectReader aio = r.object({"aio"});
  detail::read_aio(aio, run.deepspeed_version, s.aio, s.notes);

  s.gradient_clipping = r.number({"gradient_clipping"}, s.gradient_clipping, 0.0, kInf);
  s.zero_force_ds_cpu_optimizer = r.boolean({"zero_force_ds_cpu_optimizer"}, s.zero_force_ds_cpu_optimizer);
  s.zero_allow_untested_optimizer = r.boolean({"zero_allow_untested_optimizer"}, s.zero_allow_untested_optimizer);
  s.prescale_gradients = r.boolean({"prescale_gradients"}, s.prescale_gradients);
  s.gradient_predivide_factor = r.number({"gradient_predivide_factor"}, s.gradient_predivide_factor, 1e-30, kInf);
  s.communication_data_type = read_dtype(r, "communication_data_type", {"fp32", "fp16", "bf16"});
  // data_types (get_data_types_params, read key by key): values are DtypeEnum names.
  const std::vector<std::string> dtypes = {"fp32",          "fp16",          "bf16",          "float32",
                                           "float",         "float16",       "half",          "bfloat16",
                                           "torch.float32", "torch.float16", "torch.bfloat16"};
  ObjectReader dt = r.object({"data_types"});
  s.grad_accum_dtype = read_dtype(dt, "grad_accum_dtype", dtypes);
  const std::optional<Precision> param_dtype = read_dtype(dt, "param_dtype", dtypes);
  if (param_dtype) unmodelled["data_types"]["param_dtype"] = to_string(*param_dtype);
  if (auto buffer = read_dtype(dt, "buffer_dtype", dtypes))
    unmodelled["data_types"]["buffer_dtype"] = to_string(*buffer);
  detail::note_ignored_keys(dt, s.notes);
  read_precision(r, s, unmodelled);
  if (param_dtype && *param_dtype != s.model_dtype())  // engine.py _assert_valid_mixed_precision_config
    dt.fail("param_dtype", "\"" + to_string(*param_dtype) + "\" conflicts with the enabled precision (model dtype " +
                               to_string(s.model_dtype()) + "); DeepSpeed asserts");
  if (s.amp_enabled && s.zero.stage > 0)
    r.fail("amp", "enabled with ZeRO stage " + std::to_string(s.zero.stage) +
                      ": DeepSpeed asserts \"Amp and ZeRO are not "
                      "currently compatible\"");
  ObjectReader o = r.object({"optimizer"});
  if (o.present())
    read_optimizer(o, s, unmodelled);
  else
    s.notes.push_back("no optimizer block: the client's optimizer is used (HF Trainer: AdamW); zerosim models Adam");
  read_activation_checkpointing(r, s);

  detail::read_other_keys(r, s, unmodelled);

  ZS_TRY(r.finish());  // DeepSpeed's own refusals (unknown keys in strict blocks, asserts) come first
  ZS_TRY(detail::refuse_unmodelled(root, file));
  s.unmodelled_json = unmodelled.dump();
  return s;
}

}  // namespace

Result<Strategy> parse_ds_config_text(const std::string& text, const std::string& source, const RunSettings& run) {
  auto j = parse_json_text(text, source);
  if (!j) return j.error();
  return from_json(std::move(*j), source, run);
}

Result<Strategy> load_ds_config(const std::string& path, const RunSettings& run) {
  auto j = read_json_file(path);
  if (!j) return j.error();
  return from_json(std::move(*j), path, run);
}

Result<Strategy> reload_strategy(const Strategy& s, const RunSettings& run) {
  return parse_ds_config_text(s.config_text, s.source, run);
}

Result<Strategy> load_strategy(const std::string& name_or_path, const RunSettings& run) {
  auto p = resolve_input(name_or_path, InputKind::deepspeed);
  if (!p) return p.error();
  return load_ds_config(*p, run);
}

std::string resolved_config_json(const Strategy& s) {
  using OJ = nlohmann::ordered_json;
  OJ j;
  j["train_batch_size"] = s.train_batch_size;
  j["train_micro_batch_size_per_gpu"] = s.micro_batch_per_gpu;
  j["gradient_accumulation_steps"] = s.gradient_accumulation_steps;
  j["gradient_clipping"] = s.gradient_clipping;
  j["prescale_gradients"] = s.prescale_gradients;
  j["gradient_predivide_factor"] = s.gradient_predivide_factor;
  if (s.communication_data_type) j["communication_data_type"] = to_string(*s.communication_data_type);
  j["zero_force_ds_cpu_optimizer"] = s.zero_force_ds_cpu_optimizer;
  j["zero_allow_untested_optimizer"] = s.zero_allow_untested_optimizer;
  const auto& h = s.fp16;
  j["fp16"] = {{"enabled", h.enabled},
               {"auto_cast", h.auto_cast},
               {"loss_scale", h.loss_scale},
               {"initial_scale_power", h.initial_scale_power},
               {"loss_scale_window", h.loss_scale_window},
               {"hysteresis", h.hysteresis},
               {"consecutive_hysteresis", h.consecutive_hysteresis},
               {"min_loss_scale", static_cast<int64_t>(h.min_loss_scale)},
               {"fp16_master_weights_and_grads", h.fp16_master_weights_and_grads}};
  const auto& b = s.bf16;
  j["bf16"] = {{"enabled", b.enabled},
               {"immediate_grad_update", b.immediate_grad_update},
               {"check_grad_overflow", b.check_grad_overflow},
               {"bf16_master_weights_and_grads", b.bf16_master_weights_and_grads},
               {"bf16_optimizer_states", b.bf16_optimizer_states}};
  if (s.optimizer.given && !is_adam(s.optimizer.type)) {
    j["optimizer"] = {{"type", s.optimizer.type}};  // its params are carried as written (unmodelled_json)
  } else if (s.optimizer.given) {
    const auto& o = s.optimizer;
    j["optimizer"] = {{"type", o.type},
                      {"params",
                       {{"lr", o.lr},
                        {"betas", {o.beta1, o.beta2}},
                        {"eps", o.eps},
                        {"weight_decay", o.weight_decay},
                        {"adam_w_mode", o.adam_w_mode},
                        {"bias_correction", o.bias_correction},
                        {"torch_adam", o.torch_adam}}}};
  }
  j["zero_optimization"] = detail::zero_optimization_to_json(s.zero);
  j["aio"] = detail::aio_to_json(s.aio, s.run.deepspeed_version);
  const auto& a = s.activation_checkpointing;
  j["activation_checkpointing"] = {
      {"partition_activations", a.partition_activations},
      {"cpu_checkpointing", a.cpu_checkpointing},
      {"contiguous_memory_optimization", a.contiguous_memory_optimization},
      {"number_checkpoints", a.number_checkpoints ? OJ(*a.number_checkpoints) : OJ(nullptr)},
      {"synchronize_checkpoint_boundary", a.synchronize_checkpoint_boundary},
      {"profile", a.profile}};
  if (s.grad_accum_dtype) j["data_types"] = {{"grad_accum_dtype", to_string(*s.grad_accum_dtype)}};
  merge_into(j, Json::parse(s.unmodelled_json.empty() ? "{}" : s.unmodelled_json));
  return j.dump(2);
}

std::optional<DeepSpeedVersion> parse_deepspeed_version(const std::string& text) {
  DeepSpeedVersion v;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%d.%d.%d%c", &v.major, &v.minor, &v.patch, &tail) != 3) return std::nullopt;
  if (v.major < 0 || v.minor < 0 || v.patch < 0 || v.major > 99 || v.minor > 999 || v.patch > 999) return std::nullopt;
  return v;
}

std::string to_string(const DeepSpeedVersion& v) {
  return std::to_string(v.major) + "." + std::to_string(v.minor) + "." + std::to_string(v.patch);
}

std::string to_string(OffloadDevice d) {
  switch (d) {
    case OffloadDevice::none:
      return "none";
    case OffloadDevice::cpu:
      return "cpu";
    case OffloadDevice::nvme:
      return "nvme";
  }
  return "?";
}

std::string to_string(Precision p) {
  switch (p) {
    case Precision::fp32:
      return "fp32";
    case Precision::fp16:
      return "fp16";
    case Precision::bf16:
      return "bf16";
  }
  return "?";
}

int64_t bytes_per_element(Precision p) { return p == Precision::fp32 ? 4 : 2; }

}  // namespace zs::core
