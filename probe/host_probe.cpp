// probe_host_device (host_probe.h): time every module of the model forward and backward on the reference kernels,
// fit the cost model's two rates to them, measure memcpy.
#include "probe/host_probe.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/cost_model.h"
#include "exec/cpu_adam.h"
#include "exec/data.h"
#include "exec/gpt_model.h"
#include "exec/host_buffer.h"
#include "exec/host_device.h"
#include "exec/spin.h"
#include "exec/thread_pool.h"
#include "probe/probe.h"

namespace zs::probe {
namespace {

using clk = std::chrono::steady_clock;
double seconds_since(clk::time_point t) { return std::chrono::duration<double>(clk::now() - t).count(); }

struct Aligned {
  explicit Aligned(int64_t bytes) : v(static_cast<size_t>((bytes + 63) / 64 + 1) * 8) {}
  void* data() { return v.data(); }
  std::vector<uint64_t> v;
};

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The optimizer's CPU passes over one group as the engine runs them (exec/engine_optimizer.cpp): unscale in place,
// Adam, the fp32 → lp cast into a copy-back buffer, each over CPU Adam's threads in the engine's work units.
class OptimizerPasses {
 public:
  static core::Result<std::unique_ptr<OptimizerPasses>> create(int64_t n, int threads, const core::Strategy& s) {
    auto o = std::unique_ptr<OptimizerPasses>(new OptimizerPasses(threads));
    const bool bf16_states = s.bf16.bf16_optimizer_states;
    const int64_t state_b = bf16_states ? 2 : 4;
    const core::Precision pr = s.model_dtype();
    o->lp_ = pr == core::Precision::bf16   ? exec::LpDtype::bf16
             : pr == core::Precision::fp16 ? exec::LpDtype::fp16
                                           : exec::LpDtype::none;
    const int64_t lp_b = o->lp_ == exec::LpDtype::none ? 4 : 2;
    o->p_ = exec::HostBuffer::allocate(static_cast<size_t>(4 * n));
    o->g_ = exec::HostBuffer::allocate(static_cast<size_t>(4 * n));
    o->m_ = exec::HostBuffer::allocate(static_cast<size_t>(state_b * n));
    o->v_ = exec::HostBuffer::allocate(static_cast<size_t>(state_b * n));
    o->out_ = exec::HostBuffer::allocate(static_cast<size_t>(lp_b * n));
    if (!o->p_ || !o->g_ || !o->m_ || !o->v_ || !o->out_)
      return core::io_error("host probe: cannot allocate the optimizer passes' buffers (" +
                            std::to_string((8 + 2 * state_b + lp_b) * n) + " bytes)");
    std::fill(o->p_.as<float>(), o->p_.as<float>() + n, 0.5f);
    std::fill(o->g_.as<float>(), o->g_.as<float>() + n, 1e-3f);
    std::memset(o->m_.data(), 0, static_cast<size_t>(state_b * n));
    std::memset(o->v_.data(), 0, static_cast<size_t>(state_b * n));
    o->b_.params = o->p_.as<float>();
    o->b_.grads = o->g_.data();
    o->b_.exp_avg = o->m_.data();
    o->b_.exp_avg_sq = o->v_.data();
    o->b_.state_dtype = bf16_states ? exec::StateDtype::bf16 : exec::StateDtype::fp32;
    o->b_.n = n;
    exec::CpuAdam adam({}, {.threads = 1});
    ZS_TRY(adam.step(1, exec::AdamBuffers{}));  // the scalars only
    o->sc_ = adam.last_scalars();
    o->unscale_bytes = 8 * n;
    o->cast_bytes = (4 + lp_b) * n;
    return o;
  }
  // One round of the three passes, each timed; the pool's workers are awake first (the simulator prices a
  // sleeping pool's wake-up apart, docs/SIM.md "stream wake-up").
  void run(std::vector<double>& unscale, std::vector<double>& adam, std::vector<double>& cast) {
    pool_.run_per_thread([](int) {});
    const exec::AdamKernel k = exec::best_adam_kernel();
    const int64_t n = b_.n, unit = exec::pool_unit_elems(n, pool_.threads(), exec::kCpuPassChunkElems);
    const int64_t chunks = (n + unit - 1) / unit,
                  tile = exec::pool_unit_elems(n, pool_.threads(), exec::kAdamTileElems);
    float* g = g_.as<float>();
    const float mul = 1.0f / 1024;
    auto t = clk::now();
    pool_.run(chunks, [&](int64_t c) {
      const int64_t lo = c * unit;
      exec::scale_f32(k, g + lo, mul, std::min(n, lo + unit) - lo);
    });
    unscale.push_back(seconds_since(t));
    std::fill(g, g + n, 1e-3f);  // the gradients stay normal numbers over the repeats
    pool_.run_per_thread([](int) {});
    t = clk::now();
    pool_.run((n + tile - 1) / tile,
              [&](int64_t i) { exec::adam_kernel(k, sc_, b_, i * tile, std::min(n, (i + 1) * tile)); });
    adam.push_back(seconds_since(t));
    t = clk::now();
    pool_.run(chunks, [&](int64_t c) {
      const int64_t lo = c * unit, len = std::min(n, lo + unit) - lo;
      if (lp_ == exec::LpDtype::none)
        std::memcpy(out_.as<float>() + lo, b_.params + lo, static_cast<size_t>(4 * len));
      else
        exec::cast_to_lp(k, out_.as<uint16_t>() + lo, b_.params + lo, len, lp_);
    });
    cast.push_back(seconds_since(t));
  }
  int threads() const { return pool_.threads(); }
  int64_t unscale_bytes = 0, cast_bytes = 0;

