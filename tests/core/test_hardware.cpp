#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>

#include "core/hardware.h"
#include "core/json_reader.h"
#include "core/paths.h"

using namespace zs::core;

namespace {

std::string write_tmp(const std::string& name, const std::string& text) {
  std::string path = "/tmp/zs_test_hw_" + name + ".json";
  std::ofstream(path) << text;
  return path;
}

const char* kGood = R"({"name": "x", "source": "test", "nodes": 1, "gpus_per_node": 2,
  "gpu": {"name": "g", "memory_GiB": 16, "peak_tflops": {"fp16": 100, "bf16": 100, "fp32": 10}, "hbm_GBps": 900},
  "cpu": {"sockets": 1, "cores": 8, "memory_GiB": 64, "memory_GBps": 50},
  "nvme": {"drives": 1, "capacity_GB_each": 1000, "read_GBps_each": 3, "write_GBps_each": 2},
  "links": {"pcie_h2d_GBps": 12, "pcie_d2h_GBps": 12, "pcie_host_GBps": 24, "nvlink_GBps": 0,
            "network_GBps_per_node": 0, "network_latency_us": 0}})";

std::string error_of(const std::string& text, const std::string& name) {
  auto h = load_hardware_file(write_tmp(name, text));
  REQUIRE_FALSE(h.ok());
  return h.error().message;
}

}  // namespace

TEST_CASE("every shipped hardware profile loads and round-trips", "[hardware]") {
  auto files = shipped_inputs(InputKind::hardware);
  REQUIRE(files.size() >= 7);
  for (const auto& f : files) {
    INFO(f);
    auto h = load_hardware_file(f);
    REQUIRE(h.ok());
    CHECK(h->gpu.memory_bytes() > 0);
    CHECK(!h->source.empty());
    auto again = load_hardware_file(write_tmp("roundtrip", hardware_to_json(*h)));
    REQUIRE(again.ok());
    CHECK(again->gpu.memory_GiB == h->gpu.memory_GiB);
    CHECK(again->nvme.capacity_bytes() == h->nvme.capacity_bytes());
  }
}

TEST_CASE("hardware: units and capacities", "[hardware]") {
  auto h = load_hardware("dgx2");
  REQUIRE(h.ok());
  CHECK(h->gpus_per_node == 16);
  CHECK(h->gpu.memory_bytes() == int64_t{32} * 1024 * 1024 * 1024);
  CHECK(h->cpu.memory_bytes() == int64_t{1536} * 1024 * 1024 * 1024);
  CHECK(h->nvme.capacity_bytes() == int64_t{8} * 3840 * 1000000000);
}

