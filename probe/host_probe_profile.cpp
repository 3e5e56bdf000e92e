// apply_host_probe and role_scaled_fit_rms (host_probe.h): the host device's measured figures folded into a hardware
// profile for the simulator, and how well that profile prices the modules.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>

#include "core/cost_model.h"
#include "probe/host_probe.h"
#include "probe/probe.h"

namespace zs::probe {

double role_scaled_fit_rms(const core::Hardware& h, const HostDeviceProbe& p) {
  if (p.forward_ops.size() != p.forward_s.size()) return 0;
  core::CostModel c = core::cost_model_for(h, core::Precision::bf16);
  core::apply_model_shapes(c, p.model, p.tokens);
  double se = 0;
  int n = 0;
  for (size_t i = 0; i < p.forward_ops.size(); ++i) {
    const double t = core::compute_time_s(c, p.forward_ops[i]);
    if (t <= 0 || p.forward_s[i] <= 0) continue;
    se += (t - p.forward_s[i]) * (t - p.forward_s[i]) / (p.forward_s[i] * p.forward_s[i]);
    ++n;
  }
  return n > 0 ? std::sqrt(se / n) : 0;
}

std::vector<Handoff> sleeping_stream_handoffs(const core::Plan& plan, const core::Trace& t, double spin_s) {
  const size_t n = plan.ops.size();
  std::vector<const core::TraceEvent*> ev(n, nullptr);
  for (const auto& e : t.events)
    if (e.op < n && !ev[e.op]) ev[e.op] = &e;
  std::vector<Handoff> out;
  std::map<core::Stream, double> stream_end;  // the end of each stream's previous op; absent: the step's start
  for (size_t i = 0; i < n; ++i) {
    const core::Op& op = plan.ops[i];
    const core::TraceEvent* e = ev[i];
    if (!e) continue;
    const auto it = stream_end.find(op.stream);
    const double since = it == stream_end.end() ? 0.0 : it->second;
    double ready = since;
    core::Stream from = op.stream;
    for (uint32_t d : op.deps)
      if (d < n && ev[d] && ev[d]->end_s > ready) {
        ready = ev[d]->end_s;
        from = plan.ops[d].stream;
      }
    if (op.kind != core::OpKind::alloc && op.kind != core::OpKind::release && ready - since > spin_s &&
        e->start_s >= ready)
      out.push_back({from, op.stream, e->start_s - ready});
    stream_end[op.stream] = std::max(since, e->end_s);
  }
  return out;
}

double trimmed_mean(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t cut = v.size() / 10;
  double sum = 0;
  for (size_t i = cut; i < v.size() - cut; ++i) sum += v[i];
  return sum / static_cast<double>(v.size() - 2 * cut);
}

HostDeviceProbe with_run_wakes(HostDeviceProbe p, const std::vector<Handoff>& handoffs,
                               const std::vector<double>& pool_wakes, const std::string& steps) {
  std::string from;
  if (handoffs.size() >= kMinWakeSamples) {
    std::vector<double> all;
    std::map<std::pair<core::Stream, core::Stream>, std::vector<double>> pairs;
    for (const auto& h : handoffs) {
      all.push_back(h.delay_s);
      pairs[{h.from, h.to}].push_back(h.delay_s);
    }
    p.stream_wake_s = trimmed_mean(all);
    from = "the trimmed mean of " + std::to_string(handoffs.size()) + " hand-offs to a sleeping stream";
    p.stream_wake_pairs.clear();
    for (const auto& [k, v] : pairs)
      if (v.size() >= kMinWakeSamples)
        p.stream_wake_pairs.push_back({core::to_string(k.first), core::to_string(k.second), trimmed_mean(v) * 1e6});
    if (!p.stream_wake_pairs.empty())
      from += " (per stream pair with " + std::to_string(kMinWakeSamples) + " or more, its own)";
  }
  if (pool_wakes.size() >= kMinWakeSamples) {
    p.pool_wake_s = trimmed_mean(pool_wakes);
    from += from.empty() ? "the trimmed mean of " : " and of ";
    from += std::to_string(pool_wakes.size()) + " wake-ups of CPU Adam's pool workers";
  }
  if (!from.empty()) p.wakes_from = from + " in " + steps;
  return p;
}

namespace {

// Σ num over Σ den of the samples between the lowest and the highest tenth of num / den (1 without any).
double trimmed_ratio(std::vector<std::pair<double, double>> v) {
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first * b.second < b.first * a.second; });
  const size_t cut = v.size() / 10;
  double num = 0, den = 0;
  for (size_t i = cut; i < v.size() - cut; ++i) {
    num += v[i].first;
    den += v[i].second;
  }
  return den > 0 ? num / den : 1.0;
}

