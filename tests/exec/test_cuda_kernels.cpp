// Every CUDA kernel against its CPU reference (exec/kernels_ref.h) on random inputs, for fp32, fp16 and bf16
// storage, within the tolerance of cuda_test_util.h. Shapes are small but cross every tile boundary (attention:
// T = 70 over 16-row query and 8-row key tiles; norms: C not a multiple of the block).
#include <cstring>

#include "exec/cuda/attention_gemm.h"
#include "exec/cuda/gemm.h"
#include "exec/cuda/kernels.cuh"
#include "exec/kernels_ref.h"
#include "tests/exec/cuda_test_util.h"

using namespace zs::exec;
using namespace zs::exec::test;

#define ZS_GPU_TYPES float, bf16_t, fp16_t

TEMPLATE_TEST_CASE("gpu embedding and learned positions match the reference", "[.gpu][cuda][kernels]", ZS_GPU_TYPES) {
  using T = TestType;
  require_gpu();
  std::mt19937 rng(1);
  const int64_t B = 3, T_ = 37, C = 300, V = 50, N = B * T_;
  auto tokens = random_tokens(N, V, rng);
  auto table = random_vec<T>(V * C, rng);
  auto wpe = random_vec<T>(64 * C, rng);
  auto dout = random_vec<T>(N * C, rng);
  DevBuf<int32_t> d_tok(tokens);
  DevBuf<T> d_table(table), d_wpe(wpe), d_dout(dout), d_out(N * C);

  std::vector<T> out(N * C);
  embedding_forward<T>(out.data(), tokens.data(), table.data(), N, C);
  position_forward<T>(out.data(), wpe.data(), B, T_, C);
  cuda_ok(gpu::embedding_forward<T>(d_out.get(), d_tok.get(), d_table.get(), N, C, nullptr));
  cuda_ok(gpu::position_forward<T>(d_out.get(), d_wpe.get(), B, T_, C, nullptr));
  auto got = d_out.download();
  CHECK(std::memcmp(got.data(), out.data(), sizeof(T) * out.size()) == 0);  // a gather and one add: exact

  for (GradWrite w : {GradWrite::overwrite, GradWrite::accumulate}) {
    auto dtable = random_vec<T>(V * C, rng);
    auto dwpe = random_vec<T>(64 * C, rng);
    DevBuf<T> d_dtable(dtable), d_dwpe(dwpe);
    embedding_backward<T>(dtable.data(), dout.data(), tokens.data(), N, C, V, w);
    position_backward<T>(dwpe.data(), dout.data(), B, T_, C, 64, w);
    cuda_ok(gpu::embedding_backward<T>(d_dtable.get(), d_dout.get(), d_tok.get(), N, C, V, w, nullptr));
    cuda_ok(gpu::position_backward<T>(d_dwpe.get(), d_dout.get(), B, T_, C, 64, w, nullptr));
    // Both sum each row's contributions in increasing n: bit-identical.
    auto gt = d_dtable.download();
    auto gp = d_dwpe.download();
    CHECK(std::memcmp(gt.data(), dtable.data(), sizeof(T) * gt.size()) == 0);
    CHECK(std::memcmp(gp.data(), dwpe.data(), sizeof(T) * gp.size()) == 0);
    expect_close(gt, dtable, tolerance<T>(), "dtable");
  }
}

