// The engine on the CUDA device (`zerosim train --device cuda`): the same Plan, handlers and bit rules as on the
// host device, with the GPT on the CUDA kernels and cuBLASLt. Every stage and offload placement gives the same
// losses bit for bit on the GPU (as on the host); the GPU's losses track the host device's within the kernels'
// rounding; memory per tier is the Plan's; the trace's times are the GPU's. All [.gpu]: they run on the H200
// (scripts/gpu-check.sh) and skip elsewhere.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>

#include "exec/cuda/cuda_device.h"
#include "tests/exec/cuda_test_util.h"
#include "tests/exec/engine_test_util.h"

using namespace zs::exec;
using namespace zs::exec::testing;
using zs::exec::test::require_gpu;

namespace {

std::unique_ptr<Device> gpu(const Inputs& in) {
  auto d = make_cuda_device({.memory_bytes = in.hw.gpu.memory_bytes()});
  if (!d) FAIL(d.error().message);
  return std::move(*d);
}

struct Losses {
  std::vector<double> loss;
  std::vector<float> master;
  MeasuredMemory mem;
  zs::core::Plan plan;
  zs::core::Trace trace;
};

Losses run(const Inputs& in, int steps, bool on_gpu, zs::core::Schedule sched = zs::core::Schedule::deepspeed) {
  auto r = make_engine(in, sched, on_gpu ? gpu(in) : nullptr);
  if (!r) FAIL(r.error().message);
  DataLoader data(corpus(), in.s.micro_batch_per_gpu, in.s.run.seq_len, 3);
  Losses out;
  for (int i = 0; i < steps; ++i) {
    auto s = r->engine->step(data);
    if (!s) FAIL("step " << i << ": " << s.error().message);
    out.loss.push_back(s->loss);
  }
  out.master = *r->engine->master_params();
  out.mem = r->engine->memory();
  out.plan = r->engine->plan();
  out.trace = r->engine->last_trace();
  return out;
}

Variant variant(int stage, const char* opt, const char* par) {
  Variant v;
  v.stage = stage;
  v.opt = opt;
  v.par = par;
  return v;
}

zs::core::ModelSpec small_llama() {
  zs::core::ModelSpec m;
  m.name = "gpu-llama";
  m.arch = zs::core::Arch::llama;
  m.layers = 2;
  m.hidden = 64;
  m.heads = 4;
  m.kv_heads = 2;
  m.head_dim = 16;
  m.ffn_hidden = 128;
  m.vocab = 256;
  m.max_seq_len = 64;
  m.tied_embeddings = false;
  m.activation = zs::core::Activation::swiglu;
  m.norm = zs::core::Norm::rmsnorm;
  m.position = zs::core::Position::rope;
  m.mlp_bias = m.attn_out_bias = m.norm_bias = m.qkv_bias = false;
  return m;
}

}  // namespace

TEST_CASE("GPU engine: every stage and offload placement gives the same losses bit for bit (20 steps)",
          "[.gpu][cuda][engine]") {
  require_gpu();
  const auto base = run(inputs(variant(0, "none", "none")), 20, true);
  std::vector<Variant> vs;
  for (int st : {1, 2})
    for (const char* o : {"none", "cpu"}) vs.push_back(variant(st, o, "none"));
  for (const char* o : {"none", "cpu", "nvme"})
    for (const char* p : {"none", "cpu", "nvme"}) vs.push_back(variant(3, o, p));
  for (const char* p : {"none", "nvme"}) {  // persistent parameters (biases, norms): kept whole on the GPU
    Variant v = variant(3, "nvme", p);
    v.persistence_threshold = 1000;
    vs.push_back(v);
  }
  for (const auto& v : vs) {
    INFO("stage " << v.stage << ", offload_optimizer " << v.opt << ", offload_param " << v.par
                  << ", persistence threshold " << v.persistence_threshold);
    const auto r = run(inputs(v), 20, true);
    REQUIRE(r.loss.size() == base.loss.size());
    for (size_t i = 0; i < r.loss.size(); ++i) {
      INFO("step " << i << ": " << r.loss[i] << " vs " << base.loss[i]);
      REQUIRE(r.loss[i] == base.loss[i]);
    }
    CHECK((r.master == base.master));
  }
  // It learns: the mean of the last 5 losses well under the first.
  CHECK(base.loss.back() < base.loss.front() - 0.5);
}

