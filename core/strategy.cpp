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

// Top-level DeepSpeed keys zerosim accepts without modelling: carried verbatim into the resolved config.
const std::vector<const char*> kObjectBlocks = {"scheduler",
                                                "flops_profiler",
                                                "tensorboard",
                                                "wandb",
                                                "csv_monitor",
                                                "comet",
                                                "comms_logger",
                                                "checkpoint",
                                                "elasticity",
                                                "autotuning",
                                                "compression_training",
                                                "data_efficiency",
                                                "curriculum_learning",
                                                "pipeline",
                                                "sparse_attention",
                                                "eigenvalue",
                                                "progressive_layer_drop",
                                                "quantize_training",
                                                "nebula",
                                                "hybrid_engine",
                                                "compile",
                                                "timers",
                                                "tensor_parallel",
                                                "torch_autocast"};
// Blocks that are routine (logging, scheduling); the others get an "accepted, not modelled" note.
const std::vector<std::string> kQuietBlocks = {"scheduler", "flops_profiler", "tensorboard", "wandb", "csv_monitor",
                                               "comet",     "comms_logger",   "checkpoint",  "timers"};
const std::vector<const char*> kBoolScalars = {"wall_clock_breakdown",
                                               "dump_state",
                                               "memory_breakdown",
                                               "disable_allgather",
                                               "sparse_gradients",
                                               "dataloader_drop_last",
                                               "use_data_before_expert_parallelism",
                                               "graph_harvesting"};
const std::vector<const char*> kIntScalars = {"steps_per_print", "vocabulary_size", "sequence_parallel_size"};
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