TEMPLATE_TEST_CASE("gpu layernorm and rmsnorm match the reference", "[.gpu][cuda][kernels]", ZS_GPU_TYPES) {
  using T = TestType;
  require_gpu();
  std::mt19937 rng(2);
  const int64_t N = 150, C = 333;
  const float eps = 1e-5f;
  auto inp = random_vec<T>(N * C, rng, -2, 2);
  auto weight = random_vec<T>(C, rng, 0.5f, 1.5f);
  auto bias = random_vec<T>(C, rng);
  auto dout = random_vec<T>(N * C, rng);
  auto dres = random_vec<T>(N * C, rng);
  DevBuf<T> d_inp(inp), d_w(weight), d_b(bias), d_dout(dout), d_dres(dres), d_out(N * C), d_dinp(N * C);

  std::vector<T> out(N * C);
  layernorm_forward<T>(out.data(), inp.data(), weight.data(), bias.data(), N, C, eps);
  cuda_ok(gpu::layernorm_forward<T>(d_out.get(), d_inp.get(), d_w.get(), d_b.get(), N, C, eps, nullptr));
  expect_close(d_out.download(), out, tolerance<T>(5), "layernorm out");
  rmsnorm_forward<T>(out.data(), inp.data(), weight.data(), N, C, eps);
  cuda_ok(gpu::rmsnorm_forward<T>(d_out.get(), d_inp.get(), d_w.get(), N, C, eps, nullptr));
  expect_close(d_out.download(), out, tolerance<T>(5), "rmsnorm out");

  for (GradWrite w : {GradWrite::overwrite, GradWrite::accumulate}) {
    auto dw = random_vec<T>(C, rng), db = random_vec<T>(C, rng);
    DevBuf<T> d_dw(dw), d_db(db);
    std::vector<T> dinp(N * C);
    layernorm_backward<T>(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), weight.data(), dres.data(), N, C,
                          eps, w);
    cuda_ok(gpu::layernorm_backward<T>(d_dinp.get(), d_dw.get(), d_db.get(), d_dout.get(), d_inp.get(), d_w.get(),
                                       d_dres.get(), N, C, eps, w, nullptr));
    expect_close(d_dinp.download(), dinp, tolerance<T>(5), "layernorm dinp");
    expect_close(d_dw.download(), dw, tolerance<T>(5), "layernorm dweight");
    expect_close(d_db.download(), db, tolerance<T>(5), "layernorm dbias");

    auto rdw = random_vec<T>(C, rng);
    DevBuf<T> d_rdw(rdw);
    rmsnorm_backward<T>(dinp.data(), rdw.data(), dout.data(), inp.data(), weight.data(), nullptr, N, C, eps, w);
    cuda_ok(gpu::rmsnorm_backward<T>(d_dinp.get(), d_rdw.get(), d_dout.get(), d_inp.get(), d_w.get(), nullptr, N, C,
                                     eps, w, nullptr));
    expect_close(d_dinp.download(), dinp, tolerance<T>(5), "rmsnorm dinp");
    expect_close(d_rdw.download(), rdw, tolerance<T>(5), "rmsnorm dweight");
  }
}

TEMPLATE_TEST_CASE("gpu layernorm backward may overwrite its input in place", "[.gpu][cuda][kernels]", ZS_GPU_TYPES) {
  using T = TestType;
  require_gpu();
  std::mt19937 rng(3);
  const int64_t N = 40, C = 96;
  auto inp = random_vec<T>(N * C, rng, -2, 2);
  auto weight = random_vec<T>(C, rng, 0.5f, 1.5f);
  auto dout = random_vec<T>(N * C, rng);
  std::vector<T> dw(C), db(C);
  DevBuf<T> d_x(inp), d_w(weight), d_dout(dout), d_dw(C), d_db(C);
  std::vector<T> x = inp;
  layernorm_backward<T>(x.data(), dw.data(), db.data(), dout.data(), x.data(), weight.data(), nullptr, N, C, 1e-5f,
                        GradWrite::overwrite);
  cuda_ok(gpu::layernorm_backward<T>(d_x.get(), d_dw.get(), d_db.get(), d_dout.get(), d_x.get(), d_w.get(), nullptr, N,
                                     C, 1e-5f, GradWrite::overwrite, nullptr));
  expect_close(d_x.download(), x, tolerance<T>(5), "dinp aliasing inp");
  expect_close(d_dw.download(), dw, tolerance<T>(5), "dweight with dinp aliasing inp");
}

