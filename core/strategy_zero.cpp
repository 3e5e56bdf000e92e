// zero_optimization, offload_param / offload_optimizer and aio, read with DeepSpeed v0.19's code defaults
// (deepspeed/runtime/zero/config.py, offload_config.py, swap_tensor/aio_config.py). See docs/DS_CONFIG.md.
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/json_reader.h"
#include "core/strategy.h"

namespace zs::core::detail {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min() + 1;

// A key counts as given when present with a non-null value ("auto" in a pydantic block was nulled earlier).
bool given(ObjectReader& r, const char* name) {
  const Json* v = r.raw({name});
  return v && !v->is_null();
}

OffloadDevice read_device(ObjectReader& o) {
  std::string d = o.choice({"device"}, "none", {"none", "cpu", "nvme"});
  return d == "cpu" ? OffloadDevice::cpu : d == "nvme" ? OffloadDevice::nvme : OffloadDevice::none;
}

void read_offload_param(ObjectReader o, OffloadParamConfig& c) {
  c.device = read_device(o);
  c.nvme_path = o.string({"nvme_path"}, "");
  c.buffer_count = o.integer({"buffer_count"}, c.buffer_count, 0, kMax);
  c.buffer_size = o.integer({"buffer_size"}, c.buffer_size, 0, kMax);
  c.max_in_cpu = o.integer({"max_in_cpu"}, c.max_in_cpu, 0, kMax);
  c.pin_memory = o.boolean({"pin_memory"}, c.pin_memory);
}

void read_offload_optimizer(ObjectReader o, OffloadOptimizerConfig& c) {
  c.device = read_device(o);
  c.nvme_path = o.string({"nvme_path"}, "");
  c.buffer_count = o.integer({"buffer_count"}, c.buffer_count, 0, kMax);
  c.pin_memory = o.boolean({"pin_memory"}, c.pin_memory);
  c.pipeline_read = o.boolean({"pipeline_read"}, c.pipeline_read);
  c.pipeline_write = o.boolean({"pipeline_write"}, c.pipeline_write);
  c.fast_init = o.boolean({"fast_init"}, c.fast_init);
  c.ratio = o.number({"ratio"}, c.ratio, 0.0, 1.0);
  c.super_offload = o.boolean({"super_offload"}, c.super_offload);
  c.cpuadam_cores_perc = o.number({"cpuadam_cores_perc"}, c.cpuadam_cores_perc, 0.0, 1.0);
}

// A deprecated boolean that DeepSpeed turns into an offload block with device cpu (new_param_fn). DeepSpeed
// asserts when the replacing block is given too.
template <class Config>
void deprecated_offload(ObjectReader& z, const char* old_key, const char* new_key, Config& c, bool& given_flag,
                        std::vector<std::string>& notes) {
  auto v = z.opt_boolean({old_key});
  if (!v) return;
  if (given(z, new_key)) {
    z.fail(old_key,
           std::string("deprecated key given together with \"") + new_key +
               "\"; DeepSpeed asserts \"Cannot provide deprecated parameter and replacing parameter together\"");
    return;
  }
  notes.push_back("zero_optimization." + std::string(old_key) + " is deprecated: " + (*v ? "true" : "false") + " → " +
                  new_key + (*v ? " {\"device\": \"cpu\"}" : " unset") + " (as DeepSpeed maps it)");
  if (*v) {
    c.device = OffloadDevice::cpu;
    given_flag = true;
  }
}

struct Stage3Key {
  const char* name;   // stage3_* name (the pydantic alias)
  const char* alias;  // field name, also accepted (populate_by_name); nullptr when none
};
constexpr Stage3Key kStage3Keys[] = {
    {"stage3_prefetch_bucket_size", "prefetch_bucket_size"},
    {"stage3_param_persistence_threshold", "param_persistence_threshold"},
    {"stage3_model_persistence_threshold", "model_persistence_threshold"},
    {"stage3_max_live_parameters", "max_live_parameters"},
    {"stage3_max_reuse_distance", "max_reuse_distance"},
    {"stage3_gather_16bit_weights_on_model_save", "gather_16bit_weights_on_model_save"},
    {"stage3_gather_fp16_weights_on_model_save", nullptr},
    {"stage3_module_granularity_threshold", "module_granularity_threshold"},
    {"stage3_use_all_reduce_for_fetch_params", "use_all_reduce_for_fetch_params"},
    {"stage3_allgather_sequential", "allgather_sequential"},
};

// A key given under both names is an error; stage-3-only keys given under stage < 3 are accepted (DeepSpeedZeroConfig
// has the fields at every stage, and stage_1_and_2.py never reads them): one note names them.
void check_stage3_keys(ObjectReader& z, int stage, std::vector<std::string>& notes) {
  std::string unused;
  for (const auto& k : kStage3Keys) {
    bool a = given(z, k.name), b = k.alias && given(z, k.alias);
    if (a && b) z.fail(k.alias, std::string("given twice, also as \"") + k.name + "\"; keep one");
    if (stage < 3 && (a || b)) unused += std::string(unused.empty() ? "" : ", ") + (a ? k.name : k.alias);
  }
  if (!unused.empty())
    notes.push_back("zero_optimization: " + unused + ": used by ZeRO stage 3 only; DeepSpeed ignores them at stage " +
                    std::to_string(stage));
}

}  // namespace

