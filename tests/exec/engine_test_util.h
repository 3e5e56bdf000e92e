// Shared by the engine tests: ds_config text for a ZeRO variant, the inputs (tiny model, ci-2core), an engine on
// the host device, and the plain reference trainer the engine must equal bit for bit (no Plan, no ZeRO: the
// whole model, one Adam over every parameter, the same gradient and scalar rules).
#pragma once

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/hardware.h"
#include "core/model.h"
#include "core/strategy.h"
#include "exec/communicator.h"
#include "exec/cpu_adam.h"
#include "exec/data.h"
#include "exec/engine.h"
#include "exec/gpt_model.h"
#include "exec/host_device.h"

namespace zs::exec::testing {

struct Variant {
  int stage = 0;
  std::string opt = "none", par = "none";  // offload devices
  int ga = 1;
  int micro_batch = 2;
  double clip = 1.0;
  std::string dtype = "bf16";  // bf16, fp16, fp32
  bool ckpt = false, cpu_ckpt = false;
  double lr = 1e-3;
  std::string nvme = "/tmp";
  std::string extra_zero;              // more zero_optimization keys, ", \"k\": v"
  int64_t sub_group_size = 40000;      // stage 3: several optimizer groups for the tiny model
  int64_t reduce_bucket_size = 20000;  // several buckets for the tiny model
  int64_t param_buffer_size = 65536;   // offload_param.buffer_size (elements)
  int64_t persistence_threshold = 0;   // stage3_param_persistence_threshold: 0 fetches every parameter
};

inline std::string ds_config(const Variant& v) {
  std::string z =
      "\"stage\": " + std::to_string(v.stage) + ", \"reduce_bucket_size\": " + std::to_string(v.reduce_bucket_size);
  if (v.stage >= 1 && v.stage <= 2) z += ", \"allgather_bucket_size\": 20000";
  if (v.stage == 3)
    z += ", \"stage3_param_persistence_threshold\": " + std::to_string(v.persistence_threshold) +
         ", \"stage3_prefetch_bucket_size\": 20000, "
         "\"stage3_max_live_parameters\": 60000, \"sub_group_size\": " +
         std::to_string(v.sub_group_size);
  if (v.opt != "none")
    z += ", \"offload_optimizer\": {\"device\": \"" + v.opt + "\", \"nvme_path\": \"" + v.nvme + "\"}";
  if (v.par != "none")
    z += ", \"offload_param\": {\"device\": \"" + v.par + "\", \"nvme_path\": \"" + v.nvme +
         "\", \"buffer_size\": " + std::to_string(v.param_buffer_size) + ", \"max_in_cpu\": 0}";
  z += v.extra_zero;
  std::string prec = v.dtype == "bf16"   ? "\"bf16\": {\"enabled\": true}"
                     : v.dtype == "fp16" ? "\"fp16\": {\"enabled\": true, \"initial_scale_power\": 12}"
                                         : "\"bf16\": {\"enabled\": false}";
  std::string ac = v.ckpt ? std::string(", \"activation_checkpointing\": {\"cpu_checkpointing\": ") +
                                (v.cpu_ckpt ? "true" : "false") + "}"
                          : "";
  char lr[32];
  std::snprintf(lr, sizeof lr, "%g", v.lr);
  return "{\"train_micro_batch_size_per_gpu\": " + std::to_string(v.micro_batch) +
         ", \"gradient_accumulation_steps\": " + std::to_string(v.ga) +
         ", \"gradient_clipping\": " + std::to_string(v.clip) + ", " + prec +
         ", \"optimizer\": {\"type\": \"AdamW\", \"params\": {\"lr\": " + lr +
         ", \"betas\": [0.9, 0.999], \"eps\": 1e-8, \"weight_decay\": 0.01}}, \"zero_optimization\": {" + z + "}" + ac +
         "}";
}

struct Inputs {
  core::ModelSpec model;
  core::Hardware hw;
  core::Strategy s;
};

inline Inputs inputs(const Variant& v, int64_t seq_len = 32, const std::string& model = "tiny", int64_t world = 1) {
  Inputs in;
  in.model = *core::load_model(model);
  in.hw = *core::load_hardware("ci-2core");
  core::RunSettings run;
  run.nodes = world;  // one rank (host device) per node
  run.seq_len = seq_len;
  run.hidden = in.model.hidden;
  run.checkpoint_activations = v.ckpt;
  auto s = core::parse_ds_config_text(ds_config(v), "test.json", run);
  if (!s) throw std::runtime_error(s.error().message);
  in.s = *s;
  return in;
}

// The reference: the same model, data and math with none of the Plan's machinery.
class Reference {
 public:
  explicit Reference(const Inputs& in, uint64_t seed = 1, int delay = 0)
      : s_(in.s),
        delay_(delay),
        model_(*GptModel::create(in.model, dtype_of(in.s.model_dtype()), in.s.micro_batch_per_gpu, in.s.run.seq_len)) {
    auto f32 = *GptModel::create(in.model, DType::fp32, in.s.micro_batch_per_gpu, in.s.run.seq_len);
    const int64_t e = dtype_bytes(model_.dtype());
    for (size_t p = 0; p < model_.params().size(); ++p) {
      const int64_t n = model_.params()[p].numel;
      std::vector<float> x(static_cast<size_t>(n));
      f32.init_param(p, x.data(), seed);
      lp_.emplace_back(static_cast<size_t>(n * e));
      grads_.emplace_back(static_cast<size_t>(n * e));
      dispatch(model_.dtype(), [&](auto tag) {
        using T = decltype(tag);
        cast_from_f32<T>(reinterpret_cast<T*>(lp_.back().data()), x.data(), n);
      });
      offsets_.push_back(master_.size());
      for (int64_t i = 0; i < n; ++i)
        master_.push_back(dispatch(model_.dtype(), [&](auto tag) {
          using T = decltype(tag);
          return to_f32(reinterpret_cast<const T*>(lp_.back().data())[i]);
        }));
    }
    if (s_.fp16.enabled) {
      scale_ =
          s_.fp16.loss_scale > 0 ? s_.fp16.loss_scale : std::pow(2.0, static_cast<double>(s_.fp16.initial_scale_power));
      hysteresis_ = s_.fp16.hysteresis;
    }
    m_.assign(master_.size(), 0.0f);
    v_.assign(master_.size(), 0.0f);
    g32_.assign(master_.size(), 0.0f);
    AdamHyper h;
    h.lr = static_cast<float>(s_.optimizer.lr);
    h.beta1 = static_cast<float>(s_.optimizer.beta1);
    h.beta2 = static_cast<float>(s_.optimizer.beta2);
    h.eps = static_cast<float>(s_.optimizer.eps);
    h.weight_decay = static_cast<float>(s_.optimizer.weight_decay);
    adam_ = std::make_unique<CpuAdam>(h, AdamOptions{.threads = 1});
  }