TEMPLATE_TEST_CASE("gpu rope and causal GQA attention match the reference", "[.gpu][cuda][kernels]", ZS_GPU_TYPES) {
  using T = TestType;
  require_gpu();
  std::mt19937 rng(4);
  for (const int64_t HD : {32, 64, 80}) {
    const int64_t B = 2, T_ = 70, NH = 4, NKV = 2, N = B * T_;
    const int64_t ld = (NH + 2 * NKV) * HD;  // GPT-2's fused c_attn rows: [q | k | v]
    INFO("HD " << HD);
    auto qkv = random_vec<T>(N * ld, rng);
    auto dout = random_vec<T>(N * NH * HD, rng);
    DevBuf<T> d_qkv(qkv), d_out(N * NH * HD), d_dout(dout);
    DevBuf<float> d_lse(B * NH * T_);

    std::vector<T> ref_qkv = qkv;
    rope_forward<T>(ref_qkv.data(), ref_qkv.data() + NH * HD, ld, ld, B, T_, NH, NKV, HD, 10000.0f);
    cuda_ok(gpu::rope_forward<T>(d_qkv.get(), d_qkv.get() + NH * HD, ld, ld, B, T_, NH, NKV, HD, 10000.0f, nullptr));
    auto got_qkv = d_qkv.download();
    expect_close(got_qkv, ref_qkv, tolerance<T>(50), "rope forward");
    d_qkv.upload(ref_qkv);  // both sides continue from the same rotated inputs

    const T* q = ref_qkv.data();
    std::vector<T> out(N * NH * HD);
    std::vector<float> lse(B * NH * T_);
    attention_forward<T>(out.data(), lse.data(), q, q + NH * HD, q + (NH + NKV) * HD, ld, ld, B, T_, NH, NKV, HD);
    T* dq = d_qkv.get();
    cuda_ok(gpu::attention_forward<T>(d_out.get(), d_lse.get(), dq, dq + NH * HD, dq + (NH + NKV) * HD, ld, ld, B, T_,
                                      NH, NKV, HD, nullptr));
    expect_close(d_out.download(), out, tolerance<T>(10), "attention out");
    expect_close(d_lse.download(), lse, tolerance<float>(10), "attention lse");
    d_lse.upload(lse);

    // Backward in place, as the engine calls it: dq, dk, dv overwrite q, k, v.
    std::vector<T> g = ref_qkv;
    attention_backward<T>(g.data(), g.data() + NH * HD, g.data() + (NH + NKV) * HD, dout.data(), g.data(),
                          g.data() + NH * HD, g.data() + (NH + NKV) * HD, lse.data(), ld, ld, B, T_, NH, NKV, HD);
    cuda_ok(gpu::attention_backward<T>(dq, dq + NH * HD, dq + (NH + NKV) * HD, d_dout.get(), dq, dq + NH * HD,
                                       dq + (NH + NKV) * HD, d_lse.get(), ld, ld, B, T_, NH, NKV, HD, nullptr));
    expect_close(d_qkv.download(), g, tolerance<T>(10), "attention dq|dk|dv");

    std::vector<T> rg = g;
    rope_backward<T>(rg.data(), rg.data() + NH * HD, ld, ld, B, T_, NH, NKV, HD, 10000.0f);
    d_qkv.upload(g);
    cuda_ok(gpu::rope_backward<T>(dq, dq + NH * HD, ld, ld, B, T_, NH, NKV, HD, 10000.0f, nullptr));
    expect_close(d_qkv.download(), rg, tolerance<T>(50), "rope backward");
  }
}