// "reads x0.52 (117 swaps)", or "reads as measured (3 swaps)" under kMinWakeSamples.
std::string scaled_as(const char* what, double x, size_t n, const char* of) {
  char b[128];
  if (n < kMinWakeSamples)
    std::snprintf(b, sizeof b, "%s as measured (%zu %s)", what, n, of);
  else
    std::snprintf(b, sizeof b, "%s x%.2f (%zu %s)", what, x, n, of);
  return b;
}

}  // namespace

std::vector<RunSwap> run_swaps(const core::Plan& plan, const core::Trace& t) {
  const size_t n = plan.ops.size();
  std::vector<const core::TraceEvent*> ev(n, nullptr);
  for (const auto& e : t.events)
    if (e.op < n && !ev[e.op]) ev[e.op] = &e;
  std::vector<size_t> sw;  // the swaps' op ids, in start order
  for (size_t i = 0; i < n; ++i) {
    const core::Op& op = plan.ops[i];
    if ((op.kind == core::OpKind::nvme_read || op.kind == core::OpKind::nvme_write) && op.bytes > 0 && ev[i])
      sw.push_back(i);
  }
  std::stable_sort(sw.begin(), sw.end(), [&](size_t a, size_t b) { return ev[a]->start_s < ev[b]->start_s; });
  auto tensors_meet = [](const core::Op& a, const core::Op& b) {
    return a.tensor >= 0 && b.tensor >= 0 && a.tensor < b.tensor + std::max(b.tensor_count, 1) &&
           b.tensor < a.tensor + std::max(a.tensor_count, 1);
  };
  std::vector<RunSwap> out;
  for (size_t i : sw) {
    const core::Op& op = plan.ops[i];
    const core::TraceEvent& e = *ev[i];
    bool alone = true;
    double rested_since = 0, written = -1;  // the step's start; none this step
    for (size_t k : sw) {
      if (k == i) continue;
      const core::TraceEvent& o = *ev[k];
      if (o.start_s < e.end_s && o.end_s > e.start_s) {
        alone = false;
        break;
      }
      if (o.end_s > e.start_s) continue;
      rested_since = std::max(rested_since, o.end_s);
      if (plan.ops[k].kind == core::OpKind::nvme_write && tensors_meet(op, plan.ops[k]))
        written = std::max(written, o.end_s);
    }
    if (!alone) continue;
    out.push_back({op.kind == core::OpKind::nvme_read, op.bytes, e.end_s - e.start_s,
                   written >= 0 ? e.start_s - written : e.start_s, e.start_s - rested_since});
  }
  return out;
}

HostDeviceProbe with_run_swaps(HostDeviceProbe p, const core::Hardware& base, const std::vector<RunSwap>& swaps,
                               const std::string& steps) {
  if (p.nvme_large <= 0) return p;
  p.swap_scale_read = p.swap_scale_write = p.swap_scale_idle = 1;
  p.swaps_from.clear();
  const core::CostModel c = core::cost_model_for(apply_host_probe(base, p), core::Precision::bf16);
  struct Priced {
    int dir;  // 0 write, 1 read
    double took, line, extra;
  };
  std::vector<Priced> steady[2], after_rest;
  for (const auto& s : swaps) {
    const double line = core::nvme_swap_time_s(c, s.read, s.bytes, s.age_s);
    const double extra = core::nvme_idle_extra_s(c, s.idle_s);
    if (s.took_s <= 0 || line <= 0) continue;
    const Priced x{s.read ? 1 : 0, s.took_s, line, extra};
    (extra < 0.25 * line ? steady[x.dir] : after_rest).push_back(x);
  }
  double scale[2] = {1, 1};
  for (int d = 0; d < 2; ++d) {
    if (steady[d].size() < kMinWakeSamples) continue;
    std::vector<std::pair<double, double>> v;
    for (const auto& x : steady[d]) v.emplace_back(x.took - x.extra, x.line);
    scale[d] = std::clamp(trimmed_ratio(std::move(v)), 0.05, 20.0);
  }
  if (after_rest.size() >= kMinWakeSamples) {
    std::vector<std::pair<double, double>> v;
    for (const auto& x : after_rest) v.emplace_back(x.took - scale[x.dir] * x.line, x.extra);
    p.swap_scale_idle = std::clamp(trimmed_ratio(std::move(v)), 0.0, 5.0);
  }
  p.swap_scale_write = scale[0];
  p.swap_scale_read = scale[1];
  p.swaps_from = "scaled to the run's own swaps that ran alone in " + steps + ": " +
                 scaled_as("reads", scale[1], steady[1].size(), "swaps") + ", " +
                 scaled_as("writes", scale[0], steady[0].size(), "swaps") + ", " +
                 scaled_as("the extra after an idle path", p.swap_scale_idle, after_rest.size(), "swaps");
  return p;
}

