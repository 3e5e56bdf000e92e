#include "probe/probe.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <thread>

#include "core/cost_model.h"
#include "exec/cpu_adam.h"
#include "exec/host_buffer.h"
#include "exec/pinned_buffer.h"
#include "exec/thread_pool.h"
#include "probe/membw.h"

namespace zs::probe {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string fmt(const char* f, double a) {
  char b[64];
  std::snprintf(b, sizeof b, f, a);
  return b;
}

std::string bytes_text(int64_t b) {
  if (b >= (int64_t{1} << 30) && b % (int64_t{1} << 30) == 0) return std::to_string(b >> 30) + " GiB";
  if (b >= (1 << 20)) return std::to_string(b >> 20) + " MiB";
  return std::to_string(b >> 10) + " KiB";
}

// One sample from several: the median of their median times (rates from those), the fastest of their peaks.
NvmeSample median_sample(const std::vector<NvmeSample>& v, int64_t bytes) {
  auto med = [&](double NvmeSample::*f) {
    std::vector<double> x;
    for (const auto& s : v) x.push_back(s.*f);
    std::sort(x.begin(), x.end());
    const size_t k = x.size();
    return k % 2 ? x[k / 2] : 0.5 * (x[k / 2 - 1] + x[k / 2]);
  };
  NvmeSample s = v.front();
  s.read_median_s = med(&NvmeSample::read_median_s);
  s.write_median_s = med(&NvmeSample::write_median_s);
  s.read_GBps = static_cast<double>(bytes) / s.read_median_s / 1e9;
  s.write_GBps = static_cast<double>(bytes) / s.write_median_s / 1e9;
  for (const auto& x : v) {
    s.read_peak_GBps = std::max(s.read_peak_GBps, x.read_peak_GBps);
    s.write_peak_GBps = std::max(s.write_peak_GBps, x.write_peak_GBps);
  }
  return s;
}

// Thread counts to time: 1, 2, 4, ... and all.
std::vector<int> thread_counts(int all) {
  std::vector<int> v;
  for (int t = 1; t < all; t *= 2) v.push_back(t);
  v.push_back(all);
  return v;
}

}  // namespace

SwapLine fit_swap_line(int64_t b1_bytes, double t1, int64_t b2_bytes, double t2) {
  const double b1 = static_cast<double>(b1_bytes), b2 = static_cast<double>(b2_bytes);
  double rate = t2 > t1 ? (b2 - b1) / (t2 - t1) : 0, lat = rate > 0 ? t1 - b1 / rate : -1;
  if (lat < 0) {
    rate = b2 / t2;
    lat = std::max(0.0, t1 - b1 / rate);
  }
  return {rate, lat};
}

namespace {

// Incompressible-ish content for probe swaps, every page touched.
void fill_swap_pattern(unsigned char* p, int64_t bytes) {
  for (int64_t i = 0; i < bytes; i += 8) {
    const uint64_t x = static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull;
    std::memcpy(p + i, &x, static_cast<size_t>(std::min<int64_t>(8, bytes - i)));
  }
}

double sorted_median(const std::vector<double>& v) {
  const size_t k = v.size();
  return k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
}

}  // namespace