void read_zero_optimization(ObjectReader& z, Strategy& s, Json& unmodelled) {
  ZeroConfig& c = s.zero;
  auto& notes = s.notes;
  c.stage = static_cast<int>(z.integer({"stage"}, 0, 0, 3));
  check_stage3_keys(z, c.stage, notes);
  if (z.has("grad_hooks"))
    z.fail("grad_hooks",
           "unknown key; it is documented in DeepSpeed's config-json.md but is not a field of "
           "DeepSpeedZeroConfig, so DeepSpeed rejects it (extra=forbid)");

  c.contiguous_gradients = z.boolean({"contiguous_gradients"}, c.contiguous_gradients);
  c.reduce_scatter = z.boolean({"reduce_scatter"}, c.reduce_scatter);
  c.reduce_bucket_size = z.integer({"reduce_bucket_size"}, c.reduce_bucket_size, 0, kMax);
  c.use_multi_rank_bucket_allreduce = z.boolean({"use_multi_rank_bucket_allreduce"}, c.use_multi_rank_bucket_allreduce);
  c.allgather_partitions = z.boolean({"allgather_partitions"}, c.allgather_partitions);
  c.allgather_bucket_size = z.integer({"allgather_bucket_size"}, c.allgather_bucket_size, 0, kMax);
  c.overlap_comm = z.opt_boolean({"overlap_comm"}).value_or(c.stage == 3);  // validator overlap_comm_valid
  c.load_from_fp32_weights = z.boolean({"load_from_fp32_weights"}, c.load_from_fp32_weights);
  c.elastic_checkpoint = z.boolean({"elastic_checkpoint"}, c.elastic_checkpoint);
  c.sub_group_size = z.integer({"sub_group_size"}, c.sub_group_size, 0, kMax);
  c.prefetch_bucket_size =
      z.integer({"stage3_prefetch_bucket_size", "prefetch_bucket_size"}, c.prefetch_bucket_size, 0, kMax);
  c.param_persistence_threshold = z.integer({"stage3_param_persistence_threshold", "param_persistence_threshold"},
                                            c.param_persistence_threshold, 0, kMax);
  c.model_persistence_threshold = z.integer({"stage3_model_persistence_threshold", "model_persistence_threshold"},
                                            c.model_persistence_threshold, 0, kMax);
  c.max_live_parameters =
      z.integer({"stage3_max_live_parameters", "max_live_parameters"}, c.max_live_parameters, 0, kMax);
  c.max_reuse_distance = z.integer({"stage3_max_reuse_distance", "max_reuse_distance"}, c.max_reuse_distance, 0, kMax);
  c.gather_16bit_weights_on_model_save =
      z.boolean({"stage3_gather_16bit_weights_on_model_save", "gather_16bit_weights_on_model_save"},
                c.gather_16bit_weights_on_model_save);
  if (auto old = z.opt_boolean({"stage3_gather_fp16_weights_on_model_save"})) {
    if (given(z, "stage3_gather_16bit_weights_on_model_save") || given(z, "gather_16bit_weights_on_model_save"))
      z.fail("stage3_gather_fp16_weights_on_model_save",
             "deprecated key given together with its replacement stage3_gather_16bit_weights_on_model_save; DeepSpeed "
             "asserts");
    c.gather_16bit_weights_on_model_save = *old;
    notes.push_back(
        "zero_optimization.stage3_gather_fp16_weights_on_model_save is deprecated → "
        "stage3_gather_16bit_weights_on_model_save");
  }
  c.module_granularity_threshold = z.integer({"stage3_module_granularity_threshold", "module_granularity_threshold"},
                                             c.module_granularity_threshold, kMin, kMax);
  c.use_all_reduce_for_fetch_params = z.boolean(
      {"stage3_use_all_reduce_for_fetch_params", "use_all_reduce_for_fetch_params"}, c.use_all_reduce_for_fetch_params);
  c.allgather_sequential = z.boolean({"stage3_allgather_sequential", "allgather_sequential"}, c.allgather_sequential);
  c.ignore_unused_parameters = z.boolean({"ignore_unused_parameters"}, c.ignore_unused_parameters);
  c.legacy_stage1 = z.boolean({"legacy_stage1"}, c.legacy_stage1);
  c.round_robin_gradients = z.boolean({"round_robin_gradients"}, c.round_robin_gradients);
  c.zero_hpz_partition_size = z.integer({"zero_hpz_partition_size"}, c.zero_hpz_partition_size, 0, kMax);
  c.zero_quantized_weights = z.boolean({"zero_quantized_weights"}, c.zero_quantized_weights);
  c.zero_quantized_nontrainable_weights =
      z.boolean({"zero_quantized_nontrainable_weights"}, c.zero_quantized_nontrainable_weights);
  c.zero_quantized_gradients = z.boolean({"zero_quantized_gradients"}, c.zero_quantized_gradients);
  c.mics_shard_size = z.integer({"mics_shard_size"}, c.mics_shard_size, kMin, kMax);
  c.mics_hierarchical_params_gather = z.boolean({"mics_hierarchical_params_gather"}, c.mics_hierarchical_params_gather);
  c.memory_efficient_linear = z.boolean({"memory_efficient_linear"}, c.memory_efficient_linear);
  if (c.legacy_stage1 && c.stage > 0)
    z.fail("legacy_stage1",
           "true: DeepSpeed raises \"The deprecated version of ZeRO Stage 1 is not supported in "
           "deepspeed >= 0.5.9\" (engine.py _configure_zero_optimizer)");

  // Real fields that change nothing zerosim predicts: type-checked, carried into the resolved config.
  Json zx = Json::object();
  for (const char* k : {"pipeline_loading_checkpoint", "override_module_apply", "log_trace_cache_warnings",
                        "enable_sanity_checks", "save_muon_momentum_buffer_in_memory"})
    if (auto v = z.opt_boolean({k})) zx[k] = *v;
  // zenflow is refused after reading (refuse_unmodelled); zeropp_loco_param only tunes qgZ, which is refused too.
  for (const char* k : {"zenflow", "zeropp_loco_param", "leaf_module"}) {
    ObjectReader b = z.object({k});
    if (!b.present()) continue;
    for (const auto& key : b.unknown_keys()) b.accept({key.c_str()});
    zx[k] = *z.raw({k});
    if (std::string(k) == "leaf_module") notes.push_back("zero_optimization.leaf_module: accepted, not modelled");
  }

  if (s.run.deepspeed_version < kPinnedOffloadSince) {
    // offload_config.py before PR #8207: pin_memory defaulted to False in both blocks.
    c.offload_param.pin_memory = c.offload_optimizer.pin_memory = false;
    notes.push_back("DeepSpeed " + to_string(s.run.deepspeed_version) +
                    ": offload blocks default to pin_memory false (true from v0.19.5)");
  }
  ObjectReader op = z.object({"offload_param"});
  ObjectReader oo = z.object({"offload_optimizer"});
  c.offload_param_given = op.present();
  c.offload_optimizer_given = oo.present();
  if (op.present()) read_offload_param(op, c.offload_param);
  if (oo.present()) read_offload_optimizer(oo, c.offload_optimizer);
  deprecated_offload(z, "cpu_offload", "offload_optimizer", c.offload_optimizer, c.offload_optimizer_given, notes);
  deprecated_offload(z, "cpu_offload_param", "offload_param", c.offload_param, c.offload_param_given, notes);
  if (z.opt_boolean({"cpu_offload_use_pin_memory"}))
    notes.push_back(
        std::string("zero_optimization.cpu_offload_use_pin_memory is deprecated and DeepSpeed ignores it "
                    "(set_new_param=False); use offload_param/offload_optimizer.pin_memory"));

  // Stage rules (validators, engine.py and the stage-3-only features).
  const std::string stage = std::to_string(c.stage);
  auto& opt = c.offload_optimizer;
  auto& par = c.offload_param;
  if (c.stage == 0 && opt.device != OffloadDevice::none)
    oo.fail("device", "\"" + to_string(opt.device) +
                          "\" needs ZeRO stage 1, 2 or 3 but stage is 0 (without ZeRO the parameters stay on the GPU "
                          "and DeepSpeedCPUAdam asserts its parameters are on the CPU)");
  if (c.stage < 3 && par.device != OffloadDevice::none) {
    notes.push_back("zero_optimization.offload_param.device: \"" + to_string(par.device) + "\" is ignored at stage " +
                    stage + " (only ZeRO-3 and zero.Init read offload_param) → none");
    par.device = OffloadDevice::none;
  }
  if (opt.ratio < 1.0 && c.stage != 3)
    oo.fail("ratio",
            Json(opt.ratio).dump() + ": Partial offloading only supported for ZeRO Stage 3 (stage is " + stage + ")");
  if ((c.stage == 1 || c.stage == 2) && opt.device == OffloadDevice::nvme) {
    opt.device = OffloadDevice::cpu;
    notes.push_back(
        "zero_optimization.offload_optimizer.device: \"nvme\" → cpu: stage 1/2 treat nvme as cpu (engine.py); "
        "NVMe swapping is ZeRO-3 only");
  }
  if (c.stage == 3) {
    if (par.device == OffloadDevice::nvme && par.nvme_path.empty())
      op.fail("nvme_path", "missing: device \"nvme\" needs nvme_path (DeepSpeed asserts it)");
    if (opt.device == OffloadDevice::nvme && opt.nvme_path.empty())
      oo.fail("nvme_path", "missing: device \"nvme\" needs nvme_path (DeepSpeed asserts it)");
  }
  if ((c.stage == 1 || c.stage == 2) && c.allgather_bucket_size % 2 != 0)
    z.fail("allgather_bucket_size",
           std::to_string(c.allgather_bucket_size) +
               " must be a multiple of nccl_start_alignment_factor 2 (stage_1_and_2.py asserts)");
  if (!zx.empty()) unmodelled["zero_optimization"] = std::move(zx);
}

