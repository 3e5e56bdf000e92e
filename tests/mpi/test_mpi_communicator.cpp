// The MPI communicator under mpirun (tests/cli/mpi_comm.sh runs this with 2 and 3 ranks): every collective for
// bf16/fp16/fp32 against a local recomputation in rank order, the in-place conventions, and the timeout that turns a
// rank which never joins into an error naming the op and the missing rank.
#define CATCH_CONFIG_RUNNER
#include <mpi.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <vector>

#include "exec/mpi_communicator.h"

using namespace zs::exec;

namespace {

std::unique_ptr<Communicator> comm(double timeout_s = 30, int skip_rank = -1, int64_t skip_call = -1,
                                   int64_t max_message_bytes = int64_t{1} << 30) {
  MpiCommunicatorOptions o;
  o.max_message_bytes = max_message_bytes;
  o.timeout_s = timeout_s;
  o.skip_rank = skip_rank;
  o.skip_call = skip_call;
  auto c = make_mpi_communicator(o);
  REQUIRE(c.ok());
  return std::move(*c);
}

// Rank q's i-th value: spans magnitudes so that the order of rounded adds matters in 16 bits.
float value(int q, int64_t i) { return (q == 0 ? 1.0f : 1.0f / 512.0f) * static_cast<float>(1 + (i + q) % 5); }

template <class T>
std::vector<T> make(int q, int64_t n, int64_t base = 0) {
  std::vector<T> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = from_f32<T>(value(q, base + i));
  return v;
}

template <class T>
uint32_t bits(T x) {
  uint32_t u = 0;
  std::memcpy(&u, &x, sizeof x);
  return u;
}

// The expected reduction: rank order, one rounded add at a time (avg: each contribution / world first).
template <class T>
T expect(int world, int64_t i, bool avg) {
  float acc = 0;
  for (int q = 0; q < world; ++q) {
    float x = to_f32(from_f32<T>(value(q, i)));
    if (avg) x = round_to<T>(x / static_cast<float>(world));
    acc = q == 0 ? x : round_to<T>(acc + x);
  }
  return from_f32<T>(acc);
}

template <class T>
void check_collectives(DType d, int64_t max_message_bytes) {
  auto c = comm(30, -1, -1, max_message_bytes);
  const int W = c->world(), r = c->rank();
  const int64_t n = 37;
  // all-gather, in place and not.
  std::vector<T> full(static_cast<size_t>(W * n));
  auto mine = make<T>(r, n);
  std::memcpy(full.data() + r * n, mine.data(), sizeof(T) * n);
  REQUIRE(c->all_gather(full.data(), full.data() + r * n, n, d, {.op_name = "ag in place"}).ok());
  for (int q = 0; q < W; ++q)
    for (int64_t i = 0; i < n; ++i) REQUIRE(bits(full[q * n + i]) == bits(from_f32<T>(value(q, i))));
  std::vector<T> full2(static_cast<size_t>(W * n));
  REQUIRE(c->all_gather(full2.data(), mine.data(), n, d, {.op_name = "ag"}).ok());
  REQUIRE(std::memcmp(full.data(), full2.data(), sizeof(T) * W * n) == 0);
  // all-reduce sum and avg: every element equals the rank-order rounded sum, on every rank.
  for (bool avg : {false, true}) {
    auto buf = make<T>(r, n);
    REQUIRE(c->all_reduce(buf.data(), n, d, avg ? ReduceOp::avg : ReduceOp::sum, {.op_name = "ar"}).ok());
    for (int64_t i = 0; i < n; ++i) REQUIRE(bits(buf[i]) == bits(expect<T>(W, i, avg)));
  }
  // reduce-scatter in place: rank r's slice of every rank's [W · n] buffer, reduced.
  std::vector<T> send(static_cast<size_t>(W * n));
  for (int q = 0; q < W; ++q) {
    auto v = make<T>(r, n, q * n);
    std::memcpy(send.data() + q * n, v.data(), sizeof(T) * n);
  }
  REQUIRE(c->reduce_scatter(send.data() + r * n, send.data(), n, d, ReduceOp::sum, {.op_name = "rs"}).ok());
  for (int64_t i = 0; i < n; ++i) REQUIRE(bits(send[r * n + i]) == bits(expect<T>(W, r * n + i, false)));
  // reduce to the last rank.
  auto red = make<T>(r, n);
  REQUIRE(c->reduce(red.data(), n, d, ReduceOp::avg, W - 1, {.op_name = "reduce"}).ok());
  for (int64_t i = 0; i < n; ++i)
    REQUIRE(bits(red[i]) == bits(r == W - 1 ? expect<T>(W, i, true) : from_f32<T>(value(r, i))));
}

}  // namespace