core::Result<NvmeSample> measure_nvme(const std::vector<std::string>& paths, const exec::AioConfig& aio, int64_t bytes,
                                      int reps, bool checksums, std::vector<std::string>* warnings, int files,
                                      double settle_s) {
  exec::SwapperOptions so = exec::zero_copy_swapper_options(paths, aio);  // as the engine swaps
  so.checksums = checksums;
  auto sw = exec::Swapper::create(so);
  if (!sw) return sw.error();
  if (warnings)
    for (const auto& w : (*sw)->warnings())
      if (std::find(warnings->begin(), warnings->end(), w) == warnings->end()) warnings->push_back(w);
  auto buf = exec::PinnedBuffer::allocate(bytes, /*lock=*/true);  // page-locked, as the engine's swap buffers
  if (!buf) return buf.error();
  fill_swap_pattern(buf->data(), bytes);
  NvmeSample s;
  s.block_size = aio.block_size;
  s.queue_depth = aio.queue_depth;
  auto name = [](int f) { return "zerosim_probe_" + std::to_string(::getpid()) + "_" + std::to_string(f); };
  std::vector<double> tw, tr;
  for (int r = 0; r < std::max(reps, 1); ++r) {
    for (int f = 0; f < files; ++f) {
      auto t0 = Clock::now();
      auto h = (*sw)->swap_out(name(f), buf->data(), bytes, exec::SourceUse::borrow);  // zero-copy, as the engine swaps
      if (!h) return h.error();
      ZS_TRY(h->wait());
      if (r > 0 || reps < 2) tw.push_back(since(t0));  // a file's first write also fallocates: once per run
    }
    if (settle_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(settle_s));
    for (int f = 0; f < files; ++f) {
      auto t0 = Clock::now();
      auto hi = (*sw)->swap_in(name(f), buf->data(), bytes);
      if (!hi) return hi.error();
      ZS_TRY(hi->wait());
      tr.push_back(since(t0));
    }
  }
  for (int f = 0; f < files; ++f) ZS_TRY((*sw)->remove(name(f)));
  std::sort(tw.begin(), tw.end());
  std::sort(tr.begin(), tr.end());
  s.write_median_s = sorted_median(tw);
  s.read_median_s = sorted_median(tr);
  s.write_GBps = static_cast<double>(bytes) / s.write_median_s / 1e9;
  s.read_GBps = static_cast<double>(bytes) / s.read_median_s / 1e9;
  s.write_peak_GBps = static_cast<double>(bytes) / tw.front() / 1e9;
  s.read_peak_GBps = static_cast<double>(bytes) / tr.front() / 1e9;
  return s;
}

core::Result<std::vector<std::pair<double, double>>> measure_nvme_idle(const std::vector<std::string>& paths,
                                                                       const exec::AioConfig& aio, int64_t bytes,
                                                                       const std::vector<double>& idles_s, int rounds) {
  auto sw = exec::Swapper::create(exec::zero_copy_swapper_options(paths, aio));
  if (!sw) return sw.error();
  auto buf = exec::PinnedBuffer::allocate(bytes, /*lock=*/true);  // page-locked, as the engine's swap buffers
  if (!buf) return buf.error();
  fill_swap_pattern(buf->data(), bytes);
  auto name = [](int f) { return "zerosim_idle_" + std::to_string(::getpid()) + "_" + std::to_string(f); };
  for (int f = 0; f < 2; ++f) {
    auto h = (*sw)->swap_out(name(f), buf->data(), bytes, exec::SourceUse::borrow);
    if (!h) return h.error();
    ZS_TRY(h->wait());
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(kNvmeSettleS));  // settled data, as a step's state
  auto read = [&](int f) -> core::Result<double> {
    const auto t0 = Clock::now();
    auto h = (*sw)->swap_in(name(f), buf->data(), bytes);
    if (!h) return h.error();
    ZS_TRY(h->wait());
    return since(t0);
  };
  std::vector<std::vector<double>> extra(idles_s.size());
  auto rounds_of = [&]() -> core::Status {
    for (int r = 0; r < std::max(rounds, 1); ++r)
      for (size_t k = 0; k < idles_s.size(); ++k) {  // interleaved, so a drift of the disk's rate spreads over all
        std::this_thread::sleep_for(std::chrono::duration<double>(idles_s[k]));
        auto first = read(0);
        if (!first) return first.error();
        auto next = read(1);
        if (!next) return next.error();
        extra[k].push_back(*first - *next);
      }
    return {};
  };
  const core::Status st = rounds_of();
  for (int f = 0; f < 2; ++f) {
    const core::Status rm = (*sw)->remove(name(f));
    if (st.ok() && !rm.ok()) return rm.error();
  }
  if (!st.ok()) return st.error();
  std::vector<std::pair<double, double>> out;
  double floor = 0;
  for (size_t k = 0; k < idles_s.size(); ++k) {
    auto& v = extra[k];
    std::sort(v.begin(), v.end());
    const double med = sorted_median(v);
    floor = std::max(floor, med);  // a longer rest never costs less: noise that says so is noise
    out.emplace_back(idles_s[k], floor);
  }
  return out;
}