void read_aio(ObjectReader& a, const DeepSpeedVersion& v, AioConfig& aio, std::vector<std::string>& notes) {
  // get_aio_config: get_scalar_param per key, other keys ignored. The thread count's name depends on the release.
  const bool renamed = v >= kAioIntraOpParallelismSince;
  const char* threads = renamed ? "intra_op_parallelism" : "thread_count";
  if (renamed && a.has("thread_count")) {
    a.accept({"thread_count"});
    notes.push_back("aio.thread_count: renamed intra_op_parallelism in DeepSpeed v0.16.4 (PR #7056); DeepSpeed " +
                    to_string(v) + " ignores it, so intra_op_parallelism keeps its default" +
                    (a.has("intra_op_parallelism") ? "" : " 1") + "; did you mean \"intra_op_parallelism\"?");
  }
  aio.block_size = a.integer({"block_size"}, aio.block_size, 1, kMax);
  aio.queue_depth = a.integer({"queue_depth"}, aio.queue_depth, 1, kMax);
  aio.intra_op_parallelism = a.integer({threads}, aio.intra_op_parallelism, 1, 1 << 16);
  aio.single_submit = a.boolean({"single_submit"}, aio.single_submit);
  aio.overlap_events = a.boolean({"overlap_events"}, aio.overlap_events);
  aio.use_gds = a.boolean({"use_gds"}, aio.use_gds);
  note_ignored_keys(a, notes);
}