TEST_CASE("hardware: measured block is optional and typed", "[hardware]") {
  std::string with = std::string(kGood);
  with.insert(with.rfind('}'), R"(, "measured": {"cpu_adam_params_per_s": 1.5e9, "nvme_read_GBps": 1.1})");
  auto h = load_hardware_file(write_tmp("measured", with));
  REQUIRE(h.ok());
  CHECK(*h->measured.cpu_adam_params_per_s == 1.5e9);
  CHECK_FALSE(h->measured.gemm_efficiency.has_value());
  CHECK_FALSE(h->measured.backward_time_ratio.has_value());
  // One optional measured figure: loaded, written back by hardware_to_json, absent where not given, and refused
  // out of range naming its JSON path.
  auto measured_key = [&](const std::string& key, double good, double bad, auto get) {
    INFO(key);
    std::string with_key = std::string(kGood);
    with_key.insert(with_key.rfind('}'), ", \"measured\": {\"" + key + "\": " + std::to_string(good) + "}");
    auto loaded = load_hardware_file(write_tmp(key, with_key));
    REQUIRE(loaded.ok());
    REQUIRE(get(*loaded).has_value());
    CHECK(*get(*loaded) == Approx(good));
    auto back = load_hardware_file(write_tmp(key + "_back", hardware_to_json(*loaded)));
    REQUIRE(back.ok());
    CHECK(*get(*back) == Approx(good));
    CHECK_FALSE(get(*h).has_value());
    std::string with_bad = std::string(kGood);
    with_bad.insert(with_bad.rfind('}'), ", \"measured\": {\"" + key + "\": " + std::to_string(bad) + "}");
    auto refused = load_hardware_file(write_tmp(key + "_bad", with_bad));
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().message.find("measured." + key) != std::string::npos);
  };
  measured_key("backward_time_ratio", 1.625, 0, [](const Hardware& x) { return x.measured.backward_time_ratio; });
  measured_key("stream_wake_latency_us", 35.5, -1, [](const Hardware& x) { return x.measured.stream_wake_latency_us; });
  measured_key("cpu_pool_wake_us", 37.25, -1, [](const Hardware& x) { return x.measured.cpu_pool_wake_us; });
  measured_key("pcie_latency_us", 0.75, -2, [](const Hardware& x) { return x.measured.pcie_latency_us; });
  std::string wake = std::string(kGood);
  wake.insert(wake.rfind('}'), R"(, "measured": {"stream_spin_us": 200, "stream_wake_latency_us": 35.5})");
  auto hw = load_hardware_file(write_tmp("wake", wake));
  REQUIRE(hw.ok());
  CHECK(*hw->measured.stream_spin_us == 200);
  auto h2 = load_hardware_file(write_tmp("plain", kGood));
  REQUIRE(h2.ok());
  CHECK_FALSE(h2->measured.nvme_read_GBps.has_value());
}

TEST_CASE("hardware: per-role module time scales load, round-trip and are checked", "[hardware]") {
  auto with = [](const std::string& measured) {
    std::string t = std::string(kGood);
    t.insert(t.rfind('}'), ", \"measured\": {\"module_time_scale\": " + measured + "}");
    return t;
  };
  auto h = load_hardware_file(write_tmp(
      "scales",
      with(R"({"norm": {"forward": 1.9, "backward": 1.8}, "embedding": {"forward": 0.07, "backward": 0.27}})")));
  REQUIRE(h.ok());
  REQUIRE(h->measured.module_time_scale.size() == 2);
  double norm_f = 0, emb_b = 0;
  for (const auto& x : h->measured.module_time_scale) {
    if (x.role == "norm") norm_f = x.forward;
    if (x.role == "embedding") emb_b = x.backward;
  }
  CHECK(norm_f == 1.9);
  CHECK(emb_b == 0.27);
  auto back = load_hardware_file(write_tmp("scales_back", hardware_to_json(*h)));
  REQUIRE(back.ok());
  CHECK(back->measured.module_time_scale.size() == 2);
  auto refused = [&](const char* name, const std::string& measured, const std::string& says) {
    auto r = load_hardware_file(write_tmp(name, with(measured)));
    REQUIRE_FALSE(r.ok());
    INFO(r.error().message);
    CHECK(r.error().message.find(says) != std::string::npos);
  };
  refused("scales_role", R"({"attention": {"forward": 1, "backward": 1}})",
          "'attention' is not a module role; expected one of embedding");
  refused("scales_array", "[1, 2]", "measured.module_time_scale");
  refused("scales_missing", R"({"norm": {"forward": 1.2}})", "measured.module_time_scale.norm.backward");
  refused("scales_zero", R"({"qkv": {"forward": 0, "backward": 1}})", "measured.module_time_scale.qkv.forward");
}