namespace {

void say(const ProbeOptions& o, const std::string& s) {
  if (o.progress) o.progress(s);
}

// A bad path fails at once, not after the DRAM and Adam runs.
core::Status check_nvme_paths(const std::vector<std::string>& paths) {
  for (const auto& path : paths) {
    auto d = exec::default_io_env()->probe_dir(path);
    if (!d)
      return core::bad_input("nvme path '" + path + "' is not usable: " + d.error().message +
                             " (it must be an existing directory we can create files in)");
  }
  return {};
}

// Twice the last-level cache (so DRAM, not cache, is measured), 256 MiB..2 GiB, ≤ RAM/8; 32 MiB with --quick.
int64_t dram_working_set_bytes(bool quick) {
  int64_t ws = std::clamp<int64_t>(2 * last_level_cache_bytes(), 256 << 20, int64_t{2} << 30);
  ws = std::min<int64_t>(ws, physical_memory_bytes() / 8);
  return quick ? 32 << 20 : ws;
}

// STREAM triad over the working set on the pool's `threads`, then on one thread.
void measure_triad(const ProbeOptions& o, exec::ThreadPool& pool, int threads, int64_t ws, int reps, DramResult& d) {
  d.threads = threads;
  d.triad_GBps = triad_GBps(pool, ws / 3 / 8, reps);
  say(o, "dram: triad " + fmt("%.1f", d.triad_GBps) + " GB/s (" + std::to_string(d.threads) + " threads, " +
             bytes_text(ws) + " working set" + (o.quick ? ", --quick: may be cache-resident" : "") + ")");
  exec::ThreadPool one(1);
  d.triad_one_thread_GBps = triad_GBps(one, ws / 3 / 8, reps);
  say(o, "dram: triad " + fmt("%.1f", d.triad_one_thread_GBps) + " GB/s on one thread");
}

// CPU Adam's params/s on 1, 2, 4, ... and all `threads` over `b`: the best of `reps` steps after a warm-up.
core::Status measure_cpu_adam(const ProbeOptions& o, const exec::AdamBuffers& b, int threads, int reps,
                              CpuAdamResult& a) {
  a.kernel = to_string(exec::best_adam_kernel());
  for (int t : thread_counts(threads)) {
    exec::CpuAdam adam({}, {.threads = t});
    int64_t step = 1;
    ZS_TRY(adam.step(step++, b));  // warm-up
    double best = 1e30;
    for (int rep = 0; rep < reps; ++rep) {
      const auto t0 = Clock::now();
      ZS_TRY(adam.step(step++, b));
      best = std::min(best, since(t0));
    }
    const double pps = static_cast<double>(b.n) / best;
    a.by_threads.push_back({t, pps});
    if (pps > a.params_per_s) {
      a.params_per_s = pps;
      a.threads = t;
    }
    say(o, "cpu_adam: " + std::to_string(t) + " thread" + (t > 1 ? "s " : " ") + fmt("%.3g", pps) + " params/s (" +
               a.kernel + ", " + fmt("%.1f", pps * 28 / 1e9) + " GB/s of Adam traffic)");
  }
  return {};
}

// The Adam access pattern over four fp32 arrays filling the working set, then CPU Adam on the same arrays.
core::Status measure_adam(const ProbeOptions& o, exec::ThreadPool& pool, int threads, int64_t ws, int reps,
                          DramResult& d, CpuAdamResult& a) {
  const int64_t n = ws / 4 / 4;  // four fp32 arrays
  d.working_set_bytes = 4 * 4 * n;
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  exec::HostBuffer pb = exec::HostBuffer::allocate(bytes), gb = exec::HostBuffer::allocate(bytes),
                   mb = exec::HostBuffer::allocate(bytes), vb = exec::HostBuffer::allocate(bytes);
  if (!pb || !gb || !mb || !vb)
    return core::io_error("probe: cannot allocate " + bytes_text(4 * static_cast<int64_t>(bytes)));
  float *p = pb.as<float>(), *g = gb.as<float>(), *m = mb.as<float>(), *v = vb.as<float>();
  std::fill(p, p + n, 0.5f);
  std::fill(g, g + n, 1e-3f);
  std::fill(m, m + n, 0.0f);
  std::fill(v, v + n, 0.0f);
  d.adam_pattern_GBps = adam_pattern_GBps(pool, p, g, m, v, n, reps);
  say(o, "dram: Adam pattern (4 reads, 3 writes) " + fmt("%.1f", d.adam_pattern_GBps) + " GB/s");
  exec::AdamBuffers b;
  b.params = p;
  b.grads = g;
  b.exp_avg = m;
  b.exp_avg_sq = v;
  b.n = n;
  return measure_cpu_adam(o, b, threads, reps, a);
}

exec::AioConfig aio_config(int64_t block_size, int queue_depth) {
  exec::AioConfig aio;
  aio.block_size = block_size;
  aio.queue_depth = queue_depth;
  return aio;
}

// Per aio config, `files` tensors of file_bytes written, then after settle_s read back in order, twice: the median
// swap. Training reads a state one step after it wrote it. A read that follows its write at once is served by the
// VM's or the drive's write cache: here the best of 2 immediate read-backs said 2.47 GB/s against 1.1-1.6 GB/s seen
// by the engine, and 13 MB read 0.4-1 s after their write take 6.4-7.0 ms against 4.6-4.9 ms at once. The best
// (max read + write) is the recommended aio block_size and queue_depth.
core::Status measure_nvme_sweep(const ProbeOptions& o, NvmeResult& nv) {
  const std::vector<int64_t> blocks =
      o.quick ? std::vector<int64_t>{1 << 20} : std::vector<int64_t>{256 << 10, 1 << 20, 4 << 20};
  const std::vector<int> depths = {8, 32};
  double best_sum = -1;
  for (int64_t bs : blocks) {
    for (int qd : depths) {
      auto s = measure_nvme(o.nvme_paths, aio_config(bs, qd), nv.file_bytes, o.quick ? 1 : 2, true, &nv.warnings,
                            nv.files, nv.settle_s);
      if (!s) return s.error();
      nv.sweep.push_back(*s);
      say(o, "nvme: block " + bytes_text(bs) + " qd " + std::to_string(qd) + ": read " + fmt("%.2f", s->read_GBps) +
                 " GB/s, write " + fmt("%.2f", s->write_GBps) + " GB/s");
      if (s->read_GBps + s->write_GBps > best_sum) {
        best_sum = s->read_GBps + s->write_GBps;
        nv.best = *s;
      }
    }
  }
  for (const auto& w : nv.warnings)
    if (w.find("O_DIRECT") != std::string::npos) nv.direct = false;
  say(o, "nvme: best aio block_size " + std::to_string(nv.best.block_size) + ", queue_depth " +
             std::to_string(nv.best.queue_depth));
  return {};
}

// The per-swap fixed cost: the same swaps at half a MiB (the size of a small model's state file). With the sweep's
// median at file_bytes, time(bytes) = latency + bytes / rate through both points. This disk's small swaps change
// speed from one second to the next (512 KiB: 0.1 or 0.4-0.6 ms of latency, read at once), so they are timed at
// `moments` moments ~1 s apart, settled and at once, and the median of the moments' medians stands.
core::Status measure_nvme_lines(const ProbeOptions& o, NvmeResult& nv) {
  const exec::AioConfig aio = aio_config(nv.best.block_size, nv.best.queue_depth);
  nv.latency_bytes = 512 << 10;
  const int moments = o.quick ? 1 : 5;
  std::vector<NvmeSample> settled, hot;
  for (int k = 0; k < moments; ++k) {
    auto a = measure_nvme(o.nvme_paths, aio, nv.latency_bytes, 2, true, &nv.warnings, 4, nv.settle_s);
    if (!a) return a.error();
    settled.push_back(*a);
    auto b = measure_nvme(o.nvme_paths, aio, nv.latency_bytes, o.quick ? 2 : 4, true, &nv.warnings, 4, 0);
    if (!b) return b.error();
    hot.push_back(*b);
  }
  auto s = median_sample(settled, nv.latency_bytes), hs = median_sample(hot, nv.latency_bytes);
  auto fit = [&](double t1, double t2, double* rate_GBps, double* latency_s) {
    const SwapLine l = fit_swap_line(nv.latency_bytes, t1, nv.file_bytes, t2);
    *rate_GBps = l.rate_Bps / 1e9;
    *latency_s = l.latency_s;
  };
  fit(s.read_median_s, nv.best.read_median_s, &nv.read_GBps, &nv.read_latency_s);
  fit(s.write_median_s, nv.best.write_median_s, &nv.write_GBps, &nv.write_latency_s);
  say(o, "nvme: per-swap latency (512 KiB swaps): read " + fmt("%.0f", nv.read_latency_s * 1e6) + " us, write " +
             fmt("%.0f", nv.write_latency_s * 1e6) + " us; rate beyond it: read " + fmt("%.2f", nv.read_GBps) +
             " GB/s, write " + fmt("%.2f", nv.write_GBps) + " GB/s");
  // Hot: the same two sizes read back at once (a model whose step is shorter than settle_s swaps such data).
  auto hb = measure_nvme(o.nvme_paths, aio, nv.file_bytes, o.quick ? 1 : 2, true, &nv.warnings, nv.files, 0);
  if (!hb) return hb.error();
  fit(hs.read_median_s, hb->read_median_s, &nv.hot_read_GBps, &nv.hot_read_latency_s);
  fit(hs.write_median_s, hb->write_median_s, &nv.hot_write_GBps, &nv.hot_write_latency_s);
  say(o, "nvme: read at once: " + fmt("%.0f", nv.hot_read_latency_s * 1e6) + " us + bytes at " +
             fmt("%.2f", nv.hot_read_GBps) + " GB/s; write " + fmt("%.0f", nv.hot_write_latency_s * 1e6) +
             " us + bytes at " + fmt("%.2f", nv.hot_write_GBps) + " GB/s");
  return {};
}

// The NVMe part: the aio sweep at file_bytes, then the swap lines through a small size, settled and at once.
core::Status measure_nvme_paths(const ProbeOptions& o, NvmeResult& nv) {
  nv.paths = o.nvme_paths;
  nv.capacity_bytes = INT64_MAX;
  for (const auto& path : o.nvme_paths) nv.capacity_bytes = std::min(nv.capacity_bytes, exec::filesystem_bytes(path));
  nv.file_bytes = o.quick ? (16 << 20) : (64 << 20);
  nv.files = o.quick ? 2 : 4;
  nv.settle_s = o.quick ? 0.1 : kNvmeSettleS;
  ZS_TRY(measure_nvme_sweep(o, nv));
  nv.measured = true;
  return measure_nvme_lines(o, nv);
}

}  // namespace

