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

// DeepSpeed's swap helpers (swap_tensor/utils.py): AIO_ALIGNED_BYTES = 1024 (MIN_AIO_BYTES: param_swap).
constexpr int64_t kAioAlignedBytes = 1024;

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
struct TransientPeak {
  int64_t activations = 0, grads = 0, live_numel = 0, total = 0;
};
TransientPeak fwd_bwd_peak(const ModelSpec& m, const Strategy& s, const ActivationBytes& a,
                           const std::vector<TraceStep>& trace, const CoordinatorReplay* rep, bool grads_transient) {
  const auto modules_p = shared_module_table(m);
  const auto tensors_p = shared_tensor_table(m);
  const auto& modules = *modules_p;
  const auto& tensors = *tensors_p;
  const int64_t lp = bytes_per_element(s.model_dtype());
  const auto& ac = s.activation_checkpointing;
  const bool ckpt = ac.enabled, cpu_ckpt = ac.enabled && ac.cpu_checkpointing;
  const int64_t segment = ckpt ? ceil_div(m.layers, std::clamp<int64_t>(ac.number_checkpoints.value_or(m.layers), 1, m.layers)) : 1;
  std::vector<size_t> t2p(tensors.size(), 0);
  std::vector<int64_t> numel;
  for (size_t t = 0; t < tensors.size(); ++t) {
    t2p[t] = tensors[t].tied ? t2p[0] : numel.size();
    if (!tensors[t].tied) numel.push_back(tensors[t].numel);
  }
  std::vector<std::vector<size_t>> mparams(modules.size());
  for (size_t i = 0; i < modules.size(); ++i)
    for (size_t t : modules[i].tensors)
      if (std::find(mparams[i].begin(), mparams[i].end(), t2p[t]) == mparams[i].end()) mparams[i].push_back(t2p[t]);
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
      if (!ckpt && blast) act += a.per_layer_full;
      if (ckpt && bfirst && seg_start) {
        act += a.per_layer_checkpoint;
        if (cpu_ckpt) act_free += a.per_layer_checkpoint;  // moved to pinned host memory after the block
      }
    } else if (trace[st].pass == Pass::recompute) {
      const int64_t seg_first = l / segment * segment, seg_last = std::min(seg_first + segment, m.layers) - 1;
      if (l == seg_last && bfirst) act += (cpu_ckpt ? a.per_layer_checkpoint : 0) + (seg_last - seg_first + 1) * a.per_layer_full;
    } else {
      if (bfirst) act_free += a.per_layer_full + (ckpt && seg_start ? a.per_layer_checkpoint : 0);
      if (i == head) act_free += a.head_and_loss;
      if (i == 0) act_free += a.embedding;
      if (grads_transient)
        for (size_t p : mparams[i])
          if (first[p] == static_cast<int64_t>(st)) grads += lp * numel[p];
    }
    const int64_t live = rep ? rep->steps[st].live_numel_during : 0;
    const int64_t total = act + grads + lp * live;
    if (total > best.total) best = {act, grads, live, total};
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

bool stores_attention_scores(const MemoryOptions& o, const Strategy& s) {
  return !o.flash_attention || s.run.launch.attn_implementation == AttnImplementation::eager;
}

