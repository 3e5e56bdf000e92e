#include "core/memory.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/layout.h"
#include "core/param_coordinator.h"

namespace zs::core {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t align_up(int64_t a, int64_t b) { return b <= 1 ? a : ceil_div(a, b) * b; }


struct Builder {
  TierReport& t;
  void add(const char* key, std::string label, int64_t bytes, bool pinned = false, bool transient = false) {
    if (bytes <= 0) return;
    t.items.push_back({key, std::move(label), bytes, pinned, transient});
  }
};

std::string frac_label(int64_t world) { return world > 1 ? " (1/" + std::to_string(world) + " partition)" : ""; }

// GPU bytes that come and go during forward and backward — activations, full gradients until their hook hands
// them to the reduction (stages 2, 3; a tied embedding's until its last use), gathered ZeRO-3 parameters —
// walked over the module trace, so the breakdown shows one moment, their joint peak, not a sum of peaks at
// different times. The plan (core/scheduler_steps.cpp) allocates the same bytes op by op; a test holds the
// two equal. Checkpointing keeps one block input per segment; a segment's activations return at its recompute.
// `backward_extra` is held through the backward (the reduction temporaries of gradient hooks).
struct TransientPeak {
  int64_t activations = 0, grads = 0, live_numel = 0, extra = 0, total = 0;
};
TransientPeak fwd_bwd_peak(const ModelSpec& m, const Strategy& s, const ActivationBytes& a,
                           const std::vector<TraceStep>& trace, const CoordinatorReplay* rep, bool grads_transient,
                           int64_t backward_extra) {
  const auto modules_p = shared_module_table(m);
  const auto tensors_p = shared_tensor_table(m);
  const auto& modules = *modules_p;
  const auto& tensors = *tensors_p;
  const int64_t lp = bytes_per_element(s.model_dtype());
  const auto& ac = s.activation_checkpointing;
  const bool ckpt = ac.enabled, cpu_ckpt = ac.enabled && ac.cpu_checkpointing;
  const int64_t segment = 1;  // the model checkpoints every block (see activation_bytes)
  std::vector<size_t> t2p(tensors.size(), 0);
  std::vector<int64_t> numel;
  for (size_t t = 0; t < tensors.size(); ++t) {
    t2p[t] = tensors[t].tied ? t2p[0] : numel.size();
    if (!tensors[t].tied) numel.push_back(tensors[t].trainable ? tensors[t].numel : 0);  // gradient elements
  }
  std::vector<std::vector<size_t>> mparams(modules.size());
  std::vector<size_t> seen_in(numel.size(), modules.size());  // each module lists a parameter once (tied: wte's)
  for (size_t i = 0; i < modules.size(); ++i)
    for (size_t t : modules[i].tensors)
      if (seen_in[t2p[t]] != i) {
        seen_in[t2p[t]] = i;
        mparams[i].push_back(t2p[t]);
      }
  std::vector<int64_t> first(numel.size(), -1), last(numel.size(), -1);
  for (size_t st = 0; st < trace.size(); ++st)
    if (trace[st].pass == Pass::backward)
      for (size_t p : mparams[trace[st].module]) {
        if (first[p] < 0) first[p] = static_cast<int64_t>(st);
        last[p] = static_cast<int64_t>(st);
      }
  std::vector<int64_t> mfirst(static_cast<size_t>(m.layers), -1), mlast(static_cast<size_t>(m.layers), -1);
  for (size_t i = 0; i < modules.size(); ++i) {
    const int64_t l = modules[i].layer;
    if (l < 0) continue;
    if (mfirst[l] < 0) mfirst[l] = static_cast<int64_t>(i);
    mlast[l] = static_cast<int64_t>(i);
  }
  const size_t head = modules.size() - 1;
  int64_t act = 0, grads = 0;
  TransientPeak best;
  best.total = -1;
  for (size_t st = 0; st < trace.size(); ++st) {
    const size_t i = trace[st].module;
    const int64_t l = modules[i].layer;
    const bool bfirst = l >= 0 && mfirst[l] == static_cast<int64_t>(i);
    const bool blast = l >= 0 && mlast[l] == static_cast<int64_t>(i);
    const bool seg_start = l >= 0 && l % segment == 0;
    int64_t act_free = 0;
    if (trace[st].pass == Pass::forward) {
      if (i == 0) act += a.embedding;
      if (i == head) act += a.head_and_loss;
      if (!ckpt && blast) act += a.layer_full(l);
      if (ckpt && bfirst && seg_start) {
        act += a.per_layer_checkpoint;
        if (cpu_ckpt) act_free += a.per_layer_checkpoint;  // moved to pinned host memory after the block
      }
    } else if (trace[st].pass == Pass::recompute) {
      const int64_t seg_first = l / segment * segment, seg_last = std::min(seg_first + segment, m.layers) - 1;
      if (l == seg_last && bfirst) act += (cpu_ckpt ? a.per_layer_checkpoint : 0) + a.layers_full(seg_first, seg_last);
    } else {
      if (bfirst) act_free += a.layer_full(l) + (ckpt && seg_start ? a.per_layer_checkpoint : 0);
      if (i == head) act_free += a.head_and_loss;
      if (i == 0) act_free += a.embedding;
      if (grads_transient)
        for (size_t p : mparams[i])
          if (first[p] == static_cast<int64_t>(st)) grads += lp * numel[p];
    }
    const int64_t live = rep ? rep->steps[st].live_numel_during : 0;
    const int64_t extra = trace[st].pass == Pass::forward ? 0 : backward_extra;
    const int64_t total = act + grads + lp * live + extra;
    if (total > best.total) best = {act, grads, live, extra, total};
    act -= act_free;
    if (grads_transient && trace[st].pass == Pass::backward)
      for (size_t p : mparams[i])
        if (last[p] == static_cast<int64_t>(st)) grads -= lp * numel[p];
  }
  return best;
}

std::string ratio_text(double ratio) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", ratio);
  return buf;
}

}  // namespace