core::Result<ProbeResult> run_probe(const ProbeOptions& o) {
  const auto t_start = Clock::now();
  ZS_TRY(check_nvme_paths(o.nvme_paths));
  ProbeResult r;
  r.quick = o.quick;
  r.cpus = exec::available_cpus();
  const int threads = o.max_threads > 0 ? std::min(o.max_threads, r.cpus) : r.cpus;
  r.memory_GiB = static_cast<double>(physical_memory_bytes()) / core::kGiB;
  r.numa_nodes = numa_node_count();
  const int64_t ws = dram_working_set_bytes(o.quick);
  const int reps = o.quick ? 2 : 3;
  exec::ThreadPool pool(threads);
  measure_triad(o, pool, threads, ws, reps, r.dram);
  ZS_TRY(measure_adam(o, pool, threads, ws, reps, r.dram, r.cpu_adam));
  if (!o.nvme_paths.empty()) ZS_TRY(measure_nvme_paths(o, r.nvme));
  r.gpu.probed = false;
  if (!o.gpu) {
    r.gpu.note = "not requested (--gpu)";
  } else {
    // The GPU probes (probe/cuda/gpu_probe.h) live with the CUDA device and this library is host-only: a CUDA
    // build's CLI calls probe_gpu itself and does not ask run_probe for the GPU.
    r.gpu.note = "no GPU: this build has no CUDA device support; GPU probes skipped";
    say(o, "gpu: " + r.gpu.note);
  }
  r.seconds = since(t_start);
  return r;
}