  // One step; `delay` 1 applies the gradients one step late (dpu).
  double step(DataLoader& data) {
    const int64_t N = model_.tokens(), ga = s_.gradient_accumulation_steps;
    std::vector<const void*> pp;
    std::vector<void*> gp;
    for (auto& x : lp_) pp.push_back(x.data());
    for (auto& x : grads_) gp.push_back(x.data());
    double loss = 0;
    std::vector<int32_t> tok(static_cast<size_t>(2 * N));
    std::vector<std::vector<int32_t>> batches;
    for (int64_t k = 0; k < ga; ++k) {
      data.next(tok.data(), tok.data() + N);
      batches.push_back(tok);
    }
    // dpu: the previous step's gradients update the master now; the lp copy changes after this backward.
    if (delay_ && have_pending_) adam_update(pending_multiplier_);
    for (int64_t k = 0; k < ga; ++k)
      loss += forward_backward(model_, pp, gp, k == 0 ? GradWrite::overwrite : GradWrite::accumulate,
                               batches[static_cast<size_t>(k)].data(), batches[static_cast<size_t>(k)].data() + N,
                               static_cast<float>(scale_ / (static_cast<double>(N) * static_cast<double>(ga))));
    double total = 0;
    for (size_t p = 0; p < lp_.size(); ++p)
      total += dispatch(model_.dtype(), [&](auto tag) {
        using T = decltype(tag);
        return cast_to_f32_sumsq<T>(g32_.data() + offsets_[p], reinterpret_cast<const T*>(grads_[p].data()),
                                    model_.params()[p].numel);
      });
    norm_ = std::sqrt(total);
    const bool overflow = !std::isfinite(total);
    double combined = scale_;
    if (s_.gradient_clipping > 0 && !overflow) {
      const double c = (norm_ / scale_ + 1e-6) / s_.gradient_clipping;
      if (c > 1) combined = c * scale_;
    }
    const float mult = combined == 1.0 ? 1.0f : static_cast<float>(1.0 / combined);
    if (delay_) {
      pending_multiplier_ = mult;
      have_pending_ = !overflow;
    } else if (!overflow) {
      adam_update(mult);
    }
    skipped_ = overflow;
    update_scale(overflow);
    cast_lp();
    return loss / static_cast<double>(ga);
  }