TEST_CASE("hardware: the NVMe idle wake-up loads, round-trips and is checked", "[hardware]") {
  std::string with = std::string(kGood);
  with.insert(with.rfind('}'), R"(, "measured": {"nvme_idle_wake": [
      {"idle_ms": 3, "extra_us": 40}, {"idle_ms": 30, "extra_us": 260}, {"idle_ms": 300, "extra_us": 800}]})");
  auto h = load_hardware_file(write_tmp("idle", with));
  INFO((h.ok() ? std::string() : h.error().message));
  REQUIRE(h.ok());
  REQUIRE(h->measured.nvme_idle_wake.size() == 3);
  CHECK(h->measured.nvme_idle_wake[1].idle_ms == 30);
  CHECK(h->measured.nvme_idle_wake[2].extra_us == 800);
  auto back = load_hardware_file(write_tmp("idle_back", hardware_to_json(*h)));
  REQUIRE(back.ok());
  REQUIRE(back->measured.nvme_idle_wake.size() == 3);
  CHECK(back->measured.nvme_idle_wake[0].extra_us == 40);
  auto bad = [&](const std::string& from, const std::string& to, const char* name) {
    std::string t = with;
    t.replace(t.find(from), from.size(), to);
    return error_of(t, name);
  };
  CHECK_THAT(bad(R"("idle_ms": 300)", R"("idle_ms": 20)", "idle_order"),
             Catch::Contains("zs_test_hw_idle_order.json") && Catch::Contains("measured.nvme_idle_wake[2].idle_ms") &&
                 Catch::Contains("ascending"));
  CHECK_THAT(bad(R"("extra_us": 260)", R"("extra_us": -1)", "idle_neg"),
             Catch::Contains("measured.nvme_idle_wake[1].extra_us") && Catch::Contains("out of range"));
  CHECK_THAT(bad(R"("idle_ms": 3, )", "", "idle_missing"),
             Catch::Contains("measured.nvme_idle_wake[0].idle_ms: missing required key"));
  std::string notarray = std::string(kGood);
  notarray.insert(notarray.rfind('}'), R"(, "measured": {"nvme_idle_wake": 5})");
  CHECK_THAT(error_of(notarray, "idle_num"), Catch::Contains("measured.nvme_idle_wake: expected an array"));
}

TEST_CASE("hardware: the stream pairs' wake-ups load, round-trip and are checked", "[hardware]") {
  std::string with = std::string(kGood);
  with.insert(with.rfind('}'), R"(, "measured": {"stream_spin_us": 200, "stream_wake_latency_us": 30,
      "stream_wake_pairs": [{"from": "comm", "to": "cpu_adam", "wake_us": 4.5}, {"from": "cpu_adam", "to": "h2d",
      "wake_us": 30}]})");
  auto h = load_hardware_file(write_tmp("pairs", with));
  INFO((h.ok() ? std::string() : h.error().message));
  REQUIRE(h.ok());
  REQUIRE(h->measured.stream_wake_pairs.size() == 2);
  CHECK(h->measured.stream_wake_pairs[0].from == "comm");
  CHECK(h->measured.stream_wake_pairs[1].to == "h2d");
  CHECK(h->measured.stream_wake_pairs[0].wake_us == 4.5);
  auto back = load_hardware_file(write_tmp("pairs_back", hardware_to_json(*h)));
  REQUIRE(back.ok());
  REQUIRE(back->measured.stream_wake_pairs.size() == 2);
  CHECK(back->measured.stream_wake_pairs[1].wake_us == 30);
  auto bad = [&](const std::string& from, const std::string& to, const char* name) {
    std::string t = with;
    t.replace(t.find(from), from.size(), to);
    return error_of(t, name);
  };
  CHECK_THAT(bad(R"("to": "h2d")", R"("to": "gpu")", "pairs_name"),
             Catch::Contains("zs_test_hw_pairs_name.json") && Catch::Contains("measured.stream_wake_pairs[1].to") &&
                 Catch::Contains("'gpu' is not a stream; expected one of compute, h2d, d2h"));
  CHECK_THAT(bad(R"("wake_us": 4.5)", R"("wake_us": -1)", "pairs_neg"),
             Catch::Contains("measured.stream_wake_pairs[0].wake_us") && Catch::Contains("out of range"));
  CHECK_THAT(bad(R"("from": "comm", )", "", "pairs_missing"),
             Catch::Contains("measured.stream_wake_pairs[0].from: missing required key"));
  std::string notarray = std::string(kGood);
  notarray.insert(notarray.rfind('}'), R"(, "measured": {"stream_wake_pairs": {}})");
  CHECK_THAT(error_of(notarray, "pairs_obj"), Catch::Contains("measured.stream_wake_pairs: expected an array"));
}

