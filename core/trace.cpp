// Trace JSON (docs/TRACE.md) and the Chrome/Perfetto trace-event export.
#include "core/trace.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "core/json_reader.h"

namespace zs::core {
namespace {

using OJson = nlohmann::ordered_json;

constexpr int kTraceVersion = 1;
const char* const kTierNames[3] = {"gpu", "cpu", "nvme"};

// Names come from plan.h's to_string (one copy); reading inverts them over every enum value.
template <class E>
std::vector<std::string> names_of(int count) {
  std::vector<std::string> v;
  for (int i = 0; i < count; ++i) v.push_back(to_string(static_cast<E>(i)));
  return v;
}
const std::vector<std::string>& stream_names() {
  static const auto v = names_of<Stream>(kStreams);
  return v;
}
const std::vector<std::string>& kind_names() {
  static const auto v = names_of<OpKind>(static_cast<int>(OpKind::release) + 1);
  return v;
}
const std::vector<std::string>& phase_names() {
  static const auto v = names_of<Phase>(3);
  return v;
}
template <class E>
E index_in(const std::vector<std::string>& names, const std::string& s) {
  return static_cast<E>(std::find(names.begin(), names.end(), s) - names.begin());
}

OJson tiers_json(const std::array<int64_t, 3>& b) {
  OJson j = OJson::object();
  for (size_t t = 0; t < 3; ++t) j[kTierNames[t]] = b[t];
  return j;
}

std::string event_name(const TraceEvent& e) {
  std::string n = to_string(e.kind);
  if (e.layer >= 0) n += " L" + std::to_string(e.layer);
  if (e.micro_step > 0) n += " m" + std::to_string(e.micro_step);
  return n;
}

}  // namespace

std::string trace_to_json(const Trace& t) {
  OJson j;
  j["format"] = "zerosim-trace";
  j["version"] = kTraceVersion;
  j["source"] = t.source;
  j["schedule"] = t.schedule;
  j["step_time_s"] = t.step_time_s;
  j["peak_bytes"] = tiers_json(t.peak_bytes);
  j["overhead_bytes"] = tiers_json(t.overhead_bytes);
  OJson p;
  p["command_line"] = t.provenance.command_line;
  p["git_commit"] = t.provenance.git_commit;
  p["created_utc"] = t.provenance.created_utc;
  // Objects keyed by file / library, written in key order (the order they read back in).
  for (const auto& [key, pairs] :
       {std::pair{"input_hashes", &t.provenance.input_hashes}, std::pair{"versions", &t.provenance.versions}}) {
    Json o = Json::object();
    for (const auto& [k, v] : *pairs) o[k] = v;
    p[key] = OJson::parse(o.dump());
  }
  j["provenance"] = std::move(p);
  OJson ev = OJson::array();
  for (const TraceEvent& e : t.events) {
    ev.push_back(OJson{{"op", e.op},
                       {"rank", e.rank},
                       {"stream", to_string(e.stream)},
                       {"kind", to_string(e.kind)},
                       {"phase", to_string(e.phase)},
                       {"layer", e.layer},
                       {"micro_step", e.micro_step},
                       {"start_s", e.start_s},
                       {"end_s", e.end_s},
                       {"bytes", e.bytes},
                       {"flops", e.flops}});
  }
  j["events"] = std::move(ev);
  OJson mem = OJson::array();
  for (const MemorySample& m : t.memory) {
    OJson s{{"t_s", m.t_s}};
    for (size_t k = 0; k < 3; ++k) s[kTierNames[k]] = m.bytes[k];
    mem.push_back(std::move(s));
  }
  j["memory"] = std::move(mem);
  return j.dump(1) + "\n";
}

Result<Trace> trace_from_json_file(const std::string& path) {
  auto doc = read_json_file(path);
  if (!doc) return doc.error();
  const Json& j = *doc;
  ObjectReader r(j, path, "");
  Trace t;
  const std::string format = r.req_string("format");
  if (!r.failed() && format != "zerosim-trace")
    r.fail("format", "\"" + format + "\" is not a zerosim trace (expected \"zerosim-trace\")");
  r.req_integer("version", kTraceVersion, kTraceVersion);
  t.source = r.choice({"source"}, "simulate", {"simulate", "train"});
  t.schedule = r.string({"schedule"}, "");
  t.step_time_s = r.req_number("step_time_s", 0, 1e12);
  {
    ObjectReader pb = r.object({"peak_bytes"});
    for (size_t k = 0; k < 3; ++k) t.peak_bytes[k] = pb.integer({kTierNames[k]}, 0, 0, INT64_MAX);
    ObjectReader ob = r.object({"overhead_bytes"});  // absent in traces written before it: none set apart
    for (size_t k = 0; k < 3; ++k) {
      t.overhead_bytes[k] = ob.integer({kTierNames[k]}, 0, 0, INT64_MAX);
      if (!ob.failed() && t.overhead_bytes[k] > t.peak_bytes[k])
        ob.fail(kTierNames[k], "exceeds peak_bytes." + std::string(kTierNames[k]));
    }
  }
  {
    ObjectReader p = r.object({"provenance"});
    t.provenance.command_line = p.string({"command_line"}, "");
    t.provenance.git_commit = p.string({"git_commit"}, "");
    t.provenance.created_utc = p.string({"created_utc"}, "");
    for (const char* key : {"input_hashes", "versions"}) {
      const Json* o = p.raw({key});
      if (!o) continue;
      if (!o->is_object()) {
        p.fail(key, "expected an object of strings");
        continue;
      }
      auto& dst = std::string(key) == "versions" ? t.provenance.versions : t.provenance.input_hashes;
      for (auto it = o->begin(); it != o->end(); ++it) {
        if (!it.value().is_string()) {
          p.fail(key, "\"" + it.key() + "\" must be a string");
          break;
        }
        dst.push_back({it.key(), it.value().get<std::string>()});
      }
    }
  }
  r.accept({"events", "memory"});  // read below, element by element
  ZS_TRY(r.finish());
  auto array_at = [&](const char* key) -> Result<const Json*> {
    auto it = j.find(key);
    if (it == j.end()) return bad_input(path + ": " + key + ": missing required key");
    if (!it->is_array()) return bad_input(path + ": " + key + ": expected an array");
    return &*it;
  };
  auto events = array_at("events");
  if (!events) return events.error();
  t.events.reserve((*events)->size());
  size_t i = 0;
  for (const Json& ej : **events) {
    ObjectReader e(ej, path, "events[" + std::to_string(i++) + "]");
    TraceEvent ev;
    ev.op = static_cast<uint32_t>(e.req_integer("op", 0, UINT32_MAX));
    ev.rank = static_cast<int32_t>(e.req_integer("rank", 0, INT32_MAX));
    ev.stream = index_in<Stream>(stream_names(), e.req_choice("stream", stream_names()));
    ev.kind = index_in<OpKind>(kind_names(), e.req_choice("kind", kind_names()));
    ev.phase = index_in<Phase>(phase_names(), e.req_choice("phase", phase_names()));
    ev.layer = static_cast<int32_t>(e.integer({"layer"}, -1, -1, INT32_MAX));
    ev.micro_step = static_cast<int32_t>(e.integer({"micro_step"}, 0, 0, INT32_MAX));
    ev.start_s = e.req_number("start_s", -1e12, 1e12);
    ev.end_s = e.req_number("end_s", -1e12, 1e12);
    ev.bytes = e.integer({"bytes"}, 0, 0, INT64_MAX);
    ev.flops = e.number({"flops"}, 0, 0, 1e30);
    if (!e.failed() && ev.end_s < ev.start_s) e.fail("end_s", "ends before it starts");
    ZS_TRY(e.finish());
    t.events.push_back(ev);
  }
  auto memory = array_at("memory");
  if (!memory) return memory.error();
  i = 0;
  for (const Json& mj : **memory) {
    ObjectReader m(mj, path, "memory[" + std::to_string(i++) + "]");
    MemorySample s;
    s.t_s = m.req_number("t_s", -1e12, 1e12);
    for (size_t k = 0; k < 3; ++k) s.bytes[k] = m.integer({kTierNames[k]}, 0, INT64_MIN, INT64_MAX);
    ZS_TRY(m.finish());
    t.memory.push_back(s);
  }
  return t;
}

std::string trace_to_chrome_json(const Trace& t) {
  // Trace Event Format (the JSON Perfetto and chrome://tracing load): one process per rank, one thread per
  // stream, complete events ("X") in microseconds, memory as counter events ("C") on rank 0.
  OJson ev = OJson::array();
  int32_t max_rank = -1;
  for (const TraceEvent& e : t.events) max_rank = std::max(max_rank, e.rank);
  for (int32_t r = 0; r <= max_rank; ++r) {
    ev.push_back(
        OJson{{"name", "process_name"}, {"ph", "M"}, {"pid", r}, {"args", {{"name", "rank " + std::to_string(r)}}}});
    ev.push_back(OJson{{"name", "process_sort_index"}, {"ph", "M"}, {"pid", r}, {"args", {{"sort_index", r}}}});
    for (int s = 0; s < 7; ++s) {
      ev.push_back(
          OJson{{"name", "thread_name"}, {"ph", "M"}, {"pid", r}, {"tid", s}, {"args", {{"name", stream_names()[s]}}}});
      ev.push_back(
          OJson{{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", r}, {"tid", s}, {"args", {{"sort_index", s}}}});
    }
  }
  for (const TraceEvent& e : t.events) {
    if (e.end_s <= e.start_s && (e.kind == OpKind::alloc || e.kind == OpKind::release)) continue;  // ledger only
    OJson args{{"op", e.op}, {"phase", to_string(e.phase)}, {"layer", e.layer}, {"micro_step", e.micro_step}};
    if (e.bytes) args["bytes"] = e.bytes;
    if (e.flops > 0) args["flops"] = e.flops;
    ev.push_back(OJson{{"name", event_name(e)},
                       {"cat", to_string(e.phase)},
                       {"ph", "X"},
                       {"ts", e.start_s * 1e6},
                       {"dur", (e.end_s - e.start_s) * 1e6},
                       {"pid", e.rank},
                       {"tid", static_cast<int>(e.stream)},
                       {"args", std::move(args)}});
  }
  for (const MemorySample& m : t.memory) {
    OJson args = OJson::object();
    for (size_t k = 0; k < 3; ++k) args[std::string(kTierNames[k]) + "_GiB"] = static_cast<double>(m.bytes[k]) / kGiB;
    ev.push_back(OJson{{"name", "memory (rank 0 GPU, node CPU/NVMe)"},
                       {"ph", "C"},
                       {"ts", m.t_s * 1e6},
                       {"pid", 0},
                       {"args", std::move(args)}});
  }
  OJson j;
  j["traceEvents"] = std::move(ev);
  j["displayTimeUnit"] = "ms";
  OJson other{{"source", t.source},
              {"schedule", t.schedule},
              {"step_time_s", t.step_time_s},
              {"command_line", t.provenance.command_line},
              {"git_commit", t.provenance.git_commit}};
  for (const auto& [k, v] : t.provenance.versions) other[k] = v;
  j["otherData"] = std::move(other);
  return j.dump() + "\n";
}

// docs/SIM.md's rule. Attributes every instant of [0, step) to a phase: the phase of the most recently started op still running on
// rank 0, or, in a gap, of the next op to start. The three phases then sum to the step time.
std::array<double, 3> phase_split(const std::vector<const TraceEvent*>& ev, double step) {
  std::array<double, 3> out{};
  if (ev.empty() || step <= 0) return out;
  std::vector<const TraceEvent*> by_start(ev.begin(), ev.end());
  std::stable_sort(by_start.begin(), by_start.end(), [](auto* a, auto* b) { return a->start_s < b->start_s; });
  std::vector<double> cuts = {0.0, step};
  for (auto* e : ev) {
    cuts.push_back(e->start_s);
    cuts.push_back(e->end_s);
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  std::multimap<double, size_t> active_by_start;  // start → index in by_start
  std::multimap<double, std::multimap<double, size_t>::iterator> ends;
  size_t next = 0;
  for (size_t c = 0; c + 1 < cuts.size(); ++c) {
    const double a = cuts[c], b = cuts[c + 1];
    while (next < by_start.size() && by_start[next]->start_s <= a) {
      if (by_start[next]->end_s > a) {
        auto it = active_by_start.emplace(by_start[next]->start_s, next);
        ends.emplace(by_start[next]->end_s, it);
      }
      ++next;
    }
    while (!ends.empty() && ends.begin()->first <= a) {
      active_by_start.erase(ends.begin()->second);
      ends.erase(ends.begin());
    }
    Phase ph;
    if (!active_by_start.empty())
      ph = by_start[std::prev(active_by_start.end())->second]->phase;
    else if (next < by_start.size())
      ph = by_start[next]->phase;
    else
      ph = by_start.back()->phase;
    out[static_cast<size_t>(ph)] += b - a;
  }
  return out;
}

std::array<double, 3> phase_split(const Trace& t, int32_t rank) {
  std::vector<const TraceEvent*> ev;
  double step = 0;
  for (const auto& e : t.events)
    if (e.rank == rank) {
      ev.push_back(&e);
      step = std::max(step, e.end_s);
    }
  return phase_split(ev, step);
}

}  // namespace zs::core