 private:
  explicit OptimizerPasses(int threads) : pool_(threads) {}
  exec::ThreadPool pool_;
  exec::HostBuffer p_, g_, m_, v_, out_;
  exec::AdamBuffers b_;
  exec::AdamScalars sc_;
  exec::LpDtype lp_ = exec::LpDtype::none;
};

// The run's NVMe swaps: the Plan's smallest and largest (a second size when they are close, for the line's
// latency), timed as `zerosim probe` times its swaps (measure_nvme), settled and at once.
core::Status time_swaps(const core::Strategy& s, const core::Plan& plan, const HostDeviceProbe* earlier,
                        HostDeviceProbe& hp) {
  int64_t lo = 0, hi = 0;
  for (const auto& op : plan.ops)
    if ((op.kind == core::OpKind::nvme_read || op.kind == core::OpKind::nvme_write) && op.rank == 0 && op.bytes > 0) {
      lo = lo == 0 ? op.bytes : std::min(lo, op.bytes);
      hi = std::max(hi, op.bytes);
    }
  if (hi == 0) return {};
  if (hi < 2 * lo) lo = std::max<int64_t>(4096, hi / 8);
  const auto& z = s.zero;
  const std::string path = z.offload_optimizer.device == core::OffloadDevice::nvme ? z.offload_optimizer.nvme_path
                                                                                   : z.offload_param.nvme_path;
  if (path.empty()) return core::bad_input("host probe: the Plan swaps to NVMe but the ds_config names no nvme_path");
  const exec::AioConfig aio = exec::aio_from_ds(s.aio);
  if (earlier && (earlier->nvme_small != lo || earlier->nvme_large != hi))
    return core::internal_error("host probe: the earlier session timed other swaps");
  hp.nvme_small = lo;
  hp.nvme_large = hi;
  hp.aio_block_size = aio.block_size;
  hp.aio_queue_depth = aio.queue_depth;
  for (int hot = 0; hot < 2; ++hot) {
    for (int large = 0; large < 2; ++large) {
      auto x = measure_nvme({path}, aio, large ? hi : lo, 2, true, nullptr, 4, hot ? 0.0 : kNvmeSettleS);
      if (!x) return core::io_error("host probe: NVMe path " + path + ": " + x.error().message);
      double& r = large ? hp.read_large_s[hot] : hp.read_small_s[hot];
      double& w = large ? hp.write_large_s[hot] : hp.write_small_s[hot];
      r = x->read_median_s;
      w = x->write_median_s;
      if (earlier) {  // the mean of the sessions before and after the run: the disk drifts, the run lies between
        r = 0.5 * (r + (large ? earlier->read_large_s[hot] : earlier->read_small_s[hot]));
        w = 0.5 * (w + (large ? earlier->write_large_s[hot] : earlier->write_small_s[hot]));
      }
    }
  }
  // At 8 MiB or more: the path's wake-up stretches over its first ~1-3 ms of I/O, so a small first swap leaves some
  // of it to the swaps behind it (0.5 MB read after 300 ms idle: the first +0.7 ms, the next two +0.2 and +0.15 ms;
  // a 13 MB one takes all of it, +1.2 ms); the simulator charges the whole to the first swap.
  auto idle = measure_nvme_idle({path}, aio, std::max<int64_t>(hi, int64_t{8} << 20), {3e-3, 30e-3, 300e-3}, 5);
  if (!idle) return core::io_error("host probe: NVMe path " + path + ": " + idle.error().message);
  hp.nvme_idle = *idle;
  if (earlier && earlier->nvme_idle.size() == hp.nvme_idle.size())
    for (size_t k = 0; k < hp.nvme_idle.size(); ++k)
      hp.nvme_idle[k].second = 0.5 * (hp.nvme_idle[k].second + earlier->nvme_idle[k].second);
  return {};
}

// The cost model's two rates fitted to the module forwards: t ≈ F·x + M·y (x = 1/rate, y = 1/bandwidth) by least
// squares on the times themselves (the big modules, which make the step, weigh most), both ≥ 0; and the backward
// ratio.
void fit_module_rates(HostDeviceProbe& hp) {
  struct Sample {
    double t, F, M;
  };
  std::vector<Sample> smp;
  double sum_f = 0, sum_b = 0;
  for (size_t i = 0; i < hp.forward_s.size(); ++i) {
    const double F = hp.forward_ops[i].gemm_flops, M = static_cast<double>(hp.forward_ops[i].mem_bound_bytes);
    if (F <= 0 && M <= 0) continue;
    // The rates from the forwards; the backwards give one ratio (the reference kernels' backward takes ~1.6x their
    // forward where the FLOPs say 2x), which the cost model applies to every backward op.
    const double t_f = hp.forward_s[i];
    smp.push_back({t_f, F, M});
    sum_f += t_f;
    sum_b += hp.backward_s[i];
  }
  double a11 = 0, a12 = 0, a22 = 0, b1 = 0, b2 = 0;
  for (const auto& q : smp) {
    a11 += q.F * q.F;
    a12 += q.F * q.M;
    a22 += q.M * q.M;
    b1 += q.F * q.t;
    b2 += q.M * q.t;
  }
  double x = 0, y = 0;
  const double det = a11 * a22 - a12 * a12;
  if (det > 0) {
    x = (b1 * a22 - b2 * a12) / det;
    y = (a11 * b2 - a12 * b1) / det;
  }
  if (x <= 0 || y <= 0) {  // one rate explains it: fit it alone, the other term negligible
    if (x <= 0) {
      x = 0;
      y = a22 > 0 ? b2 / a22 : 0;
    } else {
      y = 0;
      x = a11 > 0 ? b1 / a11 : 0;
    }
  }
  // A zero coefficient: that term explains nothing the other does not (its rate is then "infinite": 1e15).
  hp.gemm_flops_per_s = x > 0 ? 1.0 / x : 1e15;
  hp.mem_bound_Bps = y > 0 ? 1.0 / y : 1e15;
  double se = 0;
  for (const auto& q : smp) {
    const double rel = (q.F * x + q.M * y - q.t) / q.t;
    se += rel * rel;
  }
  hp.modules = static_cast<int>(smp.size());
  hp.backward_ratio = sum_f > 0 ? sum_b / sum_f : 0;
  hp.fit_rms_rel = smp.empty() ? 0 : std::sqrt(se / static_cast<double>(smp.size()));
}

}  // namespace

struct ModuleTimer::Impl {
  Impl(exec::GptModel g, const core::ModelSpec& m) : g(std::move(g)), L(m.layers) {}
  exec::GptModel g;
  std::unique_ptr<OptimizerPasses> opt;  // with a Plan that updates on the CPU
  int64_t L;
  std::vector<Aligned> params, grads, arenas;
  std::vector<const void*> pp;
  std::vector<void*> gp;
  std::unique_ptr<Aligned> head, d0, d1;
  std::vector<int32_t> tok;
  exec::GptModel::Call c;