TEST_CASE("hardware: the probe's aio sweep loads, round-trips and is checked", "[hardware]") {
  std::string with = std::string(kGood);
  with.insert(with.rfind('}'), R"(, "measured": {"nvme_read_GBps": 1.5, "aio_block_size": 1048576,
    "aio_queue_depth": 8, "nvme_aio_sweep": [
      {"block_size": 1048576, "queue_depth": 8, "read_GBps": 1.5, "write_GBps": 2.0},
      {"block_size": 262144, "queue_depth": 32, "read_GBps": 1.2, "write_GBps": 1.9}]})");
  auto h = load_hardware_file(write_tmp("sweep", with));
  INFO((h.ok() ? std::string() : h.error().message));
  REQUIRE(h.ok());
  REQUIRE(h->measured.nvme_aio_sweep.size() == 2);
  CHECK(h->measured.nvme_aio_sweep[1].block_size == 262144);
  CHECK(h->measured.nvme_aio_sweep[1].queue_depth == 32);
  CHECK(h->measured.nvme_aio_sweep[1].read_GBps == 1.2);
  CHECK(h->measured.nvme_aio_sweep[1].write_GBps == 1.9);
  auto back = load_hardware_file(write_tmp("sweep_back", hardware_to_json(*h)));
  REQUIRE(back.ok());
  REQUIRE(back->measured.nvme_aio_sweep.size() == 2);
  CHECK(back->measured.nvme_aio_sweep[0].write_GBps == 2.0);
  auto bad = [&](const std::string& from, const std::string& to, const char* name) {
    std::string t = with;
    t.replace(t.find(from), from.size(), to);
    return error_of(t, name);
  };
  std::string e = bad(R"("read_GBps": 1.2)", R"("read_GBps": 0)", "sweep_range");
  CHECK_THAT(e, Catch::Contains("zs_test_hw_sweep_range.json") &&
                    Catch::Contains("measured.nvme_aio_sweep[1].read_GBps") && Catch::Contains("out of range"));
  e = bad(R"("queue_depth": 32, )", "", "sweep_missing");
  CHECK_THAT(e, Catch::Contains("measured.nvme_aio_sweep[1].queue_depth: missing required key"));
  e = bad(R"("block_size": 262144, "queue_depth": 32)", R"("block_size": 1048576, "queue_depth": 8)", "sweep_twice");
  CHECK_THAT(e, Catch::Contains("measured.nvme_aio_sweep[1].block_size") && Catch::Contains("listed twice"));
  e = bad(R"("write_GBps": 1.9})", R"("write_GBps": 1.9, "depth": 3})", "sweep_unknown");
  CHECK_THAT(e, Catch::Contains("measured.nvme_aio_sweep[1].depth: unknown key"));
  std::string notarray = std::string(kGood);
  notarray.insert(notarray.rfind('}'), R"(, "measured": {"nvme_aio_sweep": {"block_size": 1}})");
  CHECK_THAT(error_of(notarray, "sweep_obj"), Catch::Contains("measured.nvme_aio_sweep: expected an array"));
}