std::vector<RunCpuOp> run_cpu_ops(const core::Plan& plan, const core::Trace& t, double spin_s) {
  const size_t n = plan.ops.size();
  std::vector<const core::TraceEvent*> ev(n, nullptr);
  for (const auto& e : t.events)
    if (e.op < n && !ev[e.op]) ev[e.op] = &e;
  std::vector<size_t> cpu;  // op ids, in start order
  for (size_t i = 0; i < n; ++i)
    if ((plan.ops[i].kind == core::OpKind::adam_cpu || plan.ops[i].kind == core::OpKind::cast_cpu) && ev[i])
      cpu.push_back(i);
  std::stable_sort(cpu.begin(), cpu.end(), [&](size_t a, size_t b) { return ev[a]->start_s < ev[b]->start_s; });
  std::vector<RunCpuOp> out;
  double busy_until = 0, first_start = 0, rest = 0;  // busy_until: the last CPU op's end, else the step's start
  for (size_t i : cpu) {
    const core::TraceEvent& e = *ev[i];
    if (out.empty() || e.start_s - busy_until > spin_s) {  // the simulator's rule: the pool idle past its poll
      first_start = e.start_s;
      rest = e.start_s - busy_until;
    }
    busy_until = std::max(busy_until, e.end_s);
    out.push_back({plan.ops[i], e.end_s - e.start_s, rest, e.start_s - first_start});
  }
  return out;
}

HostDeviceProbe with_run_cpu_ops(HostDeviceProbe p, const core::Hardware& base, const std::vector<RunCpuOp>& ops,
                                 const std::string& steps) {
  if (p.opt_elements <= 0 || p.adam_s <= 0 || p.unscale_s <= 0 || p.cast_s <= 0) return p;
  p.adam_op_scale = p.cast_op_scale = 1;
  p.cpu_ops_from.clear();
  const core::CostModel c = core::cost_model_for(apply_host_probe(base, p), core::Precision::bf16);
  std::vector<std::pair<double, double>> v[2];  // [0] Adam, [1] the cast: (measured − wake-up, priced work)
  for (const auto& x : ops) {
    const double work = core::compute_time_s(c, x.op);
    if (work <= 0 || x.took_s <= 0) continue;
    double wake = 0;  // as the simulator prices a sleeping pool: the workers join cpu_pool_wake_s after the run's start
    if (c.cpu_pool_threads > 1 && c.cpu_pool_wake_s > 0 && x.rest_s > c.stream_spin_s)
      wake = core::cpu_pool_wake_extra_s(c, work, c.cpu_pool_wake_s - x.after_s);
    v[x.op.kind == core::OpKind::cast_cpu ? 1 : 0].emplace_back(x.took_s - wake, work);
  }
  double scale[2] = {1, 1};
  for (int k = 0; k < 2; ++k)
    if (v[k].size() >= kMinWakeSamples) scale[k] = std::clamp(trimmed_ratio(v[k]), 0.05, 20.0);
  p.adam_op_scale = scale[0];
  p.cast_op_scale = scale[1];
  p.cpu_ops_from = "scaled to the run's own CPU ops in " + steps + ": " +
                   scaled_as("Adam", scale[0], v[0].size(), "ops") + ", " +
                   scaled_as("the cast", scale[1], v[1].size(), "ops");
  return p;
}