  // Module i's arguments in the call: its parameters (and gradients, written over), its layer's activations, and
  // the residual streams it reads and writes.
  void bind(size_t i, bool bwd) {
    const exec::ModuleInfo& mi = g.modules()[i];
    c.params.clear();
    c.grads.clear();
    c.grad_write.clear();
    for (int32_t p : mi.params) {
      c.params.push_back(pp[static_cast<size_t>(p)]);
      if (bwd) {
        c.grads.push_back(gp[static_cast<size_t>(p)]);
        c.grad_write.push_back(exec::GradWrite::overwrite);
      }
    }
    const int64_t l = mi.layer;
    c.layer = l >= 0 ? g.layer_view(arenas[static_cast<size_t>(l)].data()) : exec::LayerActs{};
    auto x_of = [&](int64_t j) { return j < L ? g.layer_view(arenas[static_cast<size_t>(j)].data()).x : c.head.xf; };
    c.x_out = nullptr;
    if (mi.role == exec::ModuleRole::tok_embedding || mi.role == exec::ModuleRole::pos_embedding) c.x_out = x_of(0);
    if (mi.role == exec::ModuleRole::mlp_out) c.x_out = x_of(l + 1);
    void* dres[2] = {d0->data(), d1->data()};
    const int64_t blk =
        l >= 0 ? l : (mi.role == exec::ModuleRole::final_norm || mi.role == exec::ModuleRole::lm_head ? L : -1);
    c.dres_in = blk >= 0 ? dres[(L - 1 - blk + 2) % 2] : dres[L % 2];
    c.dres_out = blk >= 0 ? dres[(L - blk) % 2] : nullptr;
  }
};

ModuleTimer::ModuleTimer(std::unique_ptr<Impl> p) : p_(std::move(p)) {}
ModuleTimer::~ModuleTimer() = default;

namespace {
// The Plan's largest CPU-updated group (rank 0's), 0 if none.
int64_t largest_cpu_group(const core::Plan& plan) {
  int64_t n = 0;
  for (const auto& op : plan.ops)
    if (op.kind == core::OpKind::adam_cpu && op.rank == 0) n = std::max(n, op.elements);
  return n;
}
}  // namespace

core::Result<std::unique_ptr<ModuleTimer>> ModuleTimer::create(const core::ModelSpec& m, const core::Strategy& s,
                                                               const core::Plan* plan, int cpu_threads) {
  auto gm = exec::GptModel::create(m, exec::dtype_of(s.model_dtype()), s.micro_batch_per_gpu, s.run.seq_len);
  if (!gm) return gm.error();
  auto p = std::make_unique<Impl>(std::move(*gm), m);
  if (const int64_t n = plan ? largest_cpu_group(*plan) : 0; n > 0) {
    auto o = OptimizerPasses::create(n, cpu_threads > 0 ? cpu_threads : exec::available_cpus(), s);
    if (!o) return o.error();
    p->opt = std::move(*o);
  }
  const exec::GptModel& g = p->g;
  const int64_t e = exec::dtype_bytes(g.dtype());
  for (size_t i = 0; i < g.params().size(); ++i) {
    p->params.emplace_back(g.params()[i].numel * e);
    p->grads.emplace_back(g.params()[i].numel * e);
    g.init_param(i, p->params.back().data(), 1);
  }
  for (size_t i = 0; i < g.params().size(); ++i) {  // after the vectors stop growing
    p->pp.push_back(p->params[i].data());
    p->gp.push_back(p->grads[i].data());
  }
  for (int64_t l = 0; l < p->L; ++l) p->arenas.emplace_back(g.layer_bytes());
  p->head = std::make_unique<Aligned>(g.head_bytes());
  p->d0 = std::make_unique<Aligned>(g.residual_grad_bytes());
  p->d1 = std::make_unique<Aligned>(g.residual_grad_bytes());
  const exec::Corpus corpus = exec::synthetic_corpus(1 << 16, 1);
  exec::DataLoader data(corpus, g.micro_batch(), g.seq_len(), 1);
  p->tok.resize(static_cast<size_t>(2 * g.tokens()));
  data.next(p->tok.data(), p->tok.data() + g.tokens());
  p->c.tokens = p->tok.data();
  p->c.targets = p->tok.data() + g.tokens();
  p->c.dloss = 1.0f / static_cast<float>(g.tokens());
  p->c.head = g.head_view(p->head->data());
  return std::unique_ptr<ModuleTimer>(new ModuleTimer(std::move(p)));
}

size_t ModuleTimer::modules() const { return p_->g.modules().size(); }

ModulePass ModuleTimer::pass() {
  ModulePass x;
  pass(x.forward_s, x.backward_s);
  if (p_->opt) {
    std::vector<double> u, a, c;
    p_->opt->run(u, a, c);
    x.unscale_s = u.at(0);
    x.adam_s = a.at(0);
    x.cast_s = c.at(0);
  }
  return x;
}

void ModuleTimer::pass(std::vector<double>& forward_s, std::vector<double>& backward_s) {
  const size_t n = modules();
  forward_s.assign(n, 0);
  backward_s.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    p_->bind(i, false);
    const auto t = clk::now();
    p_->g.forward(i, p_->c);
    forward_s[i] = seconds_since(t);
  }
  for (size_t i = n; i-- > 0;) {
    p_->bind(i, true);
    const auto t = clk::now();
    p_->g.backward(i, p_->c);
    backward_s[i] = seconds_since(t);
  }
}