TEMPLATE_TEST_CASE("attention through GEMMs matches the reference (GQA and MHA, in place, chunked)",
                   "[.gpu][cuda][kernels]", ZS_GPU_TYPES) {
  using T = TestType;
  require_gpu();
  auto g = CublasLtGemm::create();
  REQUIRE(g.ok());
  std::mt19937 rng(41);
  struct Shape {
    int64_t HD, NH, NKV, chunk_bytes;
  };
  const int64_t B = 2, T_ = 70, N = B * T_;
  // chunk_bytes 1: one (sequence, kv head) at a time; 0: the default (everything in one chunk here).
  for (const Shape sh : {Shape{32, 4, 2, 0}, Shape{128, 4, 2, 1}, Shape{64, 4, 4, 1}, Shape{80, 6, 2, 0}}) {
    const int64_t HD = sh.HD, NH = sh.NH, NKV = sh.NKV;
    const int64_t chunk = sh.chunk_bytes > 0 ? sh.chunk_bytes : kAttentionChunkBytes;
    const int64_t ld = (NH + 2 * NKV) * HD;
    INFO("HD " << HD << ", heads " << NH << "/" << NKV << ", chunk bytes " << chunk);
    auto qkv = random_vec<T>(N * ld, rng);
    auto dout = random_vec<T>(N * NH * HD, rng);
    DevBuf<T> d_qkv(qkv), d_out(N * NH * HD), d_dout(dout);
    DevBuf<float> d_lse(B * NH * T_);
    const T* q = qkv.data();
    std::vector<T> out(N * NH * HD);
    std::vector<float> lse(B * NH * T_);
    attention_forward<T>(out.data(), lse.data(), q, q + NH * HD, q + (NH + NKV) * HD, ld, ld, B, T_, NH, NKV, HD);
    T* dq = d_qkv.get();
    REQUIRE(attention_forward_gemm<T>(*g, d_out.get(), d_lse.get(), dq, dq + NH * HD, dq + (NH + NKV) * HD, ld, ld, B,
                                      T_, NH, NKV, HD, nullptr, chunk)
                .ok());
    cuda_ok(cudaDeviceSynchronize());
    expect_close(d_out.download(), out, tolerance<T>(10), "attention out");
    expect_close(d_lse.download(), lse, tolerance<float>(10), "attention lse");
    d_lse.upload(lse);
    std::vector<T> gr = qkv;  // in place, as the engine calls it
    attention_backward<T>(gr.data(), gr.data() + NH * HD, gr.data() + (NH + NKV) * HD, dout.data(), gr.data(),
                          gr.data() + NH * HD, gr.data() + (NH + NKV) * HD, lse.data(), ld, ld, B, T_, NH, NKV, HD);
    REQUIRE(attention_backward_gemm<T>(*g, dq, dq + NH * HD, dq + (NH + NKV) * HD, d_dout.get(), dq, dq + NH * HD,
                                       dq + (NH + NKV) * HD, d_lse.get(), ld, ld, B, T_, NH, NKV, HD, nullptr, chunk)
                .ok());
    cuda_ok(cudaDeviceSynchronize());
    expect_close(d_qkv.download(), gr, tolerance<T>(10), "attention dq|dk|dv");
  }
}

TEMPLATE_TEST_CASE("gpu GELU, SwiGLU and residual match the reference", "[.gpu][cuda][kernels]", ZS_GPU_TYPES) {
  using T = TestType;
  require_gpu();
  std::mt19937 rng(5);
  const int64_t N = 64, F = 200, n = N * F;
  auto x = random_vec<T>(n, rng, -4, 4);
  auto dy = random_vec<T>(n, rng);
  auto gu = random_vec<T>(N * 2 * F, rng, -4, 4);  // fused [gate | up] rows
  DevBuf<T> d_x(x), d_dy(dy), d_gu(gu), d_out(n);
  std::vector<T> out(n);
  gelu_forward<T>(out.data(), x.data(), n);
  cuda_ok(gpu::gelu_forward<T>(d_out.get(), d_x.get(), n, nullptr));
  expect_close(d_out.download(), out, tolerance<T>(5), "gelu forward");
  gelu_backward<T>(out.data(), x.data(), dy.data(), n);
  cuda_ok(gpu::gelu_backward<T>(d_out.get(), d_x.get(), d_dy.get(), n, nullptr));
  expect_close(d_out.download(), out, tolerance<T>(5), "gelu backward");
  residual_forward<T>(out.data(), x.data(), dy.data(), n);
  cuda_ok(gpu::residual_forward<T>(d_out.get(), d_x.get(), d_dy.get(), n, nullptr));
  auto res = d_out.download();
  CHECK(std::memcmp(res.data(), out.data(), sizeof(T) * n) == 0);  // one add, one rounding: exact

  swiglu_forward<T>(out.data(), gu.data(), gu.data() + F, N, F, 2 * F);
  cuda_ok(gpu::swiglu_forward<T>(d_out.get(), d_gu.get(), d_gu.get() + F, N, F, 2 * F, nullptr));
  expect_close(d_out.download(), out, tolerance<T>(5), "swiglu forward");
  std::vector<T> g = gu;
  swiglu_backward<T>(g.data(), g.data() + F, dy.data(), g.data(), g.data() + F, N, F, 2 * F);
  cuda_ok(gpu::swiglu_backward<T>(d_gu.get(), d_gu.get() + F, d_dy.get(), d_gu.get(), d_gu.get() + F, N, F, 2 * F,
                                  nullptr));
  expect_close(d_gu.download(), g, tolerance<T>(5), "swiglu backward (in place)");
}

