// Engine initialisation (engine.h): the parameters from the seed (materialised in fp32, as HF does, one module at a
// time under ZeRO-3's zero.Init), their NVMe homes and swappers, the optimizer states; and the swap helpers.
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "exec/engine_impl.h"
#include "exec/io_env.h"
#include "exec/kernels_ref.h"

namespace zs::exec {

using core::Result;

// --- swapping ----------------------------------------------------------------------------------------------------

// A swap file's bytes on the NVMe tier: counted when the file first grows to them.
Status Engine::Impl::reserve_nvme(const std::string& name, int64_t bytes) {
  const int64_t disk = padded(bytes);
  auto it = nvme_files.find(name);
  const int64_t before = it == nvme_files.end() ? 0 : it->second;
  if (disk > before) ZS_TRY(nvme_acct.reserve(disk - before, name));
  nvme_files[name] = std::max(disk, before);
  return {};
}

Status Engine::Impl::swap_out(Swapper& sw, const std::string& name, const void* data, int64_t bytes) {
  ZS_TRY(reserve_nvme(name, bytes));
  auto h = sw.swap_out(name, data, bytes, SourceUse::borrow);
  if (!h) return h.error();
  return h->wait();
}

Status Engine::Impl::swap_in(Swapper& sw, const std::string& name, void* data, int64_t bytes) {
  auto h = sw.swap_in(name, data, bytes);
  if (!h) return h.error();
  return h->wait();
}

namespace {
Status wait_all(std::vector<SwapHandle>& hs, Status first) {
  for (auto& h : hs) {
    Status s = h.wait();
    if (!s.ok() && first.ok()) first = s;
  }
  return first;
}
}  // namespace

Status Engine::Impl::swap_in_all(Swapper& sw, const std::vector<SwapIo>& ios) {
  if (ios.size() == 1) return swap_in(sw, ios[0].name, ios[0].data, ios[0].bytes);
  std::vector<SwapHandle> hs;
  Status first;
  for (const auto& io : ios) {
    auto h = sw.swap_in(io.name, io.data, io.bytes);
    if (!h) {
      first = h.error();
      break;
    }
    hs.push_back(*h);
  }
  return wait_all(hs, first);
}

Status Engine::Impl::swap_out_all(Swapper& sw, const std::vector<SwapIo>& ios) {
  if (ios.size() == 1) return swap_out(sw, ios[0].name, ios[0].data, ios[0].bytes);
  std::vector<SwapHandle> hs;
  Status first;
  for (const auto& io : ios) {
    first = reserve_nvme(io.name, io.bytes);
    if (!first.ok()) break;
    auto h = sw.swap_out(io.name, io.data, io.bytes, SourceUse::borrow);
    if (!h) {
      first = h.error();
      break;
    }
    hs.push_back(*h);
  }
  return wait_all(hs, first);
}

// --- initialisation ------------------------------------------------------------------------------------------------

Status Engine::Impl::init_params() {
  // The model is materialised in fp32 on the host (HF builds it in fp32, then casts): the whole model, or one
  // module at a time under ZeRO-3's zero.Init — what the Plan's init peak counts.
  const bool zero_init = stage == 3;
  int64_t chunk = 0;
  for (const auto& p : params) chunk += p.numel;
  if (zero_init) {
    chunk = 0;
    for (const auto& mi : model->modules()) {
      int64_t n = 0;
      for (int32_t p : mi.params) n += params[static_cast<size_t>(p)].numel;
      chunk = std::max(chunk, n);
    }
  }
  auto staging = alloc_cpu(4 * chunk, false, "init staging (fp32 model while it is built)");
  if (!staging) return staging.error();
  auto fp32_model = GptModel::create(m, DType::fp32, s.micro_batch_per_gpu, s.run.seq_len);
  if (!fp32_model) return fp32_model.error();
  // NVMe homes need the swapper now.
  const auto& z = s.zero;
  auto make_swapper = [&](const std::string& path) -> Result<std::unique_ptr<Swapper>> {
    if (path.empty()) return core::bad_input("an NVMe offload needs nvme_path");
    const std::string dir = path + "/zerosim-" + std::to_string(::getpid()) + "-rank" + std::to_string(comm->rank());
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return core::io_error("NVMe path " + path + ": cannot create " + dir + ": " + ec.message());
    const AioConfig aio = aio_from_ds(s.aio);
    // Tensors move zero-copy from the Plan's pinned swap buffers; the swapper's own pool (one buffer) only bounces
    // a ragged last page. A pool buffer is also the swapper's I/O chunk: one aio block
    // (EngineOptions::swap_chunk_bytes overrides it).
    const SwapperOptions so = zero_copy_swapper_options({dir}, aio, o.swap_chunk_bytes);
    const int64_t chunk = so.buffer_bytes;
    auto sw = Swapper::create(so, o.io_env);
    if (!sw) return core::io_error("NVMe path " + path + ": " + sw.error().message);
    extra("swapper bounce buffer (one aio block per NVMe path)", chunk);
    auto pool = alloc_cpu(chunk, true, "swapper bounce buffer");
    if (!pool) return pool.error();
    swapper_pools.push_back(std::move(*pool));
    return std::move(*sw);
  };
  bool need_par = false;
  for (const auto& p : params) need_par = need_par || p.lp_home == Tier::nvme;
  if (need_par) {
    auto sw = make_swapper(z.offload_param.nvme_path);
    if (!sw) return sw.error();
    par_swapper = std::move(*sw);
  }
  if (opt_dev == core::OffloadDevice::nvme) {
    if (par_swapper && z.offload_optimizer.nvme_path == z.offload_param.nvme_path) {
      opt_swapper = par_swapper.get();
    } else {
      auto sw = make_swapper(z.offload_optimizer.nvme_path);
      if (!sw) return sw.error();
      opt_swapper_owned = std::move(*sw);
      opt_swapper = opt_swapper_owned.get();
    }
  }

  auto* f = staging->as<float>();
  for (size_t i = 0; i < params.size();) {
    // Fill the staging with as many whole parameters as fit (one module's worth under zero.Init).
    size_t j = i;
    int64_t n = 0;
    while (j < params.size() && (n + params[j].numel <= chunk || j == i)) n += params[j++].numel;
    int64_t off = 0;
    for (size_t p = i; p < j; ++p) {
      // Each element depends only on (seed, parameter, index): filled on CPU Adam's threads.
      host_parallel(params[p].numel,
                    [&](int64_t lo, int64_t hi) { fp32_model->init_param(p, f + off, o.seed, lo, hi); });
      ParamRt& r = params[p];
      // Every rank builds the whole (seeded) parameter and keeps its partition; stage 3's padding is zeros.
      const int64_t valid = valid_part(r);
      // Cast on the host, then into the parameter's homes (device or host memory).
      std::vector<unsigned char> full(static_cast<size_t>(r.numel * lp)), slice(static_cast<size_t>(r.part * lp), 0);
      dispatch(dt, [&](auto tag) {
        using T = decltype(tag);
        cast_from_f32<T>(reinterpret_cast<T*>(full.data()), f + off, r.numel);
        cast_from_f32<T>(reinterpret_cast<T*>(slice.data()), f + off + r.part_start, valid);
      });
      if (r.lp_full) ZS_TRY(K->copy_sync(r.lp_full, full.data(), r.numel * lp));
      if (r.lp_part) ZS_TRY(K->copy_sync(r.lp_part, slice.data(), r.part * lp));
      if (r.lp_home == Tier::nvme) ZS_TRY(swap_out(*par_swapper, r.swap_name, slice.data(), r.part * lp));
      off += r.numel;
    }
    i = j;
  }
  return {};
}

Status Engine::Impl::zero_sync(void* dst, int64_t bytes) {
  static const std::vector<unsigned char> zeros(size_t{16} << 20, 0);
  for (int64_t off = 0; off < bytes;) {
    const int64_t n = std::min<int64_t>(bytes - off, static_cast<int64_t>(zeros.size()));
    ZS_TRY(K->copy_sync(bytes_of(dst) + off, zeros.data(), n));
    off += n;
  }
  return {};
}

// Optimizer states from the lp parameters: master = float(lp), m = v = 0 (DeepSpeed clones the 16-bit partition).
// Computed on the host and copied to wherever the states live (device or host memory).
Status Engine::Impl::init_states() {
  Engine::Impl& e = *this;
  const int64_t state_b = e.s.bf16.bf16_optimizer_states ? 2 : 4;
  std::vector<unsigned char> lp_tmp;
  std::vector<float> f32_tmp;
  for (size_t gi = 0; gi < e.groups.size(); ++gi) {
    GroupRt& g = e.groups[gi];
    std::vector<float> nv_master;
    if (g.tier == Tier::nvme) nv_master.assign(static_cast<size_t>(g.elements), 0.0f);
    const bool self = !e.mixed && g.tier == Tier::gpu &&
                      g.master == static_cast<float*>(e.params[g.first].lp_full ? e.params[g.first].lp_full
                                                                                : e.params[g.first].lp_part);
    for (size_t p = g.first; p < g.last && !self; ++p) {
      ParamRt& r = e.params[p];
      lp_tmp.resize(static_cast<size_t>(r.part * e.lp));
      const void* src = r.lp_part ? r.lp_part : r.lp_full ? bytes_of(r.lp_full) + r.part_start * e.lp : nullptr;
      if (src)
        ZS_TRY(K->copy_sync(lp_tmp.data(), src, r.part * e.lp));
      else
        ZS_TRY(e.swap_in(*e.par_swapper, r.swap_name, lp_tmp.data(), r.part * e.lp));
      float* master = g.tier == Tier::nvme ? nv_master.data() + r.group_offset : nullptr;
      if (!master) {
        f32_tmp.resize(static_cast<size_t>(r.part));
        master = f32_tmp.data();
      }
      dispatch(e.dt, [&](auto tag) {
        using T = decltype(tag);
        (void)cast_to_f32_sumsq<T>(master, reinterpret_cast<const T*>(lp_tmp.data()), r.part);
      });
      if (g.tier != Tier::nvme) ZS_TRY(K->copy_sync(g.master + r.group_offset, master, 4 * r.part));
    }
    if (g.tier == Tier::nvme) {
      std::vector<unsigned char> zeros(static_cast<size_t>(g.elements * state_b), 0);
      std::vector<float> zf(static_cast<size_t>(g.elements), 0.0f);
      ZS_TRY(e.swap_out(*e.opt_swapper, "g" + std::to_string(gi) + ".master", nv_master.data(), 4 * g.elements));
      ZS_TRY(e.swap_out(*e.opt_swapper, "g" + std::to_string(gi) + ".exp_avg", zeros.data(), state_b * g.elements));
      ZS_TRY(e.swap_out(*e.opt_swapper, "g" + std::to_string(gi) + ".exp_avg_sq", zeros.data(), state_b * g.elements));
      for (size_t ri : g.runs)
        ZS_TRY(e.swap_out(*e.opt_swapper, e.grad_runs[ri].name, zf.data(), 4 * e.grad_runs[ri].elements));
    } else {
      ZS_TRY(zero_sync(g.m, g.elements * state_b));
      ZS_TRY(zero_sync(g.v, g.elements * state_b));
      if (g.g32 && (e.mixed || g.tier != Tier::gpu)) ZS_TRY(zero_sync(g.g32, 4 * g.elements));
    }
  }
  return {};
}

}  // namespace zs::exec