// trainer_config_process / trainer_config_finalize of transformers' HfTrainerDeepSpeedConfig: fills the
// "auto" values it knows, from TrainingArguments (RunSettings stand-ins, else HF's defaults) and the model.
Status resolve_hf_autos(Json& root, const std::string& file, const RunSettings& run, std::vector<std::string>& notes) {
  auto fill = [&](Json* parent, const char* key, const std::string& path, const Json& value, const std::string& why) {
    Json* v = member(parent, key);
    if (!v || !is_auto(*v)) return;
    *v = value;
    notes.push_back(path + ": \"auto\" → " + value.dump() + " (" + why + ")");
  };
  // Batch: an explicit value must agree with the TrainingArguments value when one is given (HF's mismatch error).
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
    if (explicit_value && hf[i].given && *explicit_value != *hf[i].given)
      return bad_input(file + ": " + hf[i].key + ": " + std::to_string(*explicit_value) + " disagrees with HF " +
                       hf[i].arg + " " + std::to_string(*hf[i].given) + " (the HF Trainer raises a mismatch error)");
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

  const bool hf_fp16 = run.hf_precision == Precision::fp16, hf_bf16 = run.hf_precision == Precision::bf16;
  fill(member(&root, "fp16"), "enabled", "fp16.enabled", hf_fp16, hf_fp16 ? "HF --fp16" : "HF fp16 default false");
  fill(member(&root, "bf16"), "enabled", "bf16.enabled", hf_bf16, hf_bf16 ? "HF --bf16" : "HF bf16 default false");
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

// Any "auto" left after the HF pass. In zero_optimization (pydantic models) DeepSpeed drops "auto" values, so
// the code default applies: the value becomes null (absent to the reader, still checked as a key) or, in
// blocks carried verbatim, is erased. In accepted-not-modelled blocks it is left alone. Elsewhere it is an error.
Status sweep_autos(Json& j, const std::string& path, const std::string& file, bool in_zero, bool erase,
                   std::vector<std::string>& notes) {
  if (!j.is_object()) return {};
  for (auto it = j.begin(); it != j.end();) {
    const std::string key = it.key();
    const std::string p = path.empty() ? key : path + "." + key;
    if (is_auto(*it)) {
      if (!in_zero)
        return bad_input(file + ": " + p +
                         ": \"auto\" is not filled by the HF Trainer and DeepSpeed does not resolve "
                         "it; write a value");
      notes.push_back(p +
                      ": \"auto\" → default (the HF Trainer does not fill it; DeepSpeed drops \"auto\" values in "
                      "zero_optimization and uses the code default)");
      if (erase) {
        it = j.erase(it);
        continue;
      }
      *it = nullptr;
    } else if (it->is_object()) {
      if (path.empty() && (contains({kObjectBlocks.begin(), kObjectBlocks.end()}, key) || key == "amp")) {
        if (key == "amp") ZS_TRY(sweep_autos(*it, p, file, false, false, notes));
      } else if (!(in_zero && key == "zeropp_loco_param")) {  // a plain dict in DeepSpeed: "auto" stays a string
        const bool zero = in_zero || (path.empty() && key == "zero_optimization");
        const bool verbatim = in_zero && key != "offload_param" && key != "offload_optimizer";
        ZS_TRY(sweep_autos(*it, p, file, zero, erase || verbatim, notes));
      }
    }
    ++it;
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
  ObjectReader p = o.object({"params"});
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
  if (!adam) {  // other optimizers take other params; carry them, model Adam-like state
    Json extra = Json::object();
    for (const auto& k : p.unknown_keys()) {
      p.accept({k.c_str()});
      extra[k] = *p.raw({k.c_str()});
    }
    if (!extra.empty()) unmodelled["optimizer"]["params"] = extra;
    s.notes.push_back("optimizer.type \"" + c.type + "\": zerosim models Adam's optimizer state (fp32 m and v)");
  }
  const bool offload = s.zero.offload_optimizer.device != OffloadDevice::none;
  if (offload && s.zero_force_ds_cpu_optimizer && !(adam || name == "adagrad" || name == "lion"))
    o.fail("type", "\"" + c.type +
                       "\" has no DeepSpeed CPU implementation; with offload_optimizer and "
                       "zero_force_ds_cpu_optimizer true DeepSpeed rejects it (use Adam/AdamW/Adagrad/Lion)");
}

void read_precision(ObjectReader& r, Strategy& s, Json& unmodelled) {
  ObjectReader f = r.object({"fp16"});
  auto& h = s.fp16;
  h.enabled = f.boolean({"enabled"}, h.enabled);
  h.auto_cast = f.boolean({"auto_cast"}, h.auto_cast);
  h.loss_scale = f.number({"loss_scale"}, h.loss_scale, 0.0, kInf);
  h.initial_scale_power = f.integer({"initial_scale_power"}, h.initial_scale_power, 0, 127);
  h.loss_scale_window = f.integer({"loss_scale_window"}, h.loss_scale_window, 1, kMax);
  h.hysteresis = f.integer({"hysteresis"}, h.hysteresis, 1, kMax);
  h.consecutive_hysteresis = f.boolean({"consecutive_hysteresis"}, h.consecutive_hysteresis);
  h.min_loss_scale = f.number({"min_loss_scale"}, h.min_loss_scale, 0.0, kInf);
  h.fp16_master_weights_and_grads = f.boolean({"fp16_master_weights_and_grads"}, h.fp16_master_weights_and_grads);

  if (r.has("bf16") && r.has("bfloat16"))
    r.fail("bfloat16", "given together with \"bf16\"; keep \"bf16\" (bfloat16 is the old name)");
  if (r.has("bfloat16")) s.notes.push_back("bfloat16 is the old name of bf16 (DeepSpeed still reads it)");
  ObjectReader b = r.object({"bf16", "bfloat16"});
  auto& g = s.bf16;
  g.enabled = b.boolean({"enabled"}, g.enabled);
  g.immediate_grad_update = b.boolean({"immediate_grad_update"}, g.immediate_grad_update);
  g.check_overflow = b.boolean({"check_overflow"}, g.check_overflow);
  g.bf16_master_weights_and_grads = b.boolean({"bf16_master_weights_and_grads"}, g.bf16_master_weights_and_grads);
  g.bf16_optimizer_states = b.boolean({"bf16_optimizer_states"}, g.bf16_optimizer_states);
  if (h.enabled && g.enabled)
    b.fail("enabled", "fp16 and bf16 are both enabled; DeepSpeed asserts that at most one of them is");

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
  if (a.has("enabled"))
    a.fail("enabled",
           "not a DeepSpeed key: the block has no on/off switch (the model calls deepspeed.checkpointing; HF "
           "uses gradient_checkpointing); zerosim takes it from --checkpoint-activations");
  c.partition_activations = a.boolean({"partition_activations"}, c.partition_activations);
  c.cpu_checkpointing = a.boolean({"cpu_checkpointing"}, c.cpu_checkpointing);
  c.contiguous_memory_optimization = a.boolean({"contiguous_memory_optimization"}, c.contiguous_memory_optimization);
  c.number_checkpoints = a.opt_integer({"number_checkpoints"}, 1, kMax);
  c.synchronize_checkpoint_boundary = a.boolean({"synchronize_checkpoint_boundary"}, c.synchronize_checkpoint_boundary);
  c.profile = a.boolean({"profile"}, c.profile);
  s.notes.push_back(
      "activation_checkpointing: on (the block is present, so the model is taken to checkpoint every block through "
      "deepspeed.checkpointing; without the block, --checkpoint-activations / HF gradient_checkpointing turns it on)");
}

std::optional<Precision> read_dtype(ObjectReader& r, const char* key, const std::vector<std::string>& allowed) {
  if (!r.has(key)) return std::nullopt;
  std::string v = r.choice({key}, "", allowed);
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
  ZS_TRY(apply_config_changes(root, run.config_changes, file));
  if (run.nodes < 1 || run.gpus_per_node < 1)
    return bad_input(file + ": world size must be at least 1 (nodes " + std::to_string(run.nodes) +
                     " × gpus_per_node " + std::to_string(run.gpus_per_node) + ")");
  Strategy s;
  s.source = file;
  s.config_text = config_text;
  s.run = run;
  ZS_TRY(resolve_hf_autos(root, file, run, s.notes));
  ZS_TRY(sweep_autos(root, "", file, false, false, s.notes));

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
  detail::read_aio(aio, s.aio);

  s.gradient_clipping = r.number({"gradient_clipping"}, s.gradient_clipping, 0.0, kInf);
  s.zero_force_ds_cpu_optimizer = r.boolean({"zero_force_ds_cpu_optimizer"}, s.zero_force_ds_cpu_optimizer);
  s.zero_allow_untested_optimizer = r.boolean({"zero_allow_untested_optimizer"}, s.zero_allow_untested_optimizer);
  s.prescale_gradients = r.boolean({"prescale_gradients"}, s.prescale_gradients);
  s.gradient_predivide_factor = r.number({"gradient_predivide_factor"}, s.gradient_predivide_factor, 1e-30, kInf);
  s.communication_data_type = read_dtype(r, "communication_data_type", {"fp32", "fp16", "bf16"});
  ObjectReader dt = r.object({"data_types"});
  s.grad_accum_dtype =
      read_dtype(dt, "grad_accum_dtype", {"fp32", "fp16", "bf16", "float32", "float", "float16", "half", "bfloat16"});
  read_precision(r, s, unmodelled);
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

  for (const char* k : kObjectBlocks) {
    ObjectReader b = r.object({k});
    if (!b.present()) continue;
    for (const auto& key : b.unknown_keys()) b.accept({key.c_str()});
    unmodelled[k] = *r.raw({k});
    if (!contains(kQuietBlocks, k)) s.notes.push_back(std::string(k) + ": accepted, not modelled");
  }
  for (const char* k : kBoolScalars)
    if (auto v = r.opt_boolean({k})) unmodelled[k] = *v;
  for (const char* k : kIntScalars)
    if (auto v = r.opt_integer({k}, 0, kMax)) unmodelled[k] = *v;
  if (auto v = r.opt_string({"seq_parallel_communication_data_type"}))
    unmodelled["seq_parallel_communication_data_type"] = *v;

  ZS_TRY(r.finish());
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
               {"min_loss_scale", h.min_loss_scale},
               {"fp16_master_weights_and_grads", h.fp16_master_weights_and_grads}};
  const auto& b = s.bf16;
  j["bf16"] = {{"enabled", b.enabled},
               {"immediate_grad_update", b.immediate_grad_update},
               {"check_overflow", b.check_overflow},
               {"bf16_master_weights_and_grads", b.bf16_master_weights_and_grads},
               {"bf16_optimizer_states", b.bf16_optimizer_states}};
  if (s.optimizer.given) {
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
  j["aio"] = detail::aio_to_json(s.aio);
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