TEST_CASE("hardware: hot NVMe figures come together with the settled ones", "[hardware]") {
  const std::string all = R"(, "measured": {"nvme_read_GBps": 2, "nvme_write_GBps": 2.5, "nvme_read_latency_us": 500,
    "nvme_write_latency_us": 400, "nvme_settle_s": 0.5, "nvme_hot_read_GBps": 4, "nvme_hot_write_GBps": 5,
    "nvme_hot_read_latency_us": 100, "nvme_hot_write_latency_us": 90})";
  std::string with = std::string(kGood);
  with.insert(with.rfind('}'), all);
  auto h = load_hardware_file(write_tmp("hot", with));
  INFO((h.ok() ? std::string() : h.error().message));
  REQUIRE(h.ok());
  CHECK(*h->measured.nvme_settle_s == 0.5);
  CHECK(*h->measured.nvme_hot_write_latency_us == 90);
  auto back = load_hardware_file(write_tmp("hot_back", hardware_to_json(*h)));
  REQUIRE(back.ok());
  CHECK(*back->measured.nvme_hot_read_GBps == 4);
  std::string part = with;
  const std::string cut = R"("nvme_hot_write_GBps": 5,)";
  part.erase(part.find(cut), cut.size());
  CHECK_THAT(error_of(part, "hot_part"), Catch::Contains("zs_test_hw_hot_part.json") &&
                                             Catch::Contains("measured.nvme_settle_s") &&
                                             Catch::Contains("come together"));
}

TEST_CASE("hardware: bad input names file, path and what is allowed", "[hardware][bad-input]") {
  std::string g = kGood;
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string t = g;
    t.replace(t.find(from), from.size(), to);
    return t;
  };
  std::string e = error_of(replace("\"memory_GiB\": 16", "\"memory_GiB\": \"16\""), "type");
  CHECK_THAT(e, Catch::Contains("zs_test_hw_type.json") && Catch::Contains("gpu.memory_GiB") &&
                    Catch::Contains("not a number"));
  e = error_of(replace("\"cores\": 8", "\"cores\": 0"), "range");
  CHECK_THAT(e, Catch::Contains("cpu.cores") && Catch::Contains("out of range"));
  e = error_of(replace("\"hbm_GBps\"", "\"hbm_GBs\""), "unknown");
  CHECK_THAT(e, Catch::Contains("gpu.hbm_GBs") || Catch::Contains("gpu.hbm_GBps"));
  e = error_of(replace("\"sockets\": 1,", "\"sockets\": 1, \"memry_GiB\": 3,"), "unknown2");
  CHECK_THAT(e, Catch::Contains("cpu.memry_GiB: unknown key") && Catch::Contains("did you mean \"memory_GiB\""));
  e = error_of(replace("\"nodes\": 1,", ""), "missing");
  CHECK_THAT(e, Catch::Contains("nodes: missing required key"));
  e = error_of("{\"name\": \"x\",\n  \"source\": }", "malformed");
  CHECK_THAT(e, Catch::Contains("zs_test_hw_malformed.json:2:") && Catch::Contains("malformed JSON"));
  auto missing = load_hardware("/nonexistent/hw.json");
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(missing.error().message, Catch::Contains("/nonexistent/hw.json") && Catch::Contains("no such file"));
  auto unknown_name = load_hardware("dgx3");
  REQUIRE_FALSE(unknown_name.ok());
  CHECK_THAT(unknown_name.error().message, Catch::Contains("shipped:") && Catch::Contains("dgx2"));
}

TEST_CASE("hardware: a slow stand-in GPU's profile loads; a peak of zero does not", "[hardware]") {
  // The host device under a sanitizer measured below 1 GFLOP/s (5e-4 TFLOPS); its written profile must load.
  std::string slow = kGood;
  slow.replace(slow.find(R"("fp16": 100, "bf16": 100, "fp32": 10)"),
               std::string(R"("fp16": 100, "bf16": 100, "fp32": 10)").size(),
               R"("fp16": 0.0005, "bf16": 0.0005, "fp32": 0.0005)");
  auto h = load_hardware_file(write_tmp("slow_gpu", slow));
  INFO((h.ok() ? std::string() : h.error().message));
  REQUIRE(h.ok());
  CHECK(h->gpu.peak_tflops_fp16 == 0.0005);
  std::string zero = kGood;
  zero.replace(zero.find(R"("fp16": 100)"), std::string(R"("fp16": 100)").size(), R"("fp16": 0)");
  CHECK(error_of(zero, "zero_fp16").find("fp16") != std::string::npos);
}
