// Checkpoint and resume through the engine: a run stopped after k steps and resumed in a fresh process-like engine
// continues bit for bit (losses, fp32 master, loss scale), whether the states live on GPU, CPU or NVMe, with
// dpu's pending gradients and fp16's scaler; refusals happen before any allocation; NVMe failures surface as
// errors naming the file and leave the last checkpoint loadable.
#include <catch2/catch.hpp>
#include <filesystem>

#include "engine_test_util.h"
#include "exec/checkpoint.h"
#include "exec/io_env.h"

using namespace zs::exec;
using namespace zs::exec::testing;

TEST_CASE("resume is bit-identical", "[engine][checkpoint]") {
  struct Case {
    const char* what;
    Variant v;
    zs::core::Schedule sched;
  };
  auto mk = [](int stage, const char* opt, const char* par, const char* dtype = "bf16") {
    Variant v;
    v.stage = stage;
    v.opt = opt;
    v.par = par;
    v.dtype = dtype;
    return v;
  };
  const std::vector<Case> cases = {
      {"stage 0", mk(0, "none", "none"), zs::core::Schedule::deepspeed},
      {"stage 3 nvme/nvme", mk(3, "nvme", "nvme"), zs::core::Schedule::deepspeed},
      {"stage 1 fp16", mk(1, "cpu", "none", "fp16"), zs::core::Schedule::deepspeed},
      {"stage 2 cpu dpu", mk(2, "cpu", "none"), zs::core::Schedule::dpu},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    const auto in = inputs(c.v);
    std::vector<double> straight;
    std::vector<float> master_straight;
    {
      auto r = make_engine(in, c.sched);
      REQUIRE(r.ok());
      DataLoader d(corpus(), 2, 32, 5);
      for (int i = 0; i < 6; ++i) straight.push_back(r->engine->step(d)->loss);
      master_straight = *r->engine->master_params();
    }
    TempDir dir;
    {
      auto r = make_engine(in, c.sched);
      REQUIRE(r.ok());
      DataLoader d(corpus(), 2, 32, 5);
      for (int i = 0; i < 3; ++i) REQUIRE(r->engine->step(d)->loss == straight[static_cast<size_t>(i)]);
      REQUIRE(r->engine->save_checkpoint(dir.path, d).ok());
      REQUIRE(r->engine->step(d).ok());  // a step after the save must not leak into the checkpoint
    }
    auto r = make_engine(in, c.sched);
    REQUIRE(r.ok());
    DataLoader d(corpus(), 2, 32, 999);  // position and RNG come from the checkpoint
    auto st = r->engine->load_checkpoint(dir.path, d);
    REQUIRE(st.ok());
    CHECK(r->engine->steps_done() == 3);
    for (int i = 3; i < 6; ++i) {
      auto s = r->engine->step(d);
      REQUIRE(s.ok());
      CHECK(s->loss == straight[static_cast<size_t>(i)]);
    }
    CHECK((*r->engine->master_params() == master_straight));
  }
}

TEST_CASE("a checkpoint of another model or schedule is refused with the reason", "[engine][checkpoint]") {
  Variant v;
  const auto in = inputs(v);
  TempDir dir;
  {
    auto r = make_engine(in);
    REQUIRE(r.ok());
    DataLoader d(corpus(), 2, 32, 5);
    REQUIRE(r->engine->step(d).ok());
    REQUIRE(r->engine->save_checkpoint(dir.path, d).ok());
  }
  auto r = make_engine(in, zs::core::Schedule::overlap);
  REQUIRE(r.ok());
  DataLoader d(corpus(), 2, 32, 5);
  auto st = r->engine->load_checkpoint(dir.path, d);
  REQUIRE_FALSE(st.ok());
  CHECK(st.message().find("schedule") != std::string::npos);
}

TEST_CASE("refusals come before any allocation", "[engine]") {
  SECTION("a plan that does not fit the device") {
    Variant v;
    auto in = inputs(v);
    in.hw.gpu.memory_GiB = 0.001;  // 1 MiB of "HBM"
    auto dev = make_host_device({.memory_bytes = in.hw.gpu.memory_bytes()});
    auto comm = make_single_rank_communicator();
    auto e = Engine::create(in.model, in.hw, in.s, *dev, *comm);
    REQUIRE_FALSE(e.ok());
    CHECK(e.error().kind == zs::core::ErrorKind::bad_input);
    CHECK(e.error().message.find("does not fit") != std::string::npos);
    CHECK(e.error().message.find("gpu") != std::string::npos);
    CHECK(dev->memory().peak() == 0);
  }
  SECTION("unsupported settings name themselves") {
    Variant v;
    v.stage = 3;
    v.opt = "nvme";
    auto in = inputs(v);
    auto dev = make_host_device({.memory_bytes = in.hw.gpu.memory_bytes()});
    auto comm = make_single_rank_communicator();
    EngineOptions o;
    o.schedule = zs::core::Schedule::dpu;
    auto e = Engine::create(in.model, in.hw, in.s, *dev, *comm, o);
    REQUIRE_FALSE(e.ok());
    CHECK(e.error().kind == zs::core::ErrorKind::unsupported);
    CHECK(e.error().message.find("dpu") != std::string::npos);
    CHECK(dev->memory().peak() == 0);
  }
  SECTION("a missing NVMe path") {
    Variant v;
    v.stage = 3;
    v.opt = "nvme";
    v.nvme = "/dev/null/zerosim-nvme";  // not a directory, whoever runs the test
    auto in = inputs(v);
    auto r = make_engine(in);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("/dev/null/zerosim-nvme") != std::string::npos);
  }
}

TEST_CASE("an NVMe write failure stops training with the file named; the last checkpoint still loads",
          "[engine][checkpoint]") {
  Variant v;
  v.stage = 3;
  v.opt = "nvme";
  v.par = "cpu";
  const auto in = inputs(v);
  FaultInjectionEnv env;
  auto dev = make_host_device({.memory_bytes = in.hw.gpu.memory_bytes()});
  auto comm = make_single_rank_communicator();
  EngineOptions o;
  o.io_env = &env;
  o.fsync_checkpoints = false;
  auto e = Engine::create(in.model, in.hw, in.s, *dev, *comm, o);
  REQUIRE(e.ok());
  DataLoader d(corpus(), 2, 32, 5);
  REQUIRE((*e)->step(d).ok());
  TempDir dir;
  REQUIRE((*e)->save_checkpoint(dir.path, d).ok());
  env.add({Fault::write_enospc, ".exp_avg", 0, -1});
  auto s = (*e)->step(d);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message.find(".exp_avg") != std::string::npos);
  CHECK(s.error().message.find("No space left") != std::string::npos);
  env.clear();
  auto c = open_checkpoint(dir.path);
  REQUIRE(c.ok());
  CHECK(c->info().step == 1);
}