std::string to_string(Tier t) {
  switch (t) {
    case Tier::gpu: return "gpu";
    case Tier::cpu: return "cpu";
    case Tier::nvme: return "nvme";
  }
  return "?";
}

int64_t TierReport::item(const std::string& key) const {
  int64_t b = 0;
  for (const auto& i : items)
    if (i.key == key) b += i.bytes;
  return b;
}

std::string format_bytes(int64_t bytes) {
  char buf[64];
  double b = static_cast<double>(bytes);
  if (std::abs(b) >= 1024.0 * kGiB)
    std::snprintf(buf, sizeof buf, "%.2f TiB", b / (1024.0 * kGiB));
  else if (std::abs(b) >= kGiB)
    std::snprintf(buf, sizeof buf, "%.1f GiB", b / kGiB);
  else
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1024.0 * 1024.0));
  return buf;
}

namespace {

// What every part of the memory model reads: the run's sizes and dtypes, and one Builder per tier (CPU and NVMe
// per rank here, scaled to the node at the end).
struct MemoryContext {
  const ModelSpec& m;
  const Strategy& s;
  const ZeroConfig& z;
  const Layout layout;
  const PartitionSizes ps;
  MemoryReport& r;
  Builder gpu, cpu, nvme;
  int stage = 0;
  int64_t P = 0, T = 0, p = 0, F = 0, lp = 0;  // stored, trainable, trainable partition, frozen on this rank
  bool mixed = false;
  int64_t master_b = 4, state_b = 4, gacc_b = 2;
  OffloadDevice opt_dev = OffloadDevice::none, par_dev = OffloadDevice::none;
  bool opt_off = false, pin_opt = false;
  std::string part, dt;
  std::vector<TraceStep> trace;
  CoordinatorReplay rep;

