// Several ranks in one process (make_thread_group: the MPI communicator's semantics over threads), so CI checks
// multi-rank training without mpirun: N engines, one per thread, each with its own host device and loader, equal
// a one-rank run with GA N bit for bit (GA 1 per rank, N a power of two: docs/ENGINE.md "Several ranks"); a rank
// that never joins is a timeout error naming the op and the rank. tests/cli/mpi_train.sh does the same under MPI.
#include <catch2/catch.hpp>
#include <thread>

#include "engine_test_util.h"

using namespace zs::exec;
using namespace zs::exec::testing;

namespace {

struct RankRun {
  std::vector<double> losses;
  std::vector<uint16_t> lp;  // stages 0-2: every rank's full lp parameters after the last step
  std::string error;
};

// `steps` steps on `world` thread ranks; returns each rank's losses.
std::vector<RankRun> train_ranks(const Variant& v, int world, int steps) {
  const Inputs in = inputs(v, 32, "tiny", world);
  auto comms = make_thread_group(world, {.timeout_s = 30});
  std::vector<RankRun> out(static_cast<size_t>(world));
  std::vector<std::thread> th;
  for (int r = 0; r < world; ++r)
    th.emplace_back([&, r] {
      RankRun& o = out[static_cast<size_t>(r)];
      auto dev = make_host_device({.memory_bytes = in.hw.gpu.memory_bytes()});
      EngineOptions eo;
      eo.cpu_adam_threads = 1;
      auto e = Engine::create(in.model, in.hw, in.s, *dev, *comms[static_cast<size_t>(r)], eo);
      if (!e) {
        o.error = e.error().message;
        return;
      }
      DataLoader data(corpus(), in.s.micro_batch_per_gpu, in.s.run.seq_len, 1);
      for (int i = 0; i < steps; ++i) {
        auto s = (*e)->step(data);
        if (!s) {
          o.error = s.error().message;
          return;
        }
        o.losses.push_back(s->loss);
      }
      if (v.stage < 3) {
        auto lp = (*e)->lp_params_bits();
        if (lp) o.lp = *lp;
      }
    });
  for (auto& t : th) t.join();
  return out;
}

std::vector<double> train_one(const Variant& v, int steps, std::vector<uint16_t>* lp) {
  auto run = make_engine(inputs(v));
  REQUIRE(run.ok());
  DataLoader data(corpus(), v.micro_batch, 32, 1);
  std::vector<double> l;
  for (int i = 0; i < steps; ++i) {
    auto s = run->engine->step(data);
    REQUIRE(s.ok());
    l.push_back(s->loss);
  }
  if (lp) *lp = *run->engine->lp_params_bits();
  return l;
}

}  // namespace

TEST_CASE("two thread ranks equal one rank with GA 2 bit for bit, stages 1-3") {
  Variant ref;
  ref.stage = 2;
  ref.ga = 2;
  std::vector<uint16_t> ref_lp;
  const auto want = train_one(ref, 3, &ref_lp);
  for (auto [stage, opt, par] : {std::tuple{1, "cpu", "none"}, {2, "none", "none"}, {3, "cpu", "cpu"}}) {
    Variant v;
    v.stage = stage;
    v.opt = opt;
    v.par = par;
    const auto ranks = train_ranks(v, 2, 3);
    for (size_t r = 0; r < ranks.size(); ++r) {
      INFO("stage " << stage << " rank " << r << ": " << ranks[r].error);
      REQUIRE(ranks[r].error.empty());
      CHECK(ranks[r].losses == want);
      if (stage < 3) CHECK(ranks[r].lp == ref_lp);  // the parameters too, on every rank
    }
  }
}

TEST_CASE("a thread rank that never joins is a timeout naming the op and the rank") {
  auto comms = make_thread_group(2, {.timeout_s = 0.3});
  float x = 1;
  Status s = comms[0]->all_reduce(&x, 1, DType::fp32, ReduceOp::sum, {.op_name = "allreduce bucket (op 9)"});
  REQUIRE_FALSE(s.ok());
  CHECK(s.message() ==
        "collective 'allreduce bucket (op 9)' (all_reduce) timed out after 0.3 s on rank 0 of 2: rank(s) 1 did not "
        "arrive");
  CHECK_FALSE(comms[1]->barrier({.op_name = "later"}).ok());  // the group is broken: no hang afterwards either
}