core::Result<HostDeviceProbe> probe_host_device(const core::ModelSpec& m, const core::Strategy& s,
                                                const core::Plan& plan, const HostDeviceProbe* earlier,
                                                int cpu_threads) {
  auto timer = ModuleTimer::create(m, s);
  if (!timer) return timer.error();
  const size_t nmod = (*timer)->modules();
  // The Plan's cost of each module's forward (micro-step 0, module order); backward costs 2x.
  std::vector<const core::Op*> fwd, bwd;
  for (const auto& op : plan.ops)
    if (op.kind == core::OpKind::forward && op.micro_step == 0) fwd.push_back(&op);
  for (const auto& op : plan.ops)  // reverse module order in the Plan
    if (op.kind == core::OpKind::backward && op.micro_step == 0) bwd.push_back(&op);
  std::reverse(bwd.begin(), bwd.end());
  if (fwd.size() != nmod || bwd.size() != nmod)
    return core::internal_error("host probe: plan and model disagree on the modules");
  // The optimizer's CPU passes at the run's largest CPU-updated group, if any.
  const int64_t opt_n = largest_cpu_group(plan);
  std::unique_ptr<OptimizerPasses> opt;
  if (opt_n > 0) {
    auto o = OptimizerPasses::create(opt_n, cpu_threads > 0 ? cpu_threads : exec::available_cpus(), s);
    if (!o) return o.error();
    opt = std::move(*o);
  }
  std::vector<double> t_unscale, t_adam, t_cast;
  // Repeated full forward + backward passes, each module timed, then the optimizer's passes; the median of each.
  const int reps = 5;
  std::vector<std::vector<double>> tf(nmod), tb(nmod);
  std::vector<double> f1, b1;
  for (int r = 0; r < reps; ++r) {
    (*timer)->pass(f1, b1);
    for (size_t i = 0; i < nmod; ++i) {
      tf[i].push_back(f1[i]);
      tb[i].push_back(b1[i]);
    }
    if (opt) opt->run(t_unscale, t_adam, t_cast);
  }
  auto median = median_of;
  HostDeviceProbe hp;
  if (earlier && (earlier->forward_s.size() != nmod || earlier->backward_s.size() != nmod))
    return core::internal_error("host probe: the earlier session timed another model");
  for (size_t i = 0; i < nmod; ++i) {
    hp.forward_s.push_back(earlier ? std::min(earlier->forward_s[i], median(tf[i])) : median(tf[i]));
    hp.backward_s.push_back(earlier ? std::min(earlier->backward_s[i], median(tb[i])) : median(tb[i]));
  }
  hp.sessions = earlier ? earlier->sessions + 1 : 1;
  hp.module_times = earlier ? "the faster of " + std::to_string(hp.sessions) + " sessions per module"
                            : "one session, the median of " + std::to_string(reps) + " passes per module";
  for (size_t i = 0; i < nmod; ++i) {
    hp.forward_ops.push_back(*fwd[i]);
    hp.backward_ops.push_back(*bwd[i]);
  }
  hp.model = m;
  hp.tokens = s.micro_batch_per_gpu * s.run.seq_len;
  if (opt) {
    if (earlier && earlier->opt_elements != opt_n)
      return core::internal_error("host probe: the earlier session timed another optimizer group");
    hp.opt_elements = opt_n;
    hp.opt_threads = opt->threads();
    hp.unscale_bytes = opt->unscale_bytes;
    hp.cast_bytes = opt->cast_bytes;
    // The mean of the two sessions, not the faster: these passes and the swaps move with the machine's speed from
    // second to second (one run of 15 steps of `small` ZeRO-Infinity: Adam 1.1-1.9 ms, each 13 MB read 2.2-3.9 ms,
    // the slow steps slow in both), the run lies between the sessions, and the faster of two moments priced the
    // run's typical step short (docs/notes/engine-validation.md, "The sessions' mean").
    auto mean = [&](double now, double HostDeviceProbe::*f) { return earlier ? 0.5 * (now + earlier->*f) : now; };
    hp.unscale_s = mean(median(t_unscale), &HostDeviceProbe::unscale_s);
    hp.adam_s = mean(median(t_adam), &HostDeviceProbe::adam_s);
    hp.cast_s = mean(median(t_cast), &HostDeviceProbe::cast_s);
  }
  fit_module_rates(hp);

  // Copies: the host device's H2D/D2H are memcpys of MiBs whose data the step last touched long before (the
  // engine's copies of `small` run at ~7 GB/s here, hot 8 MiB copies at ~14). So: 8 MiB copies rotating over
  // 16 buffer pairs (256 MiB, past the caches), the median.
  const int64_t n = 8 << 20;
  const int pairs = 16;
  std::vector<Aligned> src, dst;
  for (int i = 0; i < pairs; ++i) {
    src.emplace_back(n);
    dst.emplace_back(n);
    std::memset(src.back().data(), 1, static_cast<size_t>(n));
    std::memset(dst.back().data(), 2, static_cast<size_t>(n));
  }
  std::vector<double> tc;
  for (int r = 0; r < 2 * pairs; ++r) {
    const auto t = clk::now();
    std::memcpy(dst[static_cast<size_t>(r % pairs)].data(), src[static_cast<size_t>(r % pairs)].data(),
                static_cast<size_t>(n));
    tc.push_back(seconds_since(t));
  }
  hp.copy_Bps = static_cast<double>(n) / median(tc);
  // The fixed cost: 64 KiB copies from parts of the pairs the 8 MiB round left longest ago, less their bytes at
  // that rate. A GPU's copy pays ~10 us to issue and set up its DMA (the simulator's default); a memcpy pays a
  // call, and the engine's 1 KB H2Ds took 0-2 us where 10 was predicted (docs/notes/engine-validation.md).
  const int64_t small = 64 << 10;
  std::vector<double> ts;
  for (int r = 0; r < 2 * pairs; ++r) {
    const auto off = static_cast<size_t>((r / pairs + 1) * (n / 4));  // a quarter in, then halfway
    const auto t = clk::now();
    std::memcpy(static_cast<unsigned char*>(dst[static_cast<size_t>(r % pairs)].data()) + off,
                static_cast<unsigned char*>(src[static_cast<size_t>(r % pairs)].data()) + off,
                static_cast<size_t>(small));
    ts.push_back(seconds_since(t));
  }
  hp.copy_latency_s = std::max(0.0, median(ts) - static_cast<double>(small) / hp.copy_Bps);
  if (earlier) {
    hp.copy_Bps = std::max(hp.copy_Bps, earlier->copy_Bps);
    hp.copy_latency_s = std::min(hp.copy_latency_s, earlier->copy_latency_s);
  }

  // Stream wake-up: stream b waits on work of stream a that runs past b's poll budget, so b's thread sleeps; the
  // delay from a's end to b's start is the wake-up (on a VM: an IPI to a halted vCPU, ~40 us here).
  auto dev = exec::make_host_device({.memory_bytes = 1 << 20, .lock_pinned = false});
  auto sa = dev->stream("probe a"), sb = dev->stream("probe b");
  if (!sa) return sa.error();
  if (!sb) return sb.error();
  const double busy = 2 * std::chrono::duration<double>(exec::kSpinBudget).count() + 200e-6;
  std::vector<double> wake;
  for (int r = 0; r < 41; ++r) {
    clk::time_point a_end, b_start;
    exec::Event ea = dev->enqueue(**sa, {}, [&] {
      const auto t = clk::now();
      while (seconds_since(t) < busy) {
      }
      a_end = clk::now();
      return core::Status{};
    });
    exec::Event eb = dev->enqueue(**sb, {ea}, [&] {
      b_start = clk::now();
      return core::Status{};
    });
    ZS_TRY(eb.wait());
    wake.push_back(std::chrono::duration<double>(b_start - a_end).count());
  }
  hp.stream_spin_s = std::chrono::duration<double>(exec::kSpinBudget).count();
  // The first handoffs are cheap (~3 us: the scheduler runs the woken thread on the waker's core) until it spreads
  // the two threads over two cores, as the engine's many busy threads are; from then on ~35 us on this VM. So the
  // first 16 are warm-up and the median of the rest is the figure.
  hp.stream_wake_s = median(std::vector<double>(wake.begin() + 16, wake.end()));
  if (earlier && earlier->stream_wake_s > 0) hp.stream_wake_s = std::min(hp.stream_wake_s, earlier->stream_wake_s);
  ZS_TRY(time_swaps(s, plan, earlier, hp));
  return hp;
}

