// The engine's training state to and from a checkpoint folder (checkpoint.h): per parameter its lp values, fp32
// master, exp_avg, exp_avg_sq (and, under dpu, the gradients still waiting to be applied), read from wherever the
// Plan keeps them — GPU, CPU or NVMe through the swapper — plus the scalar state that makes a resumed run continue
// bit for bit: optimizer step, loss scaler, pending dpu scalars, data loader position and RNG.
#include <cstring>

#include "exec/checkpoint.h"
#include "exec/engine_impl.h"

namespace zs::exec {

using core::Result;

namespace {

// One group's NVMe-resident state, read once while its parameters' tensors are written.
struct GroupCache {
  int64_t group = -1, which = -1;
  std::vector<unsigned char> bytes;
};

Status read_group_state(Engine::Impl& I, size_t gi, int which, GroupCache& cache) {
  if (cache.group == static_cast<int64_t>(gi) && cache.which == which) return {};
  const GroupRt& g = I.groups[gi];
  const int64_t state_b = I.s.bf16.bf16_optimizer_states ? 2 : 4;
  const char* suffix[4] = {".master", ".exp_avg", ".exp_avg_sq", ".grad32"};
  const int64_t bytes = (which == 1 || which == 2 ? state_b : 4) * g.elements;
  cache.bytes.resize(static_cast<size_t>(bytes));
  ZS_TRY(I.swap_in(*I.opt_swapper, "g" + std::to_string(gi) + suffix[which], cache.bytes.data(), bytes));
  cache.group = static_cast<int64_t>(gi);
  cache.which = which;
  return {};
}

// Where a parameter's state of kind `which` (0 master, 1 m, 2 v, 3 fp32 grad) lives in host-addressable memory,
// or nullptr when it is on NVMe.
unsigned char* state_ptr(Engine::Impl& I, size_t p, int which) {
  const ParamRt& r = I.params[p];
  GroupRt& g = I.groups[static_cast<size_t>(r.group)];
  if (g.tier == Tier::nvme) return nullptr;
  const int64_t state_b = I.s.bf16.bf16_optimizer_states ? 2 : 4;
  switch (which) {
    case 0:
      return reinterpret_cast<unsigned char*>(g.master + r.group_offset);
    case 1:
      return static_cast<unsigned char*>(g.m) + r.group_offset * state_b;
    case 2:
      return static_cast<unsigned char*>(g.v) + r.group_offset * state_b;
    default:
      return reinterpret_cast<unsigned char*>(g.g32 + r.group_offset);
  }
}

const void* lp_source(const ParamRt& r) { return r.lp_full ? r.lp_full : r.lp_part; }

}  // namespace

Status Engine::save_checkpoint(const std::string& dir, const DataLoader& data) const {
  Impl& I = *impl_;
  if (I.world > 1)
    return core::Error{core::ErrorKind::unsupported,
                       "checkpoints of a multi-rank run (one folder per rank's partitions) are not supported yet"};
  ZS_TRY(I.dev->synchronize());
  const int64_t state_b = I.s.bf16.bf16_optimizer_states ? 2 : 4;
  const std::string sdt = state_b == 2 ? "bf16" : "fp32";
  auto cache = std::make_shared<GroupCache>();
  std::vector<CheckpointTensor> t;
  for (size_t p = 0; p < I.params.size(); ++p) {
    const ParamRt& r = I.params[p];
    t.push_back({r.name, to_string(I.dt), r.numel, r.numel * I.lp, [&I, p](void* dst) -> Status {
                   const ParamRt& q = I.params[p];
                   if (const void* src = lp_source(q)) return I.K->copy_sync(dst, src, q.numel * I.lp);
                   return I.swap_in(*I.par_swapper, q.swap_name, dst, q.part * I.lp);
                 }});
  }
  const char* suffix[4] = {".master", ".exp_avg", ".exp_avg_sq", ".grad32"};
  const int kinds = (I.o.schedule == core::Schedule::dpu && I.pending_grads) ? 4 : 3;
  for (int which = 0; which < kinds; ++which)
    for (size_t p = 0; p < I.params.size(); ++p) {
      const ParamRt& r = I.params[p];
      const int64_t eb = (which == 1 || which == 2) ? state_b : 4;
      t.push_back({r.name + suffix[which], which == 1 || which == 2 ? sdt : "fp32", r.part, r.part * eb,
                   [&I, p, which, eb, cache](void* dst) -> Status {
                     const ParamRt& q = I.params[p];
                     if (const unsigned char* src = state_ptr(I, p, which))
                       return I.K->copy_sync(dst, src, q.part * eb);
                     ZS_TRY(read_group_state(I, static_cast<size_t>(q.group), which, *cache));
                     std::memcpy(dst, cache->bytes.data() + q.group_offset * eb, static_cast<size_t>(q.part * eb));
                     return {};
                   }});
    }
  CheckpointInfo info;
  info.step = I.step_index;
  auto& st = info.state;
  st["model"] = I.m.name;
  st["ds_config"] = I.s.source;
  st["schedule"] = core::to_string(I.o.schedule);
  st["stage"] = I.stage;
  st["dtype"] = to_string(I.dt);
  st["parameters"] = I.params.size();
  st["seed"] = I.o.seed;
  st["adam_step"] = I.adam_step;
  st["loss_scaler"] = {{"scale", I.scaler.scale},
                       {"cur_iter", I.scaler.cur_iter},
                       {"last_overflow_iter", I.scaler.last_overflow_iter},
                       {"cur_hysteresis", I.scaler.cur_hysteresis}};
  st["pending"] = {{"grads", I.pending_grads},
                   {"norm", I.pending.norm},
                   {"overflow", I.pending.overflow},
                   {"multiplier", I.pending.multiplier},
                   {"loss_scale", I.pending.loss_scale}};
  const LoaderState ls = data.state();
  st["data"] = {{"rng", ls.rng}, {"batches", ls.batches}};
  CheckpointOptions co;
  co.fsync = I.o.fsync_checkpoints;
  return zs::exec::save_checkpoint(dir, info, t, co);
}

Status Engine::load_checkpoint(const std::string& dir, DataLoader& data) {
  Impl& I = *impl_;
  if (I.world > 1)
    return core::Error{core::ErrorKind::unsupported,
                       "checkpoints of a multi-rank run (one folder per rank's partitions) are not supported yet"};
  ZS_TRY(I.dev->synchronize());
  auto c = open_checkpoint(dir);
  if (!c) return c.error();
  const auto& st = c->info().state;
  auto mismatch = [&](const std::string& what, const std::string& have, const std::string& want) {
    return core::bad_input("--resume " + c->path() + ": the checkpoint's " + what + " is " + have + ", this run's is " +
                           want);
  };
  if (st.value("model", "") != I.m.name) return mismatch("model", st.value("model", ""), I.m.name);
  if (st.value("dtype", "") != to_string(I.dt)) return mismatch("dtype", st.value("dtype", ""), to_string(I.dt));
  if (st.value("schedule", "") != core::to_string(I.o.schedule))
    return mismatch("schedule", st.value("schedule", ""), core::to_string(I.o.schedule));
  const int64_t state_b = I.s.bf16.bf16_optimizer_states ? 2 : 4;
  std::vector<unsigned char> buf;
  for (size_t p = 0; p < I.params.size(); ++p) {
    ParamRt& r = I.params[p];
    buf.resize(static_cast<size_t>(r.numel * I.lp));
    ZS_TRY(c->read(r.name, buf.data(), r.numel * I.lp));
    if (r.lp_full) ZS_TRY(I.K->copy_sync(r.lp_full, buf.data(), r.numel * I.lp));
    if (r.lp_part) ZS_TRY(I.K->copy_sync(r.lp_part, buf.data(), r.part * I.lp));
    if (r.lp_home == Tier::nvme) ZS_TRY(I.swap_out(*I.par_swapper, r.swap_name, buf.data(), r.part * I.lp));
  }
  const bool pending = st.value("pending", nlohmann::json::object()).value("grads", false);
  const char* suffix[4] = {".master", ".exp_avg", ".exp_avg_sq", ".grad32"};
  for (int which = 0; which < (pending ? 4 : 3); ++which) {
    const int64_t eb = (which == 1 || which == 2) ? state_b : 4;
    for (size_t gi = 0; gi < I.groups.size(); ++gi) {
      GroupRt& g = I.groups[gi];
      std::vector<unsigned char> group_bytes;
      if (g.tier == Tier::nvme) group_bytes.resize(static_cast<size_t>(g.elements * eb));
      std::vector<unsigned char> one;
      for (size_t p = g.first; p < g.last; ++p) {
        const ParamRt& r = I.params[p];
        if (unsigned char* dst = state_ptr(I, p, which)) {  // device or host memory: through a host buffer
          one.resize(static_cast<size_t>(r.part * eb));
          ZS_TRY(c->read(r.name + suffix[which], one.data(), r.part * eb));
          ZS_TRY(I.K->copy_sync(dst, one.data(), r.part * eb));
        } else {
          ZS_TRY(c->read(r.name + suffix[which], group_bytes.data() + r.group_offset * eb, r.part * eb));
        }
      }
      if (g.tier == Tier::nvme)
        ZS_TRY(
            I.swap_out(*I.opt_swapper, "g" + std::to_string(gi) + suffix[which], group_bytes.data(), g.elements * eb));
    }
  }
  I.step_index = c->info().step;
  I.adam_step = st.value("adam_step", int64_t{0});
  // CPU Adam tracks β^t by multiplying once per step (DeepSpeed's IncrementStep); a fresh optimizer told "step k"
  // would take pow(β, k), which can differ in the last bit. Replaying the product keeps a resumed run bit-identical.
  for (int64_t k = 1; k <= I.adam_step; ++k) (void)I.step_adam_scalars(k);
  const auto& ls = st.value("loss_scaler", nlohmann::json::object());
  I.scaler.scale = ls.value("scale", 1.0);
  I.scaler.cur_iter = ls.value("cur_iter", int64_t{0});
  I.scaler.last_overflow_iter = ls.value("last_overflow_iter", int64_t{-1});
  I.scaler.cur_hysteresis = ls.value("cur_hysteresis", I.scaler.delayed_shift);
  const auto& pd = st.value("pending", nlohmann::json::object());
  I.pending_grads = pd.value("grads", false);
  I.pending.ready = I.pending_grads;
  I.pending.norm = pd.value("norm", 0.0);
  I.pending.overflow = pd.value("overflow", false);
  I.pending.multiplier = pd.value("multiplier", 1.0f);
  I.pending.loss_scale = pd.value("loss_scale", 1.0);
  const auto& dj = st.value("data", nlohmann::json::object());
  LoaderState d;
  d.rng = dj.value("rng", uint64_t{0});
  d.batches = dj.value("batches", int64_t{0});
  data.restore(d);
  if (!c->note().empty()) I.note("resume: " + c->note());
  return {};
}

Result<std::vector<float>> Engine::master_params() const {
  Impl& I = *impl_;
  ZS_TRY(I.dev->synchronize());
  std::vector<float> out;
  GroupCache cache;
  for (size_t p = 0; p < I.params.size(); ++p) {
    const ParamRt& r = I.params[p];
    const float* src = reinterpret_cast<const float*>(state_ptr(I, p, 0));
    if (!src) {
      ZS_TRY(read_group_state(I, static_cast<size_t>(r.group), 0, cache));
      src = reinterpret_cast<const float*>(cache.bytes.data()) + r.group_offset;
    }
    const size_t at = out.size();
    out.resize(at + static_cast<size_t>(r.part));
    ZS_TRY(I.K->copy_sync(out.data() + at, src, 4 * r.part));
  }
  return out;
}

Result<std::vector<uint16_t>> Engine::lp_params_bits() const {
  Impl& I = *impl_;
  ZS_TRY(I.dev->synchronize());
  if (I.lp != 2) return core::bad_input("lp_params_bits: the model is fp32");
  if (I.stage == 3 && I.world > 1)
    return core::Error{core::ErrorKind::unsupported, "lp_params_bits: a ZeRO-3 rank holds only its partitions"};
  std::vector<uint16_t> out;
  for (const ParamRt& r : I.params) {
    std::vector<uint16_t> v(static_cast<size_t>(r.numel));
    if (const void* src = lp_source(r))
      ZS_TRY(I.K->copy_sync(v.data(), src, 2 * r.numel));
    else
      ZS_TRY(I.swap_in(*I.par_swapper, r.swap_name, v.data(), r.part * 2));
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

}  // namespace zs::exec