ActivationBytes activation_bytes(const ModelSpec& m, const Strategy& s, const MemoryOptions& o) {
  ActivationBytes a;
  const int64_t sb = s.run.seq_len * s.micro_batch_per_gpu;
  const int64_t e = bytes_per_element(s.model_dtype());  // activations are stored in the model dtype
  const int64_t h = m.hidden, f = m.ffn_hidden;
  const int64_t q = m.heads * m.head_dim, kv = m.kv_heads * m.head_dim;
  const bool dropout = m.arch == Arch::gpt;  // GPT-2 has dropout 0.1; LLaMA-family configs have none
  const int64_t mask = dropout ? 1 : 0;      // a dropout mask is one byte per element
  int64_t layer = 0;
  layer += 2 * e * sb * h;                    // two norm inputs
  layer += e * sb * h;                        // QKV projection input
  layer += e * sb * (q + 2 * kv);             // Q, K, V
  layer += e * sb * q;                        // attention output = out-projection input
  layer += mask * sb * h;                     // attention-output dropout mask
  if (!stores_attention_scores(o, s)) {
    layer += 4 * m.heads * sb;                // fp32 log-sum-exp per row
  } else {
    // softmax output, its dropout mask, dropout output: [b, a, s, s]
    layer += (e + mask + (dropout ? e : 0)) * m.heads * sb * s.run.seq_len;
  }
  if (m.activation == Activation::swiglu) {
    layer += e * sb * h + 4 * e * sb * f;     // MLP input, gate, up, silu(gate), product
  } else {
    layer += e * sb * h + 2 * e * sb * f;     // MLP input, fc output (gelu input), gelu output
  }
  layer += mask * sb * h;                     // MLP dropout mask
  a.per_layer_full = layer;
  a.per_layer_checkpoint = e * sb * h;
  a.embedding = mask * sb * h;
  // final norm input, head input, lp logits, fp32 logits for the loss, fp32 logit gradient
  a.head_and_loss = 2 * e * sb * h + (e + 4 + 4) * sb * m.vocab;

  const auto& ac = s.activation_checkpointing;
  if (ac.enabled) {
    const int64_t n_ckpt = std::clamp<int64_t>(ac.number_checkpoints.value_or(m.layers), 1, m.layers);
    const int64_t segment = ceil_div(m.layers, n_ckpt);
    const int64_t stored = ceil_div(m.layers, segment) * a.per_layer_checkpoint;  // one input per segment
    if (ac.cpu_checkpointing) a.cpu_checkpoints = stored;
    a.gpu_peak = (ac.cpu_checkpointing ? a.per_layer_checkpoint : stored) + a.embedding +
                 std::max(segment * a.per_layer_full, a.head_and_loss);
  } else {
    a.gpu_peak = m.layers * a.per_layer_full + a.embedding + a.head_and_loss;
  }
  return a;
}

PartitionSizes partition_sizes(const ModelSpec& m, const Strategy& s) {
  PartitionSizes z;
  const int64_t world = s.world();
  const int stage = s.zero.stage;
  z.params = parameter_count(m);
  z.partition = stage >= 1 ? ceil_div(z.params, world) : z.params;
  z.lp_bytes = bytes_per_element(s.model_dtype());
  z.largest_module = largest_layer_params(m);
  const auto tensors_p = shared_tensor_table(m);
  const auto& tensors = *tensors_p;
  for (const auto& t : tensors) z.largest_param = std::max(z.largest_param, t.numel);

  if (stage < 3) {
    z.largest_sub_group = z.partition;
    return z;
  }
  // ZeRO-3 partitions each parameter separately; sub-groups close once they reach sub_group_size.
  const Layout l = make_layout(m, s, Schedule::deepspeed);
  for (int64_t g : l.sub_groups) z.largest_sub_group = std::max(z.largest_sub_group, g);

  if (s.zero.offload_param.device == OffloadDevice::nvme) {
    // _create_param_groups_fp16_flat_cpu_memory: the first max_in_cpu partition elements stay in pinned CPU
    // memory; swappable partitions after that live on NVMe (the layout's lp_home), padded for aio.
    const int64_t align_numel = std::max<int64_t>(1, kAioAlignedBytes * s.aio.intra_op_parallelism / z.lp_bytes);
    const int64_t in_cpu_budget = std::min(l.partition_elements, s.zero.offload_param.max_in_cpu);
    z.param_partition_in_cpu = in_cpu_budget;
    int64_t cum = 0;
    for (const auto& p : l.params) {
      cum += p.part;
      if (p.lp_home == Tier::nvme) {
        z.param_partition_on_nvme += align_up(p.part, align_numel);
        z.largest_nvme_param_partition = std::max(z.largest_nvme_param_partition, align_up(p.part, align_numel));
      } else if (cum > in_cpu_budget) {
        z.param_partition_in_cpu += p.part;  // too small to swap: stays in CPU memory
      }
    }
  }
  return z;
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
  int64_t P = 0, p = 0, lp = 0;
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
    P = ps.params;
    p = ps.partition;
    lp = ps.lp_bytes;
    mixed = s.model_dtype() != Precision::fp32;
    master_b = (s.fp16.fp16_master_weights_and_grads || s.bf16.bf16_master_weights_and_grads) ? 2 : 4;
    state_b = s.bf16.bf16_optimizer_states ? 2 : 4;
    gacc_b = bytes_per_element(s.grad_accum_dtype.value_or(s.model_dtype()));
    opt_dev = layout.optimizer_device;
    par_dev = layout.param_device;
    opt_off = opt_dev != OffloadDevice::none;
    pin_opt = z.offload_optimizer.pin_memory;
    part = frac_label(stage >= 1 ? s.world() : 1);
    dt = to_string(s.model_dtype());
    trace = module_trace(m, s.activation_checkpointing.enabled);
  }
};