std::vector<RunCopy> run_copies(const core::Plan& plan, const core::Trace& t) {
  const size_t n = plan.ops.size();
  std::vector<const core::TraceEvent*> ev(n, nullptr);
  for (const auto& e : t.events)
    if (e.op < n && !ev[e.op]) ev[e.op] = &e;
  std::vector<size_t> cp;
  for (size_t i = 0; i < n; ++i) {
    const core::Op& op = plan.ops[i];
    if ((op.kind != core::OpKind::h2d && op.kind != core::OpKind::d2h) || op.bytes <= 0 || !ev[i]) continue;
    const bool pageable = op.tensor >= 0 && static_cast<size_t>(op.tensor) < plan.tensors.size() &&
                          plan.tensors[static_cast<size_t>(op.tensor)].home == core::Tier::cpu &&
                          !plan.tensors[static_cast<size_t>(op.tensor)].pinned;  // as sim/executor.cpp routes it
    if (!pageable) cp.push_back(i);
  }
  std::vector<RunCopy> out;
  for (size_t i : cp) {
    const core::TraceEvent& e = *ev[i];
    bool alone = true;
    for (size_t k : cp)
      if (k != i && ev[k]->start_s < e.end_s && ev[k]->end_s > e.start_s) alone = false;
    if (alone) out.push_back({plan.ops[i].kind == core::OpKind::h2d, plan.ops[i].bytes, e.end_s - e.start_s});
  }
  return out;
}

HostDeviceProbe with_run_copies(HostDeviceProbe p, const std::vector<RunCopy>& copies, const std::string& steps) {
  if (p.copy_Bps <= 0) return p;
  std::vector<std::pair<double, double>> v[2];  // [0] D2H, [1] H2D: (measured − fixed cost, bytes at the rate)
  for (const auto& x : copies)
    if (x.took_s > 0) v[x.h2d ? 1 : 0].emplace_back(x.took_s - p.copy_latency_s, x.bytes / p.copy_Bps);
  double scale[2] = {1, 1};
  for (int k = 0; k < 2; ++k)
    if (v[k].size() >= kMinWakeSamples) scale[k] = std::clamp(trimmed_ratio(v[k]), 0.05, 20.0);
  p.d2h_scale = scale[0];
  p.h2d_scale = scale[1];
  p.copies_from = "scaled to the run's own copies that ran alone in " + steps + ": " +
                  scaled_as("H2D", scale[1], v[1].size(), "copies") + ", " +
                  scaled_as("D2H", scale[0], v[0].size(), "copies");
  return p;
}

