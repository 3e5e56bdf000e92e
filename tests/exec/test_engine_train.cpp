// Training for real: on the synthetic corpus the tiny GPT's loss falls well below the corpus's unigram entropy
// (what a model without context reaches) within 200 steps; ZeRO-3 with parameters on NVMe (a model with
// partitions ≥ 1 MiB, so they really swap) equals the reference.
#include <catch2/catch.hpp>
#include <chrono>

#include "engine_test_util.h"

using namespace zs::exec;
using namespace zs::exec::testing;

TEST_CASE("the loss falls well below the unigram entropy within 200 steps", "[engine][train]") {
  Variant v;
  v.stage = 2;
  v.opt = "cpu";
  v.micro_batch = 4;
  v.lr = 3e-3;
  const auto in = inputs(v, 64);
  const Corpus c = synthetic_corpus(1 << 18, 1);
  auto r = make_engine(in);
  REQUIRE(r.ok());
  DataLoader d(c, in.s.micro_batch_per_gpu, in.s.run.seq_len, 1);
  double first = 0, last10 = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 200; ++i) {
    auto s = r->engine->step(d);
    REQUIRE(s.ok());
    if (i == 0) first = s->loss;
    if (i >= 190) last10 += s->loss / 10;
  }
  WARN("synthetic corpus: unigram entropy "
       << c.unigram_entropy_nats << " nats; loss " << first << " -> " << last10 << " (mean of steps 190-199) in "
       << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s");
  CHECK(first > c.unigram_entropy_nats);
  CHECK(last10 < 0.6 * c.unigram_entropy_nats);
}

TEST_CASE("ZeRO-3 with parameters swapped to NVMe (partitions of 1 MiB) equals the reference", "[engine][train]") {
  for (const char* opt : {"cpu", "nvme"}) {
    Variant v;
    v.stage = 3;
    v.opt = opt;
    v.par = "nvme";
    v.micro_batch = 1;
    v.param_buffer_size = 1 << 20;
    v.reduce_bucket_size = 1 << 20;
    auto in = inputs(v, 16);
    in.model.name = "swap-test";
    in.model.layers = 1;
    in.model.hidden = 256;
    in.model.heads = in.model.kv_heads = 4;
    in.model.head_dim = 64;
    in.model.ffn_hidden = 2048;  // c_fc and c_proj: 512 Ki elements = 1 MiB in bf16, DeepSpeed's MIN_AIO_BYTES
    in.model.max_seq_len = 16;
    auto r = make_engine(in);
    if (!r) FAIL(r.error().message);
    int on_nvme = 0;
    for (const auto& t : r->engine->plan().tensors)
      if (t.kind == zs::core::TensorKind::lp_param && t.home == zs::core::Tier::nvme) ++on_nvme;
    CHECK(on_nvme == 2);
    INFO("offload_optimizer " << opt);
    Reference ref(in);
    DataLoader d1(corpus(), 1, 16, 3), d2(corpus(), 1, 16, 3);
    for (int i = 0; i < 3; ++i) {
      auto s = r->engine->step(d2);
      REQUIRE(s.ok());
      CHECK(s->loss == ref.step(d1));
    }
    const auto me = *r->engine->master_params();
    size_t differ = 0;
    for (size_t i = 0; i < me.size(); ++i) differ += me[i] != ref.master()[i];
    CHECK(differ == 0);
    CHECK(r->engine->memory().peak_bytes[2] >= (2 << 20));  // both lp partitions (and the optimizer files)
  }
}
