// SimGrid 3.32 specifics (DEPENDENCIES.md): CM02 without cross-traffic gives exact bytes/bandwidth + latency;
// activities are created from maestro when they can start and kept alive (ActivityPtr) past their completion
// callback; vetoable_start() is the 3.32 name of the start that honours dependencies.
#include "sim/simgrid_adapter.h"

#include <cmath>
#include <exception>

// s4u.hpp first: simgrid/version.h relies on xbt/base.h's macros without including it.
#include <simgrid/s4u.hpp>
#include <simgrid/version.h>

namespace zs::sim {
namespace {

namespace sg = simgrid::s4u;

// Work on executor hosts is given in seconds of exclusive use; hosts run 1e9 units per second (nanoseconds),
// which keeps SimGrid's work-amount precision (1e-5 units) far below any op's duration.
constexpr double kUnitsPerSecond = 1e9;

class SimGridBackend final : public Backend {
 public:
  SimGridBackend(const Topology& t, Executor& ex) : t_(t), ex_(ex) {
    auto* zone = sg::create_full_zone("node");
    for (const HostSpec& h : t.hosts) {
      sg::Host* host = zone->create_host(h.name, kUnitsPerSecond);
      if (h.cores > 1) host->set_core_count(h.cores);
      hosts_.push_back(host->seal());
    }
    links_.assign(t.resources.size(), nullptr);
    for (size_t i = 0; i < t.resources.size(); ++i) {
      const Resource& r = t.resources[i];
      if (!r.is_link()) continue;
      links_[i] = zone->create_link(r.name, r.capacity)->set_latency(r.latency_s)->seal();
    }
    for (const Route& r : t.routes) {
      std::vector<sg::LinkInRoute> links;
      for (int32_t l : r.links) links.emplace_back(links_[static_cast<size_t>(l)]);
      zone->add_route(hosts_[static_cast<size_t>(r.src)]->get_netpoint(),
                      hosts_[static_cast<size_t>(r.dst)]->get_netpoint(), nullptr, nullptr, links, false);
    }
    zone->seal();
  }

  void exec(int32_t host, double seconds, uint64_t token) override {
    sg::ExecPtr e = sg::Exec::init();
    e->set_host(hosts_[static_cast<size_t>(host)]);
    e->set_flops_amount(seconds * kUnitsPerSecond);
    keep(e, token);
  }
  void flow(int32_t src, int32_t dst, double bytes, uint64_t token) override {
    // (Comm::set_rate is ignored for host-to-host comms in 3.32: rate caps are links in the topology.)
    sg::CommPtr c = sg::Comm::sendto_init(hosts_[static_cast<size_t>(src)], hosts_[static_cast<size_t>(dst)]);
    c->set_payload_size(static_cast<uint64_t>(std::llround(bytes)));
    keep(c, token);
  }
  void delay(double seconds, uint64_t token) override { exec(t_.timer_host(), seconds, token); }
  double now() const override { return sg::Engine::get_clock(); }

  void on_completion(const sg::Activity& a) {
    graveyard_.clear();  // activities finished in earlier callbacks: safe to drop now, never inside their own
    const auto token = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(a.get_data<void>()));
    if (a.get_state() != sg::Activity::State::FINISHED) {
      failed_ = true;
      return;
    }
    graveyard_.push_back(std::move(live_[token]));
    ex_.complete(token);
  }
  bool failed() const { return failed_; }
  void release_all() {
    graveyard_.clear();
    live_.clear();
  }

 private:
  void keep(sg::ActivityPtr a, uint64_t token) {
    a->set_data(reinterpret_cast<void*>(static_cast<uintptr_t>(token)));
    if (token >= live_.size()) live_.resize(token + 1);
    live_[token] = a;
    a->vetoable_start();
  }

  const Topology& t_;
  Executor& ex_;
  std::vector<sg::Host*> hosts_;
  std::vector<sg::Link*> links_;
  std::vector<sg::ActivityPtr> live_;  // indexed by the executor's token
  std::vector<sg::ActivityPtr> graveyard_;
  bool failed_ = false;
};

}  // namespace

core::Status run_on_simgrid(const Topology& t, Executor& ex, const std::function<void()>& engine_ready) {
  try {
    // CM02 + no cross-traffic + no TCP-gamma window: a flow alone takes exactly latency + bytes/bandwidth.
    std::vector<std::string> args = {"zerosim", "--cfg=network/model:CM02", "--cfg=network/crosstraffic:0",
                                     "--cfg=network/TCP-gamma:0", "--log=root.thresh:critical"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    int argc = static_cast<int>(argv.size());
    sg::Engine engine(&argc, argv.data());
    if (engine_ready) engine_ready();
    SimGridBackend backend(t, ex);
    sg::Activity::on_completion_cb([&backend](const sg::Activity& a) { backend.on_completion(a); });
    ex.start(backend);
    engine.run();
    const bool failed = backend.failed();
    backend.release_all();
    if (failed) return core::internal_error("simulation: an activity failed or was cancelled");
    if (!ex.finished()) return core::internal_error("simulation: " + ex.unfinished_report());
    return {};
  } catch (const std::exception& e) {
    return core::internal_error(std::string("simulation: SimGrid: ") + e.what());
  }
}

std::string simgrid_version() {
  return "SimGrid " + std::to_string(SIMGRID_VERSION_MAJOR) + "." + std::to_string(SIMGRID_VERSION_MINOR) + "." +
         std::to_string(SIMGRID_VERSION_PATCH);
}

}  // namespace zs::sim