void add_states_stage0(MemoryContext& c) {
  c.gpu.add("lp_params", c.dt + " params", c.lp * c.P);
  c.gpu.add("lp_grads", c.dt + " grads", c.lp * c.P);
  if (c.mixed) {
    c.gpu.add("fp32_master", "fp32 master params", c.master_b * c.P);
    c.gpu.add("fp32_grads", "fp32 grads (flat master grads)", 4 * c.P);
  }
  c.gpu.add("adam_m_v", "Adam m and v", 2 * c.state_b * c.P);
}

void add_states_stage1_2(MemoryContext& c) {
  const auto& z = c.z;
  const int64_t lp = c.lp, p = c.p;
  c.gpu.add("lp_params", c.dt + " params (full on every rank)", lp * c.P);
  if (c.stage == 1) c.gpu.add("lp_grads", c.dt + " grads (full; stage 1 partitions only optimizer states)", lp * c.P);
  if (!c.opt_off) {
    if (c.stage == 2) c.gpu.add("lp_grads", c.dt + " grads" + c.part, lp * p);
    c.gpu.add("fp32_grads", "fp32 grads" + c.part, 4 * p);
    c.gpu.add("fp32_master", "fp32 master params" + c.part, c.master_b * p);
    c.gpu.add("adam_m_v", "Adam m and v" + c.part, 2 * c.state_b * p);
  } else {
    c.cpu.add("fp32_master", "fp32 master params" + c.part, c.master_b * p, c.pin_opt);
    c.cpu.add("fp32_grads", "fp32 grads" + c.part, 4 * p, true);
    c.cpu.add("adam_m_v", "Adam m and v" + c.part + " (CPU Adam)", 2 * c.state_b * p);
    c.cpu.add("lp_copy_back", c.dt + " copy-back buffer" + c.part, lp * p, true);
    if (c.s.gradient_accumulation_steps > 1) c.cpu.add("grad_accum", c.dt + " grad accumulation" + c.part, lp * p, true);
    c.gpu.add("offload_staging", "largest-param grad staging (temp_grad_buffer_for_gpu_offload)", lp * c.ps.largest_param);
    c.cpu.add("offload_staging", "largest-param grad staging (temp_grad_buffer_for_cpu_offload)",
              lp * c.ps.largest_param, true);
  }
  if (z.contiguous_gradients)
    c.gpu.add("comm_buckets",
              "IPG reduce bucket" + std::string(z.overlap_comm ? " x2 (overlap_comm double buffer)" : ""),
              lp * z.reduce_bucket_size * (z.overlap_comm ? 2 : 1));
}

// ZeRO-3's 16-bit parameter partitions: on the GPU, in CPU memory, or (offload_param nvme) the first max_in_cpu
// elements in CPU memory and the rest swapped through buffer_count swap buffers — with DeepSpeed's asserts.
void add_zero3_params(MemoryContext& c) {
  const auto& z = c.z;
  const int64_t lp = c.lp;
  if (c.par_dev == OffloadDevice::none) {
    c.gpu.add("lp_params", c.dt + " param partitions" + c.part, lp * c.p);
    return;
  }
  if (c.par_dev == OffloadDevice::cpu) {
    c.cpu.add("lp_params", c.dt + " param partitions" + c.part + " (offload_param cpu)", lp * c.p,
              z.offload_param.pin_memory);
    return;
  }
  c.cpu.add("lp_params", c.dt + " param partitions kept in CPU (max_in_cpu)", lp * c.ps.param_partition_in_cpu,
            z.offload_param.pin_memory);
  c.nvme.add("lp_params", c.dt + " param partitions swapped to NVMe", lp * c.ps.param_partition_on_nvme);
  c.cpu.add("param_swap_buffers", "param swap buffers (buffer_count x buffer_size)",
            lp * z.offload_param.buffer_count * align_up(z.offload_param.buffer_size, kAioAlignedBytes / lp), true);
  c.cpu.add("param_swap_reserve", "updated-param swap buffer (largest sub-group)",
            lp * align_up(c.ps.largest_sub_group, kAioAlignedBytes / lp), true);
  if (c.ps.largest_nvme_param_partition > z.offload_param.buffer_size)
    c.r.problems.push_back("offload_param.buffer_size " + std::to_string(z.offload_param.buffer_size) +
                           " elements is smaller than the largest NVMe parameter partition (" +
                           std::to_string(c.ps.largest_nvme_param_partition) +
                           " elements): DeepSpeed asserts \"More elements ... than buffer size\" (issue #3506); "
                           "raise offload_param.buffer_size");
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
    c.cpu.add("fp32_master", "fp32 master params" + c.part, c.master_b * on_cpu, c.pin_opt);
    c.cpu.add("fp32_grads", "fp32 grads" + c.part, 4 * on_cpu, true);
    c.cpu.add("adam_m_v", "Adam m and v" + c.part + " (CPU Adam)", 2 * c.state_b * on_cpu);
    return;
  }
  const int64_t align4 = kAioAlignedBytes * c.s.aio.intra_op_parallelism / 4;
  c.nvme.add("fp32_master", "fp32 master params" + c.part, c.master_b * align_up(on_cpu, align4));
  c.nvme.add("adam_m_v", "Adam m and v" + c.part, 2 * c.state_b * align_up(on_cpu, align4));
  c.nvme.add("fp32_grads", "fp32 grads" + c.part, 4 * align_up(on_cpu, align4));
  const int64_t count = z.offload_optimizer.buffer_count;
  c.cpu.add("opt_swap_buffers", "optimizer swap buffers (buffer_count x largest sub-group, fp32)",
            4 * count * align_up(c.ps.largest_sub_group, align4), true);
  const int64_t need = (z.offload_optimizer.pipeline_read && z.offload_optimizer.pipeline_write) ? 12
                       : (z.offload_optimizer.pipeline_read || z.offload_optimizer.pipeline_write) ? 8 : 4;
  if (count < need)
    c.r.problems.push_back("offload_optimizer.buffer_count " + std::to_string(count) + " < " + std::to_string(need) +
                           " buffers the optimizer swapper needs with pipeline_read=" +
                           (z.offload_optimizer.pipeline_read ? "true" : "false") +
                           ", pipeline_write=" + (z.offload_optimizer.pipeline_write ? "true" : "false") +
                           ": DeepSpeed asserts \"ran out of swap buffers, try increasing 'buffer_count'\"");
}