  const std::vector<float>& master() const { return master_; }
  double norm() const { return norm_; }
  double scale() const { return scale_; }
  bool skipped() const { return skipped_; }

 private:
  void adam_update(float mult) {
    if (mult != 1.0f)
      for (auto& g : g32_) g *= mult;
    AdamBuffers b;
    b.params = master_.data();
    b.grads = g32_.data();
    b.exp_avg = m_.data();
    b.exp_avg_sq = v_.data();
    b.n = static_cast<int64_t>(master_.size());
    (void)adam_->step(++adam_step_, b);
  }
  // DeepSpeed's DynamicLossScaler, written out again.
  void update_scale(bool overflow) {
    if (!s_.fp16.enabled || s_.fp16.loss_scale > 0) return;
    if (overflow) {
      if (s_.fp16.hysteresis == 1 || hysteresis_ == 1)
        scale_ = std::max(scale_ / 2, s_.fp16.min_loss_scale);
      else
        --hysteresis_;
      last_overflow_ = iter_;
    } else if ((iter_ - last_overflow_) % s_.fp16.loss_scale_window == 0) {
      hysteresis_ = s_.fp16.hysteresis;
      scale_ *= 2;
    }
    ++iter_;
  }
  void cast_lp() {
    for (size_t p = 0; p < lp_.size(); ++p)
      dispatch(model_.dtype(), [&](auto tag) {
        using T = decltype(tag);
        cast_from_f32<T>(reinterpret_cast<T*>(lp_[p].data()), master_.data() + offsets_[p], model_.params()[p].numel);
      });
  }

  core::Strategy s_;
  int delay_ = 0;
  GptModel model_;
  std::vector<std::vector<unsigned char>> lp_, grads_;
  std::vector<size_t> offsets_;
  std::vector<float> master_, m_, v_, g32_;
  std::unique_ptr<CpuAdam> adam_;
  int64_t adam_step_ = 0;
  bool have_pending_ = false;
  double scale_ = 1;
  int64_t hysteresis_ = 2, iter_ = 0, last_overflow_ = -1;
  bool skipped_ = false;
  float pending_multiplier_ = 1.0f;
  double norm_ = 0;
};

struct Run {
  std::unique_ptr<Device> dev;
  std::unique_ptr<Communicator> comm;
  std::unique_ptr<Engine> engine;
};

// On the host device, or on `dev` when given (the CUDA tests pass a GPU).
inline core::Result<Run> make_engine(const Inputs& in, core::Schedule sched = core::Schedule::deepspeed,
                                     std::unique_ptr<Device> dev = nullptr) {
  Run r;
  r.dev = dev ? std::move(dev) : make_host_device({.memory_bytes = in.hw.gpu.memory_bytes()});
  r.comm = make_single_rank_communicator();
  EngineOptions o;
  o.schedule = sched;
  o.cpu_adam_threads = 1;
  o.fsync_checkpoints = false;
  o.swap_chunk_bytes = 4096;  // a negligible bounce pool: the memory tests compare the CPU tier within 1%
  auto e = Engine::create(in.model, in.hw, in.s, *r.dev, *r.comm, o);
  if (!e) return e.error();
  r.engine = std::move(*e);
  return r;
}

struct TempDir {
  std::string path;
  TempDir() {
    char t[] = "/tmp/zs_test_engine_XXXXXX";
    if (!::mkdtemp(t)) throw std::runtime_error("mkdtemp");
    path = t;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

inline const Corpus& corpus() {
  static const Corpus c = synthetic_corpus(1 << 16, 7);
  return c;
}

}  // namespace zs::exec::testing