TEMPLATE_TEST_CASE("gpu cross-entropy matches the reference", "[.gpu][cuda][kernels]", ZS_GPU_TYPES) {
  using T = TestType;
  require_gpu();
  std::mt19937 rng(6);
  const int64_t N = 50, V = 1000;
  auto logits = random_vec<T>(N * V, rng, -5, 5);
  auto targets = random_tokens(N, V, rng);
  DevBuf<T> d_logits(logits), d_dlogits(N * V);
  DevBuf<int32_t> d_t(targets);
  DevBuf<float> d_loss(N), d_probs(N * V);
  std::vector<float> loss(N), probs(N * V);
  crossentropy_forward<T>(loss.data(), probs.data(), logits.data(), targets.data(), N, V);
  cuda_ok(gpu::crossentropy_forward<T>(d_loss.get(), d_probs.get(), d_logits.get(), d_t.get(), N, V, nullptr));
  expect_close(d_loss.download(), loss, tolerance<float>(10), "losses");
  expect_close(d_probs.download(), probs, tolerance<float>(10), "probs");
  std::vector<T> dl(N * V);
  crossentropy_backward<T>(dl.data(), probs.data(), targets.data(), N, V, 0.25f);
  d_probs.upload(probs);
  cuda_ok(gpu::crossentropy_backward<T>(d_dlogits.get(), d_probs.get(), d_t.get(), N, V, 0.25f, nullptr));
  auto got = d_dlogits.download();
  CHECK(std::memcmp(got.data(), dl.data(), sizeof(T) * dl.size()) == 0);  // same inputs, same two operations
}

TEMPLATE_TEST_CASE("gpu gradient accumulate and casts match the reference", "[.gpu][cuda][kernels]", ZS_GPU_TYPES) {
  using T = TestType;
  require_gpu();
  std::mt19937 rng(7);
  const int64_t n = 100003;
  auto a = random_vec<T>(n, rng), b = random_vec<T>(n, rng);
  DevBuf<T> d_a(a), d_b(b);
  grad_accumulate<T>(a.data(), b.data(), n, false);
  cuda_ok(gpu::grad_accumulate<T>(d_a.get(), d_b.get(), n, false, nullptr));
  auto got = d_a.download();
  CHECK(std::memcmp(got.data(), a.data(), sizeof(T) * n) == 0);

  std::vector<float> f(n);
  const double ss = cast_to_f32_sumsq<T>(f.data(), a.data(), n);
  DevBuf<float> d_f(n);
  DevBuf<double> d_ss(1);
  cuda_ok(gpu::cast_to_f32_sumsq<T>(d_f.get(), d_a.get(), n, d_ss.get(), nullptr));
  auto gf = d_f.download();
  CHECK(std::memcmp(gf.data(), f.data(), sizeof(float) * n) == 0);
  const double gss = d_ss.download()[0];
  CHECK(ss > 1000);
  CHECK(gss == Approx(ss).epsilon(1e-10));  // doubles over 1e5 terms: only the order differs (~1e-14 expected)
  cuda_ok(gpu::cast_to_f32_sumsq<T>(nullptr, d_a.get(), n, d_ss.get(), nullptr));  // the norm alone
  CHECK(d_ss.download()[0] == gss);                                                // same order, same bits

  cuda_ok(gpu::grad_accumulate<T>(d_a.get(), d_b.get(), n, true, nullptr));  // overwrite: a copy
  auto copied = d_a.download();
  CHECK(std::memcmp(copied.data(), b.data(), sizeof(T) * n) == 0);

  auto src = random_vec<float>(n, rng, -100, 100);
  DevBuf<float> d_src(src);
  std::vector<T> lp(n);
  cast_from_f32<T>(lp.data(), src.data(), n);
  cuda_ok(gpu::cast_from_f32<T>(d_b.get(), d_src.get(), n, nullptr));
  auto glp = d_b.download();
  CHECK(std::memcmp(glp.data(), lp.data(), sizeof(T) * n) == 0);  // round to nearest even on both sides
}