TEST_CASE("GPU engine: losses track the host device's reference kernels", "[.gpu][cuda][engine]") {
  require_gpu();
  // GPT-2 (tiny) and LLaMA-style (RoPE, RMSNorm, SwiGLU, GQA, untied head) models, bf16 and fp32.
  struct Case {
    const char* what;
    Inputs in;
    double tol;  // |gpu - host| per step's loss, absolute
  };
  std::vector<Case> cases;
  cases.push_back({"tiny bf16, ZeRO-2 offload", inputs(variant(2, "cpu", "none")), 0.03});
  {
    Variant v = variant(0, "none", "none");
    v.dtype = "fp32";
    cases.push_back({"tiny fp32, ZeRO-0", inputs(v), 2e-4});
  }
  {
    Inputs in = inputs(variant(3, "cpu", "none"));
    in.model = small_llama();
    cases.push_back({"llama-style bf16, ZeRO-3 offload", in, 0.03});
  }
  {  // head dim 128 (GPT-3 XL's), persistent parameters, NVMe
    Variant v = variant(3, "nvme", "nvme");
    v.persistence_threshold = 1000;
    v.reduce_bucket_size = 1 << 20;  // the 256 x 1024 MLP weights exceed the tiny model's 20000-element bucket
    v.param_buffer_size = 1 << 20;
    Inputs in = inputs(v);
    in.model.name = "gpu-hd128";
    in.model.hidden = 256;
    in.model.heads = in.model.kv_heads = 2;
    in.model.ffn_hidden = 1024;
    cases.push_back({"GPT-2 layout, head dim 128, bf16, ZeRO-Infinity with persistent parameters", in, 0.03});
  }
  for (auto& c : cases) {
    INFO(c.what);
    const auto g = run(c.in, 10, true), h = run(c.in, 10, false);
    for (size_t i = 0; i < g.loss.size(); ++i) {
      INFO("step " << i << ": gpu " << g.loss[i] << ", host " << h.loss[i]);
      CHECK(std::fabs(g.loss[i] - h.loss[i]) <= c.tol);
    }
  }
}

TEST_CASE("GPU engine: GA, activation checkpointing, fp16 and the dpu/overlap schedules run and learn",
          "[.gpu][cuda][engine]") {
  require_gpu();
  struct Case {
    const char* what;
    Variant v;
    zs::core::Schedule sched = zs::core::Schedule::deepspeed;
  };
  std::vector<Case> cases;
  {
    Variant v = variant(2, "cpu", "none");
    v.ga = 2;
    cases.push_back({"ZeRO-2 offload, GA 2", v});
  }
  {
    Variant v = variant(3, "cpu", "cpu");
    v.ckpt = v.cpu_ckpt = true;
    cases.push_back({"ZeRO-3, checkpoints on the CPU", v});
  }
  {
    Variant v = variant(1, "none", "none");
    v.dtype = "fp16";
    cases.push_back({"ZeRO-1 fp16 (dynamic loss scale)", v});
  }
  cases.push_back({"ZeRO-2 offload, dpu", variant(2, "cpu", "none"), zs::core::Schedule::dpu});
  cases.push_back({"ZeRO-2 offload, overlap", variant(2, "cpu", "none"), zs::core::Schedule::overlap});
  for (const auto& c : cases) {
    INFO(c.what);
    const auto g = run(inputs(c.v), 15, true, c.sched);
    const auto h = run(inputs(c.v), 15, false, c.sched);
    for (double l : g.loss) CHECK(std::isfinite(l));
    CHECK(g.loss.back() < g.loss.front() - 0.3);
    CHECK(std::fabs(g.loss.back() - h.loss.back()) <= 0.05);
  }
}

TEST_CASE("GPU engine: memory per tier is the Plan's, and the trace's times are the GPU's", "[.gpu][cuda][engine]") {
  require_gpu();
  for (const auto& v : {variant(2, "cpu", "none"), variant(3, "nvme", "nvme"), variant(0, "none", "none")}) {
    INFO("stage " << v.stage << ", offload_optimizer " << v.opt << ", offload_param " << v.par);
    const auto r = run(inputs(v), 3, true);
    int64_t extras_gpu = 0;  // the device's token ids: the one GPU buffer outside the Plan
    for (const auto& [k, b] : r.mem.extras)
      if (k.rfind("token ids on the device", 0) == 0) extras_gpu = b;
    CHECK(extras_gpu > 0);
    CHECK(r.mem.static_bytes[0] - extras_gpu == r.plan.static_bytes[0]);
    for (int t : {0, 1}) {
      const double plan_peak = static_cast<double>(r.plan.peak_bytes[static_cast<size_t>(t)]);
      const double got = static_cast<double>(r.mem.peak_bytes[static_cast<size_t>(t)] - (t == 0 ? extras_gpu : 0));
      INFO("tier " << t << ": measured " << got << ", plan " << plan_peak);
      CHECK(std::fabs(got - plan_peak) <= 0.01 * plan_peak);
    }
    // Every op ran inside the step, each stream's ops in order, the forward before the backward.
    REQUIRE(!r.trace.events.empty());
    double fwd_end = 0, bwd_start = 1e30;
    std::map<int, double> last_end;
    for (const auto& e : r.trace.events) {
      CHECK(e.start_s >= 0);
      CHECK(e.end_s >= e.start_s);
      CHECK(e.end_s <= r.trace.step_time_s + 1e-9);
      if (e.kind == zs::core::OpKind::forward) fwd_end = std::max(fwd_end, e.end_s);
      if (e.kind == zs::core::OpKind::backward) bwd_start = std::min(bwd_start, e.start_s);
    }
    CHECK(fwd_end <= bwd_start + 1e-6);
    CHECK(r.trace.step_time_s > 0);
  }
}
