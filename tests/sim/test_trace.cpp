// core/trace.cpp: zerosim's trace JSON round-trips exactly; bad files name the path and value; the Chrome
// export is valid trace-event JSON.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/trace.h"

using namespace zs;

namespace {

core::Trace sample_trace() {
  core::Trace t;
  t.source = "simulate";
  t.schedule = "deepspeed";
  t.step_time_s = 1.2345678901234567;
  t.peak_bytes = {123456789012, 5, 0};
  t.overhead_bytes = {1073741824, 4, 0};
  t.provenance.command_line = "zerosim simulate --model tiny";
  t.provenance.git_commit = "abc123";
  t.provenance.created_utc = "2025-01-01T00:00:00Z";
  t.provenance.input_hashes = {{"models/tiny.json", "fnv1a64:0123"}, {"configs/x.json", "fnv1a64:4567"}};
  t.provenance.versions = {{"simgrid", "SimGrid 3.32.0"}};
  core::TraceEvent a;
  a.op = 3;
  a.rank = 1;
  a.stream = core::Stream::nvme_read;
  a.kind = core::OpKind::nvme_read;
  a.phase = core::Phase::optimizer;
  a.layer = 7;
  a.micro_step = 2;
  a.start_s = 0.1;
  a.end_s = 1.0 / 3.0;
  a.bytes = 1 << 30;
  a.flops = 0;
  core::TraceEvent b = a;
  b.op = 4;
  b.rank = 0;
  b.stream = core::Stream::compute;
  b.kind = core::OpKind::backward;
  b.phase = core::Phase::backward;
  b.layer = -1;
  b.flops = 1.5e12;
  b.bytes = 0;
  core::TraceEvent c = b;
  c.op = 5;
  c.kind = core::OpKind::alloc;
  c.start_s = c.end_s = 0.5;
  t.events = {a, b, c};
  t.memory = {{0.0, {10, 20, 30}}, {0.5, {-1, 2, 3}}};
  return t;
}

std::string temp_file(const std::string& text) {
  char name[] = "/tmp/zs_trace_XXXXXX";
  int fd = mkstemp(name);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  close(fd);
  return name;
}

}  // namespace

TEST_CASE("trace JSON round-trips exactly", "[trace]") {
  const core::Trace t = sample_trace();
  const std::string text = core::trace_to_json(t);
  const std::string path = temp_file(text);
  auto r = core::trace_from_json_file(path);
  std::remove(path.c_str());
  INFO((r ? "" : r.error().message));
  REQUIRE(r.ok());
  const core::Trace& u = *r;
  CHECK(u.source == t.source);
  CHECK(u.schedule == t.schedule);
  CHECK(u.step_time_s == t.step_time_s);
  CHECK(u.peak_bytes == t.peak_bytes);
  CHECK(u.overhead_bytes == t.overhead_bytes);
  CHECK(u.provenance.command_line == t.provenance.command_line);
  auto hashes = t.provenance.input_hashes;  // read back in key order
  std::sort(hashes.begin(), hashes.end());
  CHECK(u.provenance.input_hashes == hashes);
  CHECK(u.provenance.versions == t.provenance.versions);
  REQUIRE(u.events.size() == t.events.size());
  for (size_t i = 0; i < t.events.size(); ++i) {
    const auto &x = t.events[i], &y = u.events[i];
    CHECK((x.op == y.op && x.rank == y.rank && x.stream == y.stream && x.kind == y.kind && x.phase == y.phase &&
           x.layer == y.layer && x.micro_step == y.micro_step && x.start_s == y.start_s && x.end_s == y.end_s &&
           x.bytes == y.bytes && x.flops == y.flops));
  }
  REQUIRE(u.memory.size() == 2);
  CHECK(u.memory[1].bytes == t.memory[1].bytes);
  CHECK(core::trace_to_json(u) == text);  // and writes back byte for byte
}

TEST_CASE("a bad trace file names the path, key and allowed values", "[trace]") {
  auto j = nlohmann::json::parse(core::trace_to_json(sample_trace()));
  SECTION("unknown stream") {
    j["events"][1]["stream"] = "gpu";
    const std::string path = temp_file(j.dump());
    auto r = core::trace_from_json_file(path);
    std::remove(path.c_str());
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message, Catch::Contains("events[1].stream") && Catch::Contains("compute"));
  }
  SECTION("unknown key") {
    j["events"][0]["strat_s"] = 1;
    const std::string path = temp_file(j.dump());
    auto r = core::trace_from_json_file(path);
    std::remove(path.c_str());
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message, Catch::Contains("strat_s"));
  }
  SECTION("not a trace") {
    j["format"] = "chrome";
    const std::string path = temp_file(j.dump());
    auto r = core::trace_from_json_file(path);
    std::remove(path.c_str());
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message, Catch::Contains("zerosim-trace"));
  }
  SECTION("framework bytes above the peak; absent in an older trace: none") {
    j["overhead_bytes"]["cpu"] = 6;
    const std::string path = temp_file(j.dump());
    auto r = core::trace_from_json_file(path);
    std::remove(path.c_str());
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message, Catch::Contains("overhead_bytes.cpu") && Catch::Contains("exceeds peak_bytes.cpu"));
    j.erase("overhead_bytes");
    const std::string old = temp_file(j.dump());
    auto o = core::trace_from_json_file(old);
    std::remove(old.c_str());
    REQUIRE(o.ok());
    CHECK(o->overhead_bytes == std::array<int64_t, 3>{0, 0, 0});
  }
  SECTION("an event that ends before it starts") {
    j["events"][0]["end_s"] = 0.0;
    const std::string path = temp_file(j.dump());
    auto r = core::trace_from_json_file(path);
    std::remove(path.c_str());
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message, Catch::Contains("events[0].end_s"));
  }
}

TEST_CASE("Chrome/Perfetto export: a process per rank, a thread per stream, microseconds", "[trace]") {
  const auto j = nlohmann::json::parse(core::trace_to_chrome_json(sample_trace()));
  REQUIRE(j.contains("traceEvents"));
  int complete = 0, counters = 0, names = 0;
  for (const auto& e : j["traceEvents"]) {
    const std::string ph = e["ph"];
    if (ph == "X") {
      ++complete;
      CHECK(e["dur"].get<double>() >= 0);
      if (e["args"]["op"] == 3) {
        CHECK(e["pid"] == 1);
        CHECK(e["tid"] == static_cast<int>(core::Stream::nvme_read));
        CHECK(e["ts"].get<double>() == Approx(0.1e6));
        CHECK(e["name"] == "nvme_read L7 m2");
      }
    }
    if (ph == "C") ++counters;
    if (ph == "M" && e["name"] == "thread_name") ++names;
  }
  CHECK(complete == 2);  // the zero-length alloc is a ledger op: only in the memory counter
  CHECK(counters == 2);
  CHECK(names == 2 * 7);
  CHECK(j["otherData"]["simgrid"] == "SimGrid 3.32.0");
}