void add_states_zero3(MemoryContext& c) {
  const auto& z = c.z;
  c.rep = replay_coordinator(c.m, c.trace, z, param_swap(c.m, c.s));
  c.r.zero3_persistent_numel = c.rep.persistent_numel;
  add_zero3_params(c);
  c.gpu.add("persistent_params", c.dt + " persistent params (numel <= param_persistence_threshold, full)",
            c.lp * c.rep.persistent_numel);
  if (z.zero_hpz_partition_size > 1)
    c.gpu.add("hpz_secondary", "ZeRO++ hpZ secondary param partition", c.lp * ceil_div(c.P, z.zero_hpz_partition_size));
  if (!c.opt_off) {
    c.gpu.add("lp_grads", c.dt + " grad partitions" + c.part, c.gacc_b * c.p);
    c.gpu.add("fp32_master", "fp32 master params" + c.part, c.master_b * c.p);
    c.gpu.add("adam_m_v", "Adam m and v" + c.part, 2 * c.state_b * c.p);
  } else {
    add_zero3_offloaded_optimizer(c);
  }
  c.gpu.add("comm_buckets", "IPG reduce-scatter bucket (reduce_bucket_size)", c.lp * z.reduce_bucket_size);
}

// Activations, gradients and gathered params at the forward/backward peak, and the buffers that live only after
// the backward (counted above its peak).
void add_transients(MemoryContext& c, const MemoryOptions& o) {
  const auto& z = c.z;
  const auto& s = c.s;
  c.r.activations = activation_bytes(c.m, s, o);
  const TransientPeak fb =
      fwd_bwd_peak(c.m, s, c.r.activations, c.trace, c.stage == 3 ? &c.rep : nullptr, c.stage >= 2);
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
  if (c.stage == 0) {
    // buffered_allreduce_fallback: each reduce_bucket_size bucket of grads is flattened into a fresh buffer.
    const int64_t cb = s.communication_data_type ? bytes_per_element(*s.communication_data_type) : c.lp;
    int64_t bucket = 0, largest = 0;
    for (const auto& t : *shared_tensor_table(c.m)) {
      if (t.tied) continue;
      if (bucket > 0 && bucket + t.numel > z.reduce_bucket_size) bucket = 0;
      bucket += t.numel;
      largest = std::max(largest, bucket);
    }
    c.gpu.add("allreduce_peak", "all-reduce bucket after backward (reduce_bucket_size), above the backward peak",
              cb * largest - fb.total, false, true);
  }
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
  add_transients(c, o);
  add_fixed_and_per_node(c, o);
  finish_report(r, hw);
  add_notes(r, s, o);
  return r;
}

}  // namespace zs::core