core::Result<HostDeviceProbe> with_module_times(HostDeviceProbe p, const std::vector<ModulePass>& passes,
                                                std::string how) {
  if (passes.empty()) return core::internal_error("host probe: no module passes to take the times from");
  for (const auto& x : passes)
    if (x.forward_s.size() != p.forward_ops.size() || x.backward_s.size() != p.backward_ops.size())
      return core::internal_error("host probe: a module pass timed another model");
  auto median = [](std::vector<double> v) {  // of an even count: the mean of the middle two
    std::sort(v.begin(), v.end());
    const size_t h = v.size() / 2;
    return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
  };
  for (size_t i = 0; i < p.forward_ops.size(); ++i) {
    std::vector<double> f, b;
    for (const auto& x : passes) {
      f.push_back(x.forward_s[i]);
      b.push_back(x.backward_s[i]);
    }
    p.forward_s[i] = median(std::move(f));
    p.backward_s[i] = median(std::move(b));
  }
  bool opt = p.opt_elements > 0;
  for (const auto& x : passes) opt = opt && x.adam_s > 0 && x.unscale_s > 0 && x.cast_s > 0;
  if (opt) {
    std::vector<double> u, a, c;
    for (const auto& x : passes) {
      u.push_back(x.unscale_s);
      a.push_back(x.adam_s);
      c.push_back(x.cast_s);
    }
    p.unscale_s = median(std::move(u));
    p.adam_s = median(std::move(a));
    p.cast_s = median(std::move(c));
    p.opt_times = how;
  }
  p.module_times = std::move(how);
  fit_module_rates(p);
  return p;
}

}  // namespace zs::probe