nlohmann::ordered_json zero_optimization_to_json(const ZeroConfig& c) {
  using OJ = nlohmann::ordered_json;
  auto path = [](const std::string& p) { return p.empty() ? OJ(nullptr) : OJ(p); };
  OJ z;
  z["stage"] = c.stage;
  z["contiguous_gradients"] = c.contiguous_gradients;
  z["reduce_scatter"] = c.reduce_scatter;
  z["reduce_bucket_size"] = c.reduce_bucket_size;
  z["use_multi_rank_bucket_allreduce"] = c.use_multi_rank_bucket_allreduce;
  z["allgather_partitions"] = c.allgather_partitions;
  z["allgather_bucket_size"] = c.allgather_bucket_size;
  z["overlap_comm"] = c.overlap_comm;
  z["load_from_fp32_weights"] = c.load_from_fp32_weights;
  z["elastic_checkpoint"] = c.elastic_checkpoint;
  const auto& p = c.offload_param;
  z["offload_param"] = {{"device", to_string(p.device)},  {"nvme_path", path(p.nvme_path)},
                        {"buffer_count", p.buffer_count}, {"buffer_size", p.buffer_size},
                        {"max_in_cpu", p.max_in_cpu},     {"pin_memory", p.pin_memory}};
  const auto& o = c.offload_optimizer;
  z["offload_optimizer"] = {{"device", to_string(o.device)},    {"nvme_path", path(o.nvme_path)},
                            {"buffer_count", o.buffer_count},   {"pin_memory", o.pin_memory},
                            {"pipeline_read", o.pipeline_read}, {"pipeline_write", o.pipeline_write},
                            {"fast_init", o.fast_init},         {"ratio", o.ratio},
                            {"super_offload", o.super_offload}, {"cpuadam_cores_perc", o.cpuadam_cores_perc}};
  z["sub_group_size"] = c.sub_group_size;
  if (c.stage == 3) {  // below stage 3 DeepSpeed ignores them (accepted on input with a note), so they are left out
    z["stage3_prefetch_bucket_size"] = c.prefetch_bucket_size;
    z["stage3_param_persistence_threshold"] = c.param_persistence_threshold;
    z["stage3_model_persistence_threshold"] = c.model_persistence_threshold;
    z["stage3_max_live_parameters"] = c.max_live_parameters;
    z["stage3_max_reuse_distance"] = c.max_reuse_distance;
    z["stage3_gather_16bit_weights_on_model_save"] = c.gather_16bit_weights_on_model_save;
    z["stage3_module_granularity_threshold"] = c.module_granularity_threshold;
    z["stage3_use_all_reduce_for_fetch_params"] = c.use_all_reduce_for_fetch_params;
    z["stage3_allgather_sequential"] = c.allgather_sequential;
  }
  z["ignore_unused_parameters"] = c.ignore_unused_parameters;
  z["legacy_stage1"] = c.legacy_stage1;
  z["round_robin_gradients"] = c.round_robin_gradients;
  z["zero_hpz_partition_size"] = c.zero_hpz_partition_size;
  z["zero_quantized_weights"] = c.zero_quantized_weights;
  z["zero_quantized_nontrainable_weights"] = c.zero_quantized_nontrainable_weights;
  z["zero_quantized_gradients"] = c.zero_quantized_gradients;
  z["mics_shard_size"] = c.mics_shard_size;
  z["mics_hierarchical_params_gather"] = c.mics_hierarchical_params_gather;
  z["memory_efficient_linear"] = c.memory_efficient_linear;
  return z;
}

nlohmann::ordered_json aio_to_json(const AioConfig& a, const DeepSpeedVersion& v) {
  return {{"block_size", a.block_size},
          {"queue_depth", a.queue_depth},
          {v >= kAioIntraOpParallelismSince ? "intra_op_parallelism" : "thread_count", a.intra_op_parallelism},
          {"single_submit", a.single_submit},
          {"overlap_events", a.overlap_events},
          {"use_gds", a.use_gds}};
}

}  // namespace zs::core::detail