  MemoryContext(const ModelSpec& m_, const Strategy& s_, MemoryReport& r_)
      : m(m_), s(s_), z(s_.zero), layout(make_layout(m_, s_, Schedule::deepspeed)), ps(partition_sizes(m_, s_)),
        r(r_), gpu{r_.tier(Tier::gpu)}, cpu{r_.tier(Tier::cpu)}, nvme{r_.tier(Tier::nvme)} {
    stage = z.stage;
    P = ps.stored;
    T = ps.trainable;
    p = ps.partition;
    F = ps.frozen_partition;
    lp = ps.lp_bytes;
    mixed = s.model_dtype() != Precision::fp32;
    master_b = (s.fp16.fp16_master_weights_and_grads || s.bf16.bf16_master_weights_and_grads) ? 2 : 4;
    state_b = s.bf16.bf16_optimizer_states ? 2 : 4;
    gacc_b = bytes_per_element(s.grad_accum_dtype.value_or(s.model_dtype()));
    opt_dev = layout.optimizer_device;
    par_dev = layout.param_device;
    opt_off = opt_dev != OffloadDevice::none;
    pin_opt = z.offload_optimizer.pin_memory;
    part = frac_label(stage >= 1 ? partition_world(s) : 1);
    dt = to_string(s.model_dtype());
    trace = module_trace(m, s.activation_checkpointing.enabled);
  }
  int64_t frozen_stored() const { return P - T; }
  std::string frozen_label() const {
    const QuantSpec& q = m.adapter.quant;
    if (!q.enabled()) return dt + " params";
    return "base: " + to_string(q.kind) + " " + std::to_string(q.bits()) + "-bit packed weights, " + dt + " others";
  }
};

// Stages 0-2 keep every 16-bit parameter whole on each GPU; a LoRA run's frozen base among them, quantised or not,
// with bitsandbytes' quantisation constants beside the packed weights.
void add_lp_params_whole(MemoryContext& c, const std::string& label) {
  c.gpu.add("lp_params", label, c.lp * (c.P - c.frozen_stored()));
  c.gpu.add("lp_params", "frozen " + c.frozen_label() + " (full on every rank; DeepSpeed partitions trainable ones only)",
            c.lp * c.frozen_stored());
}

void add_states_stage0(MemoryContext& c) {
  add_lp_params_whole(c, c.dt + " params");
  c.gpu.add("lp_grads", c.dt + " grads", c.lp * c.T);
  if (c.mixed) {
    c.gpu.add("fp32_master", "fp32 master params", c.master_b * c.T);
    c.gpu.add("fp32_grads", "fp32 grads (flat master grads)", 4 * c.T);
  }
  c.gpu.add("adam_m_v", "Adam m and v", 2 * c.state_b * c.T);
}

// BF16_Optimizer (engine.py _do_optimizer_sanity_check picks it for bf16 + stage 1 + fp32 grad accumulation):
// flat bf16 params, a full fp32 gradient buffer the backward hooks accumulate into (bf16_optimizer.py
// _setup_for_real_optimizer), the fp32 master and Adam states of this rank's partition.
void add_states_bf16_optimizer(MemoryContext& c) {
  add_lp_params_whole(c, c.dt + " params (flat, full on every rank)");
  // immediate_grad_update false (the default): the bf16 grads live until backward_epilogue folds them in.
  c.gpu.add("lp_grads", c.dt + " grads (full, until the backward's end)", c.lp * c.T);
  c.gpu.add("fp32_grads", "fp32 grad accumulation buffer (full; BF16_Optimizer)", 4 * c.T);
  c.gpu.add("fp32_master", "fp32 master params" + c.part, c.master_b * c.p);
  c.gpu.add("adam_m_v", "Adam m and v" + c.part, 2 * c.state_b * c.p);
}

void add_states_stage1_2(MemoryContext& c) {
  if (uses_bf16_optimizer(c.s)) return add_states_bf16_optimizer(c);
  const auto& z = c.z;
  const int64_t lp = c.lp, p = c.p;
  add_lp_params_whole(c, c.dt + " params (full on every rank)");
  if (c.stage == 1) c.gpu.add("lp_grads", c.dt + " grads (full; stage 1 partitions only optimizer states)", lp * c.T);
  if (!c.opt_off) {
    if (c.stage == 2) c.gpu.add("lp_grads", c.dt + " grads" + c.part, lp * p);
    c.gpu.add("fp32_grads", "fp32 grads" + c.part, 4 * p);
    c.gpu.add("fp32_master", "fp32 master params" + c.part, c.master_b * p);
    c.gpu.add("adam_m_v", "Adam m and v" + c.part, 2 * c.state_b * p);
  } else {
    // stage_1_and_2.py pins its CPU buffers only if offload_optimizer.pin_memory (cpu_offload_pin_memory).
    c.cpu.add("fp32_master", "fp32 master params" + c.part, c.master_b * p, c.pin_opt);
    c.cpu.add("fp32_grads", "fp32 grads" + c.part, 4 * p, c.pin_opt);
    c.cpu.add("adam_m_v", "Adam m and v" + c.part + " (CPU Adam)", 2 * c.state_b * p);
    c.cpu.add("lp_copy_back", c.dt + " copy-back buffer" + c.part, lp * p, c.pin_opt);
    if (c.s.gradient_accumulation_steps > 1) c.cpu.add("grad_accum", c.dt + " grad accumulation" + c.part, lp * p, c.pin_opt);
    c.gpu.add("offload_staging", "largest-param grad staging (temp_grad_buffer_for_gpu_offload)", lp * c.ps.largest_param);
    c.cpu.add("offload_staging", "largest-param grad staging (temp_grad_buffer_for_cpu_offload)",
              lp * c.ps.largest_param, c.pin_opt);
  }
  if (contiguous_gradients_in_effect(c.s)) {
    const int64_t cb = bytes_per_element(communication_dtype(c.s));
    c.gpu.add("comm_buckets",
              "IPG reduce bucket" + std::string(z.overlap_comm ? " x2 (overlap_comm double buffer)" : ""),
              cb * z.reduce_bucket_size * (z.overlap_comm ? 2 : 1));
  }
}

// ZeRO-3's 16-bit parameter partitions: on the GPU, in CPU memory, or (offload_param nvme) the first max_in_cpu
// elements in CPU memory and the rest swapped through buffer_count swap buffers — with DeepSpeed's asserts.
void add_zero3_params(MemoryContext& c) {
  const auto& z = c.z;
  const int64_t lp = c.lp;
  if (c.par_dev == OffloadDevice::none) {
    c.gpu.add("lp_params", c.dt + " param partitions" + c.part, lp * c.p);
    c.gpu.add("lp_params", "frozen param partitions (" + c.frozen_label() + ")" + c.part, lp * c.F);
    return;
  }
  if (c.par_dev == OffloadDevice::cpu) {
    // The flat CPU buffer is pinned whatever offload_param.pin_memory says (get_accelerator().pin_memory); frozen
    // partitions stay where zero.Init put them, pinned as offload_param.pin_memory says.
    c.cpu.add("lp_params", c.dt + " param partitions" + c.part + " (offload_param cpu)", lp * c.p, true);
    c.cpu.add("lp_params", "frozen param partitions (" + c.frozen_label() + ")" + c.part + " (offload_param cpu)", lp * c.F,
              z.offload_param.pin_memory);
    return;
  }
  c.cpu.add("lp_params", c.dt + " param partitions kept in CPU (flat buffer of max_in_cpu, small partitions)",
            lp * c.ps.param_partition_in_cpu, true);
  c.nvme.add("lp_params", c.dt + " param partitions swapped to NVMe", lp * c.ps.param_partition_on_nvme);
  // With aio.use_gds (DeepNVMe GPUDirect) the swapper's buffers are GPU memory (partitioned_param_swapper.py).
  const int64_t swap_buffers =
      lp * z.offload_param.buffer_count * align_up(z.offload_param.buffer_size, aio_aligned_numel(c.s.aio, lp));
  if (c.s.aio.use_gds)
    c.gpu.add("param_swap_buffers", "param swap buffers (buffer_count x buffer_size, GDS: on the GPU)", swap_buffers);
  else
    c.cpu.add("param_swap_buffers", "param swap buffers (buffer_count x buffer_size)", swap_buffers, true);
  c.cpu.add("param_swap_reserve", "updated-param swap buffer (full sizes of the largest sub-group's params)",
            lp * c.layout.lp_reuse_buffer_elements, true);
  if (c.ps.largest_nvme_param_partition > z.offload_param.buffer_size)
    c.r.problems.push_back("offload_param.buffer_size " + std::to_string(z.offload_param.buffer_size) +
                           " elements is smaller than the largest swappable parameter partition (" +
                           std::to_string(c.ps.largest_nvme_param_partition) +
                           " elements): zero.Init's swap get_buffer asserts \"More elements ... than buffer size\" "
                           "(issue #3506), whatever max_in_cpu keeps in CPU later; raise offload_param.buffer_size");
  if (c.rep.swap_buffer_shortfall > 0)
    c.r.problems.push_back(
        "offload_param.buffer_count " + std::to_string(z.offload_param.buffer_count) + " is too few: fetching " +
        (*shared_module_table(c.m))[c.trace[c.rep.shortfall_step].module].name + " (trace step " +
        std::to_string(c.rep.shortfall_step) + ") needs " + std::to_string(c.rep.swap_buffer_shortfall) +
        " more swap buffers while parameters still gathered (stage3_max_reuse_distance) or swapped in ahead "
        "hold theirs: DeepSpeed "
        "asserts \"Not enough swap in buffers\"; raise offload_param.buffer_count to " +
        std::to_string(c.rep.peak_swap_buffers) + " or lower stage3_max_reuse_distance");
}

// Twin-Flow (offload_optimizer.ratio < 1): DeepSpeed v0.19 steps whole sub-groups on the GPU, the first
// int((1 - ratio) x n) of the n (subgroup_to_device), so with one sub-group a ratio below 1 does nothing.
// Returns the partition elements that step on the GPU, and notes which.
int64_t twin_flow_gpu_share(MemoryContext& c) {
  const auto& z = c.z;
  if (z.offload_optimizer.ratio >= 1.0) return 0;
  int64_t on_gpu = 0;
  const std::vector<int64_t>& groups = c.layout.sub_groups;
  const auto n = static_cast<int64_t>(groups.size());
  const auto k = std::min(n, static_cast<int64_t>((1.0 - z.offload_optimizer.ratio) * static_cast<double>(n)));
  for (int64_t g = 0; g < k; ++g) on_gpu += groups[static_cast<size_t>(g)];
  const std::string where = c.opt_dev == OffloadDevice::nvme ? "NVMe" : "CPU";
  const std::string of_n = std::to_string(n) + " sub-group" + (n == 1 ? "" : "s");
  if (k == 0)
    c.r.notes.push_back("offload_optimizer.ratio " + ratio_text(z.offload_optimizer.ratio) + " with " + of_n +
                        ": DeepSpeed keeps all sub-groups on " + where + " (it puts the first int((1 - ratio) x " +
                        std::to_string(n) + ") = 0 on the GPU); lower sub_group_size");
  else
    c.r.notes.push_back("offload_optimizer.ratio " + ratio_text(z.offload_optimizer.ratio) + ": the first " +
                        std::to_string(k) + " of " + of_n + " (" + std::to_string(on_gpu) +
                        " partition elements) step on the GPU, the rest on " + where +
                        " (DeepSpeed v0.19 assigns whole sub-groups)");
  return on_gpu;
}

// ZeRO-3's offloaded optimizer: gradient partitions on the host, the states on CPU or NVMe (with the optimizer
// swapper's buffers), a Twin-Flow share on the GPU.
void add_zero3_offloaded_optimizer(MemoryContext& c) {
  const auto& z = c.z;
  const int64_t p = c.p;
  c.cpu.add("lp_grads", c.dt + " grad partitions (grad_partitions_flat_buffer)" + c.part, c.gacc_b * p, c.pin_opt);
  const int64_t on_gpu = twin_flow_gpu_share(c);
  const int64_t on_cpu = std::max<int64_t>(0, p - on_gpu);
  if (on_gpu > 0) {
    c.gpu.add("fp32_master", "fp32 master params (Twin-Flow GPU share)", c.master_b * on_gpu);
    c.gpu.add("adam_m_v", "Adam m and v (Twin-Flow GPU share)", 2 * c.state_b * on_gpu);
    c.gpu.add("fp32_grads", "fp32 grads (Twin-Flow GPU share)", 4 * on_gpu);
  }
  if (c.opt_dev == OffloadDevice::cpu) {
    // stage3.py _create_fp32_partitions: the master is a plain clone() (pageable); the sub-group gradient buffers
    // are pinned only with offload_optimizer.pin_memory (_optimizer_states_and_gradient_swap_in's neighbour).
    c.cpu.add("fp32_master", "fp32 master params" + c.part, c.master_b * on_cpu, false);
    c.cpu.add("fp32_grads", "fp32 grads" + c.part, 4 * on_cpu, c.pin_opt);
    c.cpu.add("adam_m_v", "Adam m and v" + c.part + " (CPU Adam)", 2 * c.state_b * on_cpu);
    return;
  }
  const int64_t align4 = aio_aligned_numel(c.s.aio, 4);
  c.nvme.add("fp32_master", "fp32 master params" + c.part, c.master_b * align_up(on_cpu, align4));
  c.nvme.add("adam_m_v", "Adam m and v" + c.part, 2 * c.state_b * align_up(on_cpu, align4));
  c.nvme.add("fp32_grads", "fp32 grads" + c.part, 4 * align_up(on_cpu, align4));
  const int64_t count = z.offload_optimizer.buffer_count;
  c.cpu.add("opt_swap_buffers", "optimizer swap buffers (buffer_count x largest sub-group, master dtype)",
            c.master_b * count * align_up(c.ps.largest_sub_group, aio_aligned_numel(c.s.aio, c.master_b)), true);
  const int64_t need =
      optimizer_swap_buffers_needed(z.offload_optimizer, static_cast<int64_t>(c.layout.sub_groups.size()));
  if (count < need)
    c.r.problems.push_back("offload_optimizer.buffer_count " + std::to_string(count) + " < " + std::to_string(need) +
                           " buffers the optimizer swapper needs with " +
                           std::to_string(c.layout.sub_groups.size()) + " sub-group(s), pipeline_read=" +
                           (z.offload_optimizer.pipeline_read ? "true" : "false") +
                           ", pipeline_write=" + (z.offload_optimizer.pipeline_write ? "true" : "false") +
                           ": DeepSpeed asserts \"ran out of swap buffers, try increasing 'buffer_count'\"");
}

// MiCS (mics_shard_size): DeepSpeed's refusals (zero/mics.py).
void check_mics(MemoryContext& c) {
  const int64_t shard = c.z.mics_shard_size, world = c.s.world();
  if (shard <= 0 || shard >= world) return;
  if (world % shard != 0)
    c.r.problems.push_back("mics_shard_size " + std::to_string(shard) + " does not divide the world size " +
                           std::to_string(world) + ": MiCS_CommGroups cannot form equal shard groups");
  if (c.opt_off)
    c.r.problems.push_back("MiCS with offload_optimizer: DeepSpeed raises \"Local sharding has no support for CPU "
                           "offloading\" (mics.py allreduce_mics_shard_grads)");
}

void add_states_zero3(MemoryContext& c) {
  const auto& z = c.z;
  check_mics(c);
  c.rep = replay_coordinator(c.m, c.trace, z, param_swap(c.m, c.s));
  c.r.zero3_persistent_numel = c.rep.persistent_numel;
  add_zero3_params(c);
  c.gpu.add("persistent_params", c.dt + " persistent params (numel <= param_persistence_threshold, full)",
            c.lp * c.rep.persistent_numel);
  if (z.zero_hpz_partition_size > 1)
    c.gpu.add("hpz_secondary", "ZeRO++ hpZ secondary param partition", c.lp * ceil_div(c.P, z.zero_hpz_partition_size));
  if (!c.opt_off) {
    c.gpu.add("lp_grads", c.dt + " grad partitions" + c.part, c.gacc_b * c.p);
    // _create_fp32_partitions: an fp32 model's partition already is the master (no copy).
    if (c.mixed) c.gpu.add("fp32_master", "fp32 master params" + c.part, c.master_b * c.p);
    c.gpu.add("adam_m_v", "Adam m and v" + c.part, 2 * c.state_b * c.p);
  } else {
    add_zero3_offloaded_optimizer(c);
  }
  if (contiguous_gradients_in_effect(c.s))  // stage3.py: the IPG buffer exists only with contiguous_gradients
    c.gpu.add("comm_buckets", "IPG reduce-scatter bucket (reduce_bucket_size, communication dtype)",
              bytes_per_element(communication_dtype(c.s)) * z.reduce_bucket_size);
}

// A LoRA / QLoRA run: bitsandbytes' quantisation constants (not parameters: on every GPU whatever the stage), and
// what DeepSpeed or bitsandbytes refuse.
void add_adapter_items(MemoryContext& c) {
  const QuantSpec& q = c.m.adapter.quant;
  if (!q.enabled()) return;
  c.gpu.add("quant_constants",
            std::string("bitsandbytes quantisation constants (") +
                (q.kind == QuantKind::int8 ? "int8 row scales" : q.double_quant ? "double-quantised absmax" : "absmax") +
                ", every GPU)",
            c.ps.quant_constant_bytes);
  if (!c.mixed)
    c.r.problems.push_back("a bitsandbytes-quantised base with fp32 training: QLoRA runs in bf16 or fp16 (set bf16 or "
                           "fp16 enabled); zerosim does not model fp32 with a quantised base");
  if (c.stage == 3 && q.kind == QuantKind::int8)
    c.r.problems.push_back("ZeRO-3 with an 8-bit (LLM.int8) base: DeepSpeed cannot partition Int8Params; use 4-bit "
                           "with bnb_4bit_quant_storage set to the model dtype, or ZeRO stage 2");
  else if (c.stage == 3 && q.storage != "bfloat16" && q.storage != "float16" && q.storage != "float32")
    c.r.problems.push_back("ZeRO-3 with bnb_4bit_quant_storage \"" + q.storage +
                           "\": zero.Init partitions floating-point parameters only; set bnb_4bit_quant_storage to "
                           "the model dtype (" + c.dt + ") as PEFT's QLoRA + DeepSpeed ZeRO-3 guide does");
}

// Activations, gradients and gathered params at the forward/backward peak, and the buffers that live only after
// the backward (counted above its peak).
void add_transients(MemoryContext& c, const MemoryOptions& o) {
  const auto& z = c.z;
  const auto& s = c.s;
  c.r.activations = activation_bytes(c.m, s, o);
  const TransientPeak fb =
      fwd_bwd_peak(c.m, s, c.r.activations, c.trace, c.stage == 3 ? &c.rep : nullptr, c.stage >= 2,
                   reduces_in_backward(s) ? reduce_temporaries_bytes(c.m, s) : 0);
  if (c.stage == 3) {
    c.r.zero3_peak_live_numel = fb.live_numel;
    c.gpu.add("zero3_working_set",
              "gathered params at the peak (prefetch " + std::to_string(z.prefetch_bucket_size) + ", reuse distance)",
              c.lp * fb.live_numel, false, true);
  }
  c.gpu.add("module_grads", "full grads not yet reduced at the peak (largest module, tied embedding)", fb.grads,
            false, true);
  c.gpu.add("activations",
            std::string("activations (micro batch ") + std::to_string(s.micro_batch_per_gpu) + ", seq " +
                std::to_string(s.run.seq_len) + (s.activation_checkpointing.enabled ? ", checkpointed)" : ")"),
            fb.activations, false, true);
  if (c.stage == 0 || uses_bf16_optimizer(s)) {
    // buffered_allreduce_fallback (engine.py, MEMORY_OPT_ALLREDUCE_SIZE buckets) after backward: each bucket of
    // gradients (16-bit; BF16_Optimizer's fp32) is flattened into a fresh buffer and cast to the communication dtype.
    const int64_t largest = largest_allreduce_bucket(c.m, kMemoryOptAllreduceSize);
    c.gpu.add("allreduce_peak", "all-reduce bucket after backward (flattened, cast to the communication dtype), above "
                                "the backward peak",
              allreduce_bucket_bytes(s, largest) - fb.total, false, true);
  }
  if (reduces_in_backward(s))
    c.gpu.add("reduce_temporaries", "gradient reduction temporaries (flattened bucket, partition copies), in backward",
              fb.extra, false, true);
  else if (c.stage == 1 && !uses_bf16_optimizer(s))
    c.gpu.add("reduce_temporaries", "gradient reduction temporaries after backward, above the backward peak",
              reduce_temporaries_bytes(c.m, s) - fb.total, false, true);
  if (c.stage == 3 && !c.opt_off)
    c.gpu.add("optimizer_peak", "fp32 grads of one sub-group during the optimizer step, above the backward peak",
              4 * c.ps.largest_sub_group - fb.total, false, true);
  c.cpu.add("activation_checkpoints", "activation checkpoints (cpu_checkpointing)", c.r.activations.cpu_checkpoints,
            true);
}

// The framework's fixed costs; then per node (every local rank holds its own CPU and NVMe share) and the
// initialisation peak: without zero.Init each rank materialises the whole model in fp32 on the host (the
// estimator's 4·gpn term); under zero.Init one layer at a time. Pinned partitions already exist then.
void add_fixed_and_per_node(MemoryContext& c, const MemoryOptions& o) {
  int64_t gpu_tensors = 0;
  for (const auto& i : c.r.tier(Tier::gpu).items) gpu_tensors += i.bytes;
  c.gpu.add("allocator_reserve", "caching-allocator fragmentation reserve",
            static_cast<int64_t>(o.allocator_reserve_frac * static_cast<double>(gpu_tensors)));
  c.gpu.add("cuda_context", "CUDA context, cuBLAS workspace, NCCL buffers",
            static_cast<int64_t>(o.cuda_context_GiB * kGiB));
  c.cpu.add("host_process", "framework process (Python, PyTorch, CUDA host libs)",
            static_cast<int64_t>(o.host_process_GiB * kGiB));

  const int64_t n_local = c.s.run.gpus_per_node;
  TierReport& cpu_rank = c.r.tier(Tier::cpu);
  for (auto& i : cpu_rank.items) i.bytes *= n_local;
  for (auto& i : c.r.tier(Tier::nvme).items) i.bytes *= n_local;
  int64_t steady = 0;
  for (const auto& i : cpu_rank.items) steady += i.bytes;
  const bool zi = c.stage == 3 && o.zero_init;
  const int64_t materialise = 4 * (zi ? c.ps.largest_module : c.P);
  const int64_t init_peak = n_local * (static_cast<int64_t>(o.host_process_GiB * kGiB) + materialise) +
                            cpu_rank.item("lp_params");
  if (init_peak > steady)
    c.cpu.add("init_peak", std::string("init peak above steady state (fp32 ") + (zi ? "largest layer" : "model") +
                               " per rank while building the model)",
              init_peak - steady, false, true);
}

// Totals per tier and the verdict: the worst overflow binds; if everything fits, the tightest tier.
void finish_report(MemoryReport& r, const Hardware& hw) {
  r.tier(Tier::gpu).scope = "per GPU";
  r.tier(Tier::cpu).scope = "per node";
  r.tier(Tier::nvme).scope = "per node";
  r.tier(Tier::gpu).capacity_bytes = hw.gpu.memory_bytes();
  r.tier(Tier::cpu).capacity_bytes = hw.cpu.memory_bytes();
  r.tier(Tier::nvme).capacity_bytes = hw.nvme.capacity_bytes();
  for (auto& t : r.tiers) {
    t.required_bytes = 0;
    t.pinned_bytes = 0;
    for (const auto& i : t.items) {
      t.required_bytes += i.bytes;
      if (i.pinned) t.pinned_bytes += i.bytes;
    }
  }
  double worst = -1;
  r.fits = r.problems.empty();
  for (Tier t : kTiers) {
    const auto& tr = r.tier(t);
    if (tr.required_bytes == 0) continue;
    if (!tr.fits()) r.fits = false;
    double ratio = tr.capacity_bytes > 0 ? static_cast<double>(tr.required_bytes) / static_cast<double>(tr.capacity_bytes)
                                         : 1e30;
    if (ratio > worst) {
      worst = ratio;
      r.binding = t;
    }
  }
}

void add_notes(MemoryReport& r, const Strategy& s, const MemoryOptions& o) {
  if (s.zero.stage == 3 && o.zero_init) r.notes.push_back("ZeRO-3 model assumed built under deepspeed.zero.Init (as HF does)");
  if (s.activation_checkpointing.enabled && s.activation_checkpointing.number_checkpoints)
    r.notes.push_back("activation_checkpointing.number_checkpoints " +
                      std::to_string(*s.activation_checkpointing.number_checkpoints) +
                      " sizes DeepSpeed's contiguous checkpoint buffers only; the model checkpoints every block");
  if (s.activation_checkpointing.partition_activations)
    r.notes.push_back("partition_activations splits checkpoints across model-parallel ranks; without model parallelism it saves nothing");
  if (!stores_attention_scores(o, s))
    r.notes.push_back("attention " + to_string(s.run.launch.attn_implementation) +
                      " (memory-efficient): no s^2 score storage");
  else
    r.notes.push_back("attention eager: the s^2 scores are stored for backward");
}

}  // namespace

MemoryReport memory_model(const ModelSpec& m, const Hardware& hw, const Strategy& s, const MemoryOptions& o) {
  MemoryReport r;
  r.tier(Tier::gpu).tier = Tier::gpu;
  r.tier(Tier::cpu).tier = Tier::cpu;
  r.tier(Tier::nvme).tier = Tier::nvme;
  MemoryContext c(m, s, r);
  r.sizes = c.ps;
  if (c.stage == 0)
    add_states_stage0(c);
  else if (c.stage <= 2)
    add_states_stage1_2(c);
  else
    add_states_zero3(c);
  add_adapter_items(c);
  add_transients(c, o);
  add_fixed_and_per_node(c, o);
  finish_report(r, hw);
  add_notes(r, s, o);
  return r;
}

}  // namespace zs::core