core::Hardware apply_probe(core::Hardware h, const ProbeResult& r) {
  char host[256] = "this machine";
  (void)::gethostname(host, sizeof host - 1);
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  const std::string base_name = h.name;
  h.name = base_name + ", probed on " + host;
  const core::GpuTypeDefaults& gpu_type = core::gpu_type_defaults(h.gpu.name);
  const bool efficiency_ok = r.gpu.gemm_efficiency > 0 && r.gpu.gemm_efficiency <= 1.0;  // the loader's range
  std::string gpu_text;
  if (r.gpu.probed) {
    const std::string eff = efficiency_ok ? fmt(" = %.3f", r.gpu.gemm_efficiency) +
                                                fmt(" of the datasheet %.0f", r.gpu.gemm_peak_bf16_tflops)
                                          : std::string(", gemm_efficiency not stored: no matching datasheet peak");
    gpu_text =
        ", GPU (" + r.gpu.device + fmt(": GEMM %.0f TFLOPS bf16 over a GPT block's GEMMs", r.gpu.gemm_bf16_tflops) +
        eff + fmt("; HBM copy %.0f GB/s, stored as gpu.hbm_GBps", r.gpu.hbm_GBps) +
        fmt(" = measured / %.2f", gpu_type.hbm_efficiency) + ", the cost model's hbm_efficiency for this GPU type" +
        "; PCIe pinned and pageable copies" + (r.gpu.note.empty() ? std::string() : "; " + r.gpu.note) + ")";
  }
  h.source = std::string("zerosim probe on ") + host + ", " + date + ": cpu, DRAM" + (r.nvme.measured ? ", NVMe" : "") +
             gpu_text + " and the measured block are measured; the rest comes from '" + base_name + "'" +
             (h.file.empty() ? std::string() : " (" + h.file + ")") +
             (r.quick ? "; --quick run: DRAM figures may be cache-bound, rerun without --quick" : "");
  h.cpu.cores = r.cpus;
  h.cpu.numa_nodes = r.numa_nodes;
  h.cpu.memory_GiB = std::max(0.001, std::round(r.memory_GiB * 10) / 10);
  h.cpu.memory_GBps = r.dram.triad_GBps;
  auto& ms = h.measured;
  ms.dram_triad_GBps = r.dram.triad_GBps;
  if (r.dram.triad_one_thread_GBps > 0) ms.dram_core_GBps = r.dram.triad_one_thread_GBps;
  ms.dram_adam_pattern_GBps = r.dram.adam_pattern_GBps;
  ms.cpu_adam_params_per_s = r.cpu_adam.params_per_s;
  ms.cpu_adam_threads = r.cpu_adam.threads;
  if (r.nvme.measured) {
    const auto drives = static_cast<int64_t>(r.nvme.paths.size());
    h.nvme.drives = drives;
    h.nvme.capacity_GB_each = static_cast<double>(r.nvme.capacity_bytes) / core::kGB;
    h.nvme.read_GBps_each = r.nvme.read_GBps / static_cast<double>(drives);
    h.nvme.write_GBps_each = r.nvme.write_GBps / static_cast<double>(drives);
    ms.nvme_read_GBps = r.nvme.read_GBps;
    ms.nvme_write_GBps = r.nvme.write_GBps;
    ms.aio_block_size = r.nvme.best.block_size;
    ms.aio_queue_depth = r.nvme.best.queue_depth;
    ms.nvme_aio_sweep.clear();
    for (const auto& s : r.nvme.sweep)
      ms.nvme_aio_sweep.push_back({s.block_size, s.queue_depth, s.read_GBps, s.write_GBps});
    ms.nvme_read_latency_us = r.nvme.read_latency_s * 1e6;
    ms.nvme_write_latency_us = r.nvme.write_latency_s * 1e6;
    ms.nvme_settle_s = r.nvme.settle_s;
    ms.nvme_hot_read_GBps = r.nvme.hot_read_GBps;
    ms.nvme_hot_write_GBps = r.nvme.hot_write_GBps;
    ms.nvme_hot_read_latency_us = r.nvme.hot_read_latency_s * 1e6;
    ms.nvme_hot_write_latency_us = r.nvme.hot_write_latency_s * 1e6;
  }
  if (r.gpu.probed) {
    // cost_model_for uses gpu.hbm_GBps × hbm_efficiency: store the figure that makes that product the measured rate.
    if (r.gpu.hbm_GBps > 0) h.gpu.hbm_GBps = r.gpu.hbm_GBps / gpu_type.hbm_efficiency;
    if (r.gpu.h2d_pinned_GBps > 0) h.links.pcie_h2d_GBps = r.gpu.h2d_pinned_GBps;
    if (r.gpu.d2h_pinned_GBps > 0) h.links.pcie_d2h_GBps = r.gpu.d2h_pinned_GBps;
    // The node's host uplink carries one GPU's traffic here: its per-direction rate is that GPU's. With more GPUs
    // one GPU's copies say nothing of the shared uplink, so the base's figure stays.
    if (h.gpus_per_node == 1 && r.gpu.h2d_pinned_GBps > 0 && r.gpu.d2h_pinned_GBps > 0)
      h.links.pcie_host_GBps = std::max(r.gpu.h2d_pinned_GBps, r.gpu.d2h_pinned_GBps);
    if (efficiency_ok) ms.gemm_efficiency = r.gpu.gemm_efficiency;
    if (r.gpu.h2d_pageable_GBps > 0) ms.pcie_h2d_pageable_GBps = r.gpu.h2d_pageable_GBps;
    if (r.gpu.d2h_pageable_GBps > 0) ms.pcie_d2h_pageable_GBps = r.gpu.d2h_pageable_GBps;
    if (r.gpu.nccl_busbw_GBps > 0) ms.nccl_busbw_GBps = r.gpu.nccl_busbw_GBps;
  }
  return h;
}

}  // namespace zs::probe