TEST_CASE("mpi: collectives in rank order, bf16 / fp16 / fp32") {
  for (int64_t max_msg : {int64_t{1} << 30, int64_t{10}}) {  // 10 B: every message in several pieces
    check_collectives<bf16_t>(DType::bf16, max_msg);
    check_collectives<fp16_t>(DType::fp16, max_msg);
    check_collectives<float>(DType::fp32, max_msg);
  }
}

TEST_CASE("mpi: bf16 sums depend on the order, and the order is the rank order") {
  // 1 + 2^-8 + 2^-8 in bf16 (8 significant bits, ulp(1) = 2^-7): left to right each add is a tie that rounds back
  // to 1 (to even); a tree (2^-8 + 2^-8) + 1 would give 1 + 2^-7.
  auto c = comm();
  if (c->world() < 3) SUCCEED("needs 3 ranks");
  if (c->world() < 3) return;
  const int r = c->rank();
  bf16_t x = from_f32<bf16_t>(r == 0 ? 1.0f : (r <= 2 ? 1.0f / 256.0f : 0.0f));
  REQUIRE(c->all_reduce(&x, 1, DType::bf16, ReduceOp::sum, {.op_name = "order"}).ok());
  CHECK(to_f32(x) == 1.0f);
}

TEST_CASE("mpi: doubles, broadcast, barrier") {
  auto c = comm();
  const int W = c->world(), r = c->rank();
  double d[2] = {0.1 * (r + 1), 1e16 * (r == 0 ? 1 : 0) + 1.0};
  REQUIRE(c->all_reduce_f64(d, 2, ReduceOp::sum, {.op_name = "norm"}).ok());
  double e0 = 0, e1 = 0;
  for (int q = 0; q < W; ++q) {
    e0 = q == 0 ? 0.1 * (q + 1) : e0 + 0.1 * (q + 1);
    e1 = q == 0 ? 1e16 + 1.0 : e1 + 1.0;
  }
  CHECK(d[0] == e0);
  CHECK(d[1] == e1);
  char msg[16] = {};
  if (r == W - 1) std::strcpy(msg, "from the last");
  REQUIRE(c->broadcast(msg, sizeof msg, W - 1, {.op_name = "bcast"}).ok());
  CHECK(std::string(msg) == "from the last");
  REQUIRE(c->barrier({.op_name = "barrier"}).ok());
}

TEST_CASE("mpi: a rank that never joins is a timeout naming the op and the rank, not a hang") {
  const int W = [] {
    int w = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &w);
    return w;
  }();
  auto c = comm(/*timeout_s=*/0.5, /*skip_rank=*/W - 1, /*skip_call=*/1);
  const int r = c->rank();
  float x = 1;
  REQUIRE(c->all_reduce(&x, 1, DType::fp32, ReduceOp::sum, {.op_name = "first"}).ok());
  const auto t0 = std::chrono::steady_clock::now();
  zs::core::Status s = c->all_reduce(&x, 1, DType::fp32, ReduceOp::sum, {.op_name = "allreduce bucket 7"});
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (r == W - 1) {
    CHECK(s.ok());  // it skipped the call
  } else {
    REQUIRE_FALSE(s.ok());
    CHECK(s.message().find("allreduce bucket 7") != std::string::npos);
    CHECK(s.message().find("on rank " + std::to_string(r)) != std::string::npos);
    CHECK(s.message().find("rank(s) " + std::to_string(W - 1) + " did not arrive") != std::string::npos);
    CHECK(waited >= 0.5);
    CHECK(waited < 5.0);
    // Broken afterwards: fails at once.
    zs::core::Status again = c->barrier({.op_name = "after"});
    CHECK_FALSE(again.ok());
    CHECK(again.message().find("unusable") != std::string::npos);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char** argv) {
  auto rt = MpiRuntime::init(&argc, &argv);
  if (!rt) {
    std::fprintf(stderr, "%s\n", rt.error().message.c_str());
    return 3;
  }
  const int rc = Catch::Session().run(argc, argv);
  int worst = rc;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}