core::Hardware apply_host_probe(core::Hardware h, const HostDeviceProbe& p) {
  const double tflops = p.gemm_flops_per_s / 1e12;
  h.gpu.peak_tflops_fp16 = h.gpu.peak_tflops_bf16 = h.gpu.peak_tflops_fp32 = tflops;
  h.measured.gemm_efficiency = 1.0;
  if (p.backward_ratio > 0) h.measured.backward_time_ratio = p.backward_ratio;
  if (p.stream_wake_s > 0) {
    h.measured.stream_spin_us = p.stream_spin_s * 1e6;
    h.measured.stream_wake_latency_us = p.stream_wake_s * 1e6;
    if (p.pool_wake_s > 0) h.measured.cpu_pool_wake_us = p.pool_wake_s * 1e6;
    h.measured.stream_wake_pairs = p.stream_wake_pairs;
  }
  h.gpu.hbm_GBps = p.mem_bound_Bps / 1e9 / core::gpu_type_defaults(h.gpu.name).hbm_efficiency;
  const double copy = p.copy_Bps / 1e9;
  h.links.pcie_h2d_GBps = copy / p.h2d_scale;
  h.links.pcie_d2h_GBps = copy / p.d2h_scale;
  h.links.pcie_host_GBps = std::max(h.links.pcie_h2d_GBps, h.links.pcie_d2h_GBps);
  h.measured.pcie_latency_us = p.copy_latency_s * 1e6;
  // Per module role: the measured time over the cost model's at these rates (sums over the role's modules, so the
  // big ones weigh most), forward and backward. Two rates price a GEMM module and a norm alike, where the reference
  // kernels differ by role (an embedding gather runs at ~30 GB/s, a GELU's tanh far below its bytes' rate).
  h.measured.module_time_scale.clear();
  if (!p.forward_ops.empty() && p.forward_ops.size() == p.forward_s.size() &&
      p.backward_ops.size() == p.backward_s.size()) {
    core::CostModel c = core::cost_model_for(h, core::Precision::bf16);  // every peak is the fitted rate
    core::apply_model_shapes(c, p.model, p.tokens);
    std::array<double, core::kModuleRoles> tf{}, ff{}, tb{}, fb{};
    for (size_t i = 0; i < p.forward_ops.size(); ++i) {
      const auto r = static_cast<size_t>(p.forward_ops[i].role);
      tf[r] += p.forward_s[i];
      ff[r] += core::compute_time_s(c, p.forward_ops[i]);
      tb[r] += p.backward_s[i];
      fb[r] += core::compute_time_s(c, p.backward_ops[i]);
    }
    auto clamp = [](double x) { return std::clamp(x, 1e-3, 1e3); };
    for (int r = 1; r < core::kModuleRoles; ++r)
      if (ff[r] > 0 && fb[r] > 0 && tf[r] > 0 && tb[r] > 0)
        h.measured.module_time_scale.push_back(
            {core::to_string(static_cast<core::ModuleRole>(r)), clamp(tf[r] / ff[r]), clamp(tb[r] / fb[r])});
  }
  const double rms_after = role_scaled_fit_rms(h, p);
  char opt[640] = "";
  if (p.opt_elements > 0 && p.adam_s > 0 && p.unscale_s > 0 && p.cast_s > 0) {
    // The Adam op's scale stretches its two terms (the Adam kernel and the unscale pass) alike (with_run_cpu_ops).
    h.measured.cpu_adam_params_per_s = static_cast<double>(p.opt_elements) / p.adam_s / p.adam_op_scale;
    h.measured.cpu_adam_threads = p.opt_threads;
    h.measured.cpu_pass_GBps = static_cast<double>(p.unscale_bytes) / p.unscale_s / 1e9 / p.adam_op_scale;
    h.measured.cpu_cast_GBps = static_cast<double>(p.cast_bytes) / p.cast_s / 1e9 / p.cast_op_scale;
    std::snprintf(opt, sizeof opt,
                  ", CPU Adam %.3g params/s, the unscale %.1f GB/s and the cast %.1f GB/s at the run's group (%lld "
                  "elements, %d threads%s%s)",
                  *h.measured.cpu_adam_params_per_s, *h.measured.cpu_pass_GBps, *h.measured.cpu_cast_GBps,
                  static_cast<long long>(p.opt_elements), p.opt_threads, p.cpu_ops_from.empty() ? "" : "; the passes ",
                  p.cpu_ops_from.c_str());
  }
  char nv[1024] = "";
  if (p.nvme_large > 0) {
    auto& ms = h.measured;
    const SwapLine r = fit_swap_line(p.nvme_small, p.read_small_s[0], p.nvme_large, p.read_large_s[0]);
    const SwapLine w = fit_swap_line(p.nvme_small, p.write_small_s[0], p.nvme_large, p.write_large_s[0]);
    const SwapLine rh = fit_swap_line(p.nvme_small, p.read_small_s[1], p.nvme_large, p.read_large_s[1]);
    const SwapLine wh = fit_swap_line(p.nvme_small, p.write_small_s[1], p.nvme_large, p.write_large_s[1]);
    // A scale stretches a line's latency and its time per byte alike (with_run_swaps).
    const double sr = p.swap_scale_read, sw = p.swap_scale_write;
    ms.nvme_read_GBps = r.rate_Bps / 1e9 / sr;
    ms.nvme_read_latency_us = r.latency_s * 1e6 * sr;
    ms.nvme_write_GBps = w.rate_Bps / 1e9 / sw;
    ms.nvme_write_latency_us = w.latency_s * 1e6 * sw;
    ms.nvme_hot_read_GBps = rh.rate_Bps / 1e9 / sr;
    ms.nvme_hot_read_latency_us = rh.latency_s * 1e6 * sr;
    ms.nvme_hot_write_GBps = wh.rate_Bps / 1e9 / sw;
    ms.nvme_hot_write_latency_us = wh.latency_s * 1e6 * sw;
    ms.nvme_settle_s = kNvmeSettleS;
    ms.aio_block_size = p.aio_block_size;  // the lines are the ds_config's own: core::apply_aio scales by 1
    ms.aio_queue_depth = p.aio_queue_depth;
    std::snprintf(nv, sizeof nv,
                  ", NVMe swaps of %lld and %lld bytes: read %.0f us + bytes at %.2f GB/s, write %.0f us + bytes at "
                  "%.2f GB/s (%.1f s old; at once read %.0f us + %.2f GB/s, write %.0f us + %.2f GB/s)",
                  static_cast<long long>(p.nvme_small), static_cast<long long>(p.nvme_large), r.latency_s * 1e6,
                  r.rate_Bps / 1e9, w.latency_s * 1e6, w.rate_Bps / 1e9, kNvmeSettleS, rh.latency_s * 1e6,
                  rh.rate_Bps / 1e9, wh.latency_s * 1e6, wh.rate_Bps / 1e9);
    ms.nvme_idle_wake.clear();
    std::string idle = "; the first after an idle path";
    for (const auto& [s, x] : p.nvme_idle) {
      ms.nvme_idle_wake.push_back({s * 1e3, x * 1e6 * p.swap_scale_idle});
      char b[64];
      std::snprintf(b, sizeof b, " +%.0f us after %.0f ms,", x * 1e6, s * 1e3);
      idle += b;
    }
    if (!p.nvme_idle.empty())
      idle.pop_back();
    else
      idle.clear();
    if (!p.swaps_from.empty()) idle += "; the sessions' swaps " + p.swaps_from;
    std::strncat(nv, idle.c_str(), sizeof nv - std::strlen(nv) - 1);
  }
  std::string roles;  // the per-role scales
  for (const auto& x : h.measured.module_time_scale) {
    char b[96];
    std::snprintf(b, sizeof b, "%s %s %.2f / %.2f", roles.empty() ? ":" : ",", x.role.c_str(), x.forward, x.backward);
    roles += b;
  }
  std::string pool;
  if (p.stream_wake_s > 0 && !p.stream_wake_pairs.empty()) {
    pool = " (by the pair that hands over:";
    for (const auto& w : p.stream_wake_pairs) {
      char b[96];
      std::snprintf(b, sizeof b, " %s -> %s %.0f us,", w.from.c_str(), w.to.c_str(), w.wake_us);
      pool += b;
    }
    pool.back() = ')';
  }
  if (p.pool_wake_s > 0 && p.stream_wake_s > 0) {
    char b[96];
    std::snprintf(b, sizeof b, " and CPU Adam's pool workers asleep join %.0f us late", p.pool_wake_s * 1e6);
    pool += b;
  }
  // The optimizer's CPU passes sampled with the module times, or from the sessions with the swaps.
  const std::string rest = p.opt_elements > 0 && !p.opt_times.empty()
                               ? "the optimizer's CPU passes: the same passes; the swaps"
                               : "the optimizer's CPU passes and swaps";
  char src[4096];
  std::snprintf(
      src, sizeof src,
      "%s; host device measured by zerosim train --write-device-profile: GEMM %.2f GFLOP/s, memory-bound "
      "%.0f GB/s (1000000 would mean: folded into the GEMM rate; fit over %d module forwards, rms %.0f%%, %.0f%% "
      "after the per-role time scales%s), "
      "backward %.2fx "
      "forward, copies %.2f GB/s + %.2f us each%s, a stream asleep after %.0f us idle starts %.0f us late%s (%s)%s%s "
      "(module times: %s; %s: the mean of %d sessions)",
      h.source.c_str(), p.gemm_flops_per_s / 1e9, p.mem_bound_Bps / 1e9, p.modules, 100 * p.fit_rms_rel,
      100 * rms_after, roles.c_str(), p.backward_ratio, copy, p.copy_latency_s * 1e6,
      p.copies_from.empty() ? "" : (" (" + p.copies_from + ")").c_str(), p.stream_spin_s * 1e6, p.stream_wake_s * 1e6,
      pool.c_str(), p.wakes_from.c_str(), opt, nv, p.module_times.c_str(), rest.c_str(), p.sessions);
  h.source = src;
  if (h.name.find("host device") == std::string::npos) h.name += " + host device";
  return h;
}

}  // namespace zs::probe
