#include "core/hardware.h"

#include "core/json_reader.h"
#include "core/model.h"
#include "core/paths.h"
#include "core/stream.h"

namespace zs::core {

namespace {

GpuSpec read_gpu(ObjectReader g) {
  GpuSpec gpu;
  gpu.name = g.req_string("name");
  gpu.memory_GiB = g.req_number("memory_GiB", 0.001, 1e6);
  ObjectReader pt = g.req_object("peak_tflops");
  // From 1 MFLOP/s: the host device (a CPU stand-in) under a sanitizer and a busy neighbour measured < 1 GFLOP/s,
  // and `train --write-device-profile` must write a profile that loads.
  gpu.peak_tflops_fp16 = pt.req_number("fp16", 1e-6, 1e7);
  gpu.peak_tflops_bf16 = pt.req_number("bf16", 0, 1e7);  // 0: not supported (V100)
  gpu.peak_tflops_fp32 = pt.req_number("fp32", 1e-6, 1e7);
  gpu.hbm_GBps = g.req_number("hbm_GBps", 1e-3, 1e7);
  return gpu;
}

CpuSpec read_cpu(ObjectReader c) {
  CpuSpec cpu;
  cpu.sockets = c.req_integer("sockets", 1, 64);
  cpu.cores = c.req_integer("cores", 1, 1 << 16);
  cpu.memory_GiB = c.req_number("memory_GiB", 0.001, 1e9);
  cpu.memory_GBps = c.req_number("memory_GBps", 1e-3, 1e7);
  cpu.name = c.opt_string({"name"}).value_or("");
  cpu.core_memory_GBps = c.opt_number({"core_memory_GBps"}, 1e-3, 1e5).value_or(0);
  cpu.numa_nodes = c.opt_integer({"numa_nodes"}, 1, 1024).value_or(0);
  return cpu;
}

NvmeSpec read_nvme(ObjectReader n) {
  NvmeSpec nvme;
  nvme.drives = n.req_integer("drives", 0, 1024);
  nvme.capacity_GB_each = n.req_number("capacity_GB_each", 0, 1e9);
  nvme.read_GBps_each = n.req_number("read_GBps_each", 0, 1e6);
  nvme.write_GBps_each = n.req_number("write_GBps_each", 0, 1e6);
  if (nvme.drives > 0 && (nvme.capacity_GB_each <= 0 || nvme.read_GBps_each <= 0 || nvme.write_GBps_each <= 0))
    n.fail("drives",
           std::to_string(nvme.drives) + " drives need positive capacity_GB_each, read_GBps_each and write_GBps_each");
  return nvme;
}

LinkSpec read_links(ObjectReader l, int64_t nodes) {
  LinkSpec links;
  links.pcie_h2d_GBps = l.req_number("pcie_h2d_GBps", 1e-3, 1e6);
  links.pcie_d2h_GBps = l.req_number("pcie_d2h_GBps", 1e-3, 1e6);
  links.pcie_host_GBps = l.req_number("pcie_host_GBps", 1e-3, 1e6);
  links.nvlink_GBps = l.req_number("nvlink_GBps", 0, 1e6);
  links.network_GBps_per_node = l.req_number("network_GBps_per_node", 0, 1e6);
  links.network_latency_us = l.req_number("network_latency_us", 0, 1e6);
  if (nodes > 1 && links.network_GBps_per_node <= 0) l.fail("network_GBps_per_node", "must be positive when nodes > 1");
  return links;
}

// measured's NVMe figures: cold (settled) and hot rates and latencies, which come as one set.
void read_measured_nvme(ObjectReader& m, MeasuredSpec& ms) {
  ms.nvme_read_GBps = m.opt_number({"nvme_read_GBps"}, 1e-6, 1e6);
  ms.nvme_write_GBps = m.opt_number({"nvme_write_GBps"}, 1e-6, 1e6);
  ms.nvme_read_latency_us = m.opt_number({"nvme_read_latency_us"}, 0, 1e7);
  ms.nvme_write_latency_us = m.opt_number({"nvme_write_latency_us"}, 0, 1e7);
  ms.nvme_settle_s = m.opt_number({"nvme_settle_s"}, 1e-6, 1e4);
  ms.nvme_hot_read_GBps = m.opt_number({"nvme_hot_read_GBps"}, 1e-6, 1e6);
  ms.nvme_hot_write_GBps = m.opt_number({"nvme_hot_write_GBps"}, 1e-6, 1e6);
  ms.nvme_hot_read_latency_us = m.opt_number({"nvme_hot_read_latency_us"}, 0, 1e7);
  ms.nvme_hot_write_latency_us = m.opt_number({"nvme_hot_write_latency_us"}, 0, 1e7);
  const bool any_hot = ms.nvme_hot_read_GBps || ms.nvme_hot_write_GBps || ms.nvme_hot_read_latency_us ||
                       ms.nvme_hot_write_latency_us || ms.nvme_settle_s;
  const bool all_hot = ms.nvme_hot_read_GBps && ms.nvme_hot_write_GBps && ms.nvme_hot_read_latency_us &&
                       ms.nvme_hot_write_latency_us && ms.nvme_settle_s && ms.nvme_read_GBps && ms.nvme_write_GBps &&
                       ms.nvme_read_latency_us && ms.nvme_write_latency_us;
  if (any_hot && !all_hot)
    m.fail("nvme_settle_s",
           "nvme_settle_s and nvme_hot_{read,write}_{GBps,latency_us} come together, with nvme_{read,write}_GBps "
           "and nvme_{read,write}_latency_us (zerosim probe writes all of them)");
}

std::vector<NvmeAioRate> read_aio_sweep(ObjectReader& m) {
  std::vector<NvmeAioRate> sweep;
  const Json* sw = m.raw({"nvme_aio_sweep"});
  if (!sw) return sweep;
  if (!sw->is_array()) {
    m.fail("nvme_aio_sweep", "expected an array of {block_size, queue_depth, read_GBps, write_GBps}");
    return sweep;
  }
  for (size_t i = 0; i < sw->size() && !m.failed(); ++i) {
    ObjectReader e((*sw)[i], m.file(), m.key_path("nvme_aio_sweep") + "[" + std::to_string(i) + "]");
    NvmeAioRate a;
    a.block_size = e.req_integer("block_size", 512, int64_t{1} << 34);
    a.queue_depth = e.req_integer("queue_depth", 1, 1 << 16);
    a.read_GBps = e.req_number("read_GBps", 1e-6, 1e6);
    a.write_GBps = e.req_number("write_GBps", 1e-6, 1e6);
    for (const auto& b : sweep)
      if (!e.failed() && b.block_size == a.block_size && b.queue_depth == a.queue_depth)
        e.fail("block_size", "block_size " + std::to_string(a.block_size) + " with queue_depth " +
                                 std::to_string(a.queue_depth) + " is listed twice");
    if (Status st = e.finish(); !st.ok()) m.fail_message(st.error().message);
    sweep.push_back(a);
  }
  return sweep;
}

std::vector<NvmeIdleCost> read_idle_wake(ObjectReader& m) {
  std::vector<NvmeIdleCost> wake;
  const Json* iw = m.raw({"nvme_idle_wake"});
  if (!iw) return wake;
  if (!iw->is_array()) {
    m.fail("nvme_idle_wake", "expected an array of {idle_ms, extra_us}, idle_ms ascending");
    return wake;
  }
  for (size_t i = 0; i < iw->size() && !m.failed(); ++i) {
    ObjectReader e((*iw)[i], m.file(), m.key_path("nvme_idle_wake") + "[" + std::to_string(i) + "]");
    NvmeIdleCost c;
    c.idle_ms = e.req_number("idle_ms", 1e-3, 1e7);
    c.extra_us = e.req_number("extra_us", 0, 1e8);
    if (!e.failed() && !wake.empty() && c.idle_ms <= wake.back().idle_ms)
      e.fail("idle_ms", "expected idle_ms above the previous entry's (ascending)");
    if (Status st = e.finish(); !st.ok()) m.fail_message(st.error().message);
    wake.push_back(c);
  }
  return wake;
}

std::vector<ModuleTimeScale> read_module_time_scale(ObjectReader& m) {
  std::vector<ModuleTimeScale> scales;
  const Json* ts = m.raw({"module_time_scale"});
  if (!ts) return scales;
  std::string roles;
  for (int i = 1; i < kModuleRoles; ++i)
    roles += std::string(i > 1 ? ", " : "") + to_string(static_cast<ModuleRole>(i));
  if (!ts->is_object()) {
    m.fail("module_time_scale", "expected an object {role: {forward, backward}}, roles " + roles);
    return scales;
  }
  for (auto it = ts->begin(); it != ts->end() && !m.failed(); ++it) {
    if (module_role_from(it.key()) == ModuleRole::none) {
      m.fail("module_time_scale", "'" + it.key() + "' is not a module role; expected one of " + roles);
      break;
    }
    ObjectReader e(it.value(), m.file(), m.key_path("module_time_scale") + "." + it.key());
    ModuleTimeScale x;
    x.role = it.key();
    x.forward = e.req_number("forward", 1e-3, 1e3);
    x.backward = e.req_number("backward", 1e-3, 1e3);
    if (Status st = e.finish(); !st.ok()) m.fail_message(st.error().message);
    scales.push_back(x);
  }
  return scales;
}

std::vector<StreamWake> read_stream_wake_pairs(ObjectReader& m) {
  std::vector<StreamWake> pairs;
  const Json* sp = m.raw({"stream_wake_pairs"});
  if (!sp) return pairs;
  std::string names;
  for (int i = 0; i < kStreams; ++i) names += std::string(i ? ", " : "") + to_string(static_cast<Stream>(i));
  if (!sp->is_array()) {
    m.fail("stream_wake_pairs", "expected an array of {from, to, wake_us}, streams " + names);
    return pairs;
  }
  for (size_t i = 0; i < sp->size() && !m.failed(); ++i) {
    ObjectReader e((*sp)[i], m.file(), m.key_path("stream_wake_pairs") + "[" + std::to_string(i) + "]");
    StreamWake w;
    for (auto [key, out] : {std::pair{"from", &w.from}, std::pair{"to", &w.to}}) {
      *out = e.req_string(key);
      bool known = false;
      for (int k = 0; k < kStreams; ++k) known = known || *out == to_string(static_cast<Stream>(k));
      if (!e.failed() && !known) e.fail(key, "'" + *out + "' is not a stream; expected one of " + names);
    }
    w.wake_us = e.req_number("wake_us", 0, 1e7);
    if (Status st = e.finish(); !st.ok()) m.fail_message(st.error().message);
    pairs.push_back(w);
  }
  return pairs;
}

// The optional "measured" block (`zerosim probe`, `train --write-device-profile`); every figure in it is optional.
MeasuredSpec read_measured(ObjectReader m) {
  MeasuredSpec ms;
  ms.dram_triad_GBps = m.opt_number({"dram_triad_GBps"}, 1e-6, 1e7);
  ms.dram_core_GBps = m.opt_number({"dram_core_GBps"}, 1e-6, 1e7);
  ms.dram_adam_pattern_GBps = m.opt_number({"dram_adam_pattern_GBps"}, 1e-6, 1e7);
  ms.cpu_adam_params_per_s = m.opt_number({"cpu_adam_params_per_s"}, 1, 1e15);
  ms.cpu_adam_threads = m.opt_integer({"cpu_adam_threads"}, 1, 1 << 16);
  ms.cpu_pass_GBps = m.opt_number({"cpu_pass_GBps"}, 1e-6, 1e7);
  ms.cpu_cast_GBps = m.opt_number({"cpu_cast_GBps"}, 1e-6, 1e7);
  read_measured_nvme(m, ms);
  ms.aio_block_size = m.opt_integer({"aio_block_size"}, 512, int64_t{1} << 34);
  ms.aio_queue_depth = m.opt_integer({"aio_queue_depth"}, 1, 1 << 16);
  ms.nvme_aio_sweep = read_aio_sweep(m);
  ms.nvme_idle_wake = read_idle_wake(m);
  ms.gemm_efficiency = m.opt_number({"gemm_efficiency"}, 1e-6, 1.0);
  ms.module_time_scale = read_module_time_scale(m);
  ms.backward_time_ratio = m.opt_number({"backward_time_ratio"}, 0.1, 100.0);
  ms.stream_spin_us = m.opt_number({"stream_spin_us"}, 0, 1e7);
  ms.stream_wake_latency_us = m.opt_number({"stream_wake_latency_us"}, 0, 1e7);
  ms.cpu_pool_wake_us = m.opt_number({"cpu_pool_wake_us"}, 0, 1e7);
  ms.stream_wake_pairs = read_stream_wake_pairs(m);
  ms.pcie_h2d_pageable_GBps = m.opt_number({"pcie_h2d_pageable_GBps"}, 1e-6, 1e6);
  ms.pcie_d2h_pageable_GBps = m.opt_number({"pcie_d2h_pageable_GBps"}, 1e-6, 1e6);
  ms.pcie_latency_us = m.opt_number({"pcie_latency_us"}, 0, 1e6);
  ms.nccl_busbw_GBps = m.opt_number({"nccl_busbw_GBps"}, 1e-6, 1e6);
  return ms;
}

}  // namespace

Result<Hardware> load_hardware_file(const std::string& path) {
  auto j = read_json_file(path);
  if (!j) return j.error();
  Hardware h;
  h.file = path;
  ObjectReader r(*j, path, "");
  h.name = r.req_string("name");
  h.source = r.req_string("source");
  h.nodes = r.req_integer("nodes", 1, 1 << 20);
  h.gpus_per_node = r.req_integer("gpus_per_node", 1, 1024);
  h.gpu = read_gpu(r.req_object("gpu"));
  h.cpu = read_cpu(r.req_object("cpu"));
  h.nvme = read_nvme(r.req_object("nvme"));
  h.links = read_links(r.req_object("links"), h.nodes);
  if (ObjectReader m = r.object({"measured"}); m.present()) h.measured = read_measured(m);
  ZS_TRY(r.finish());
  return h;
}

Result<Hardware> load_hardware(const std::string& name_or_path) {
  auto p = resolve_input(name_or_path, InputKind::hardware);
  if (!p) return p.error();
  return load_hardware_file(*p);
}

std::string hardware_to_json(const Hardware& h) {
  Json j;
  j["name"] = h.name;
  j["source"] = h.source;
  j["nodes"] = h.nodes;
  j["gpus_per_node"] = h.gpus_per_node;
  j["gpu"] = {{"name", h.gpu.name},
              {"memory_GiB", h.gpu.memory_GiB},
              {"peak_tflops",
               {{"fp16", h.gpu.peak_tflops_fp16}, {"bf16", h.gpu.peak_tflops_bf16}, {"fp32", h.gpu.peak_tflops_fp32}}},
              {"hbm_GBps", h.gpu.hbm_GBps}};
  j["cpu"] = Json::object();
  if (!h.cpu.name.empty()) j["cpu"]["name"] = h.cpu.name;
  j["cpu"]["sockets"] = h.cpu.sockets;
  j["cpu"]["cores"] = h.cpu.cores;
  j["cpu"]["memory_GiB"] = h.cpu.memory_GiB;
  j["cpu"]["memory_GBps"] = h.cpu.memory_GBps;
  if (h.cpu.core_memory_GBps > 0) j["cpu"]["core_memory_GBps"] = h.cpu.core_memory_GBps;
  if (h.cpu.numa_nodes > 0) j["cpu"]["numa_nodes"] = h.cpu.numa_nodes;
  j["nvme"] = {{"drives", h.nvme.drives},
               {"capacity_GB_each", h.nvme.capacity_GB_each},
               {"read_GBps_each", h.nvme.read_GBps_each},
               {"write_GBps_each", h.nvme.write_GBps_each}};
  j["links"] = {{"pcie_h2d_GBps", h.links.pcie_h2d_GBps},
                {"pcie_d2h_GBps", h.links.pcie_d2h_GBps},
                {"pcie_host_GBps", h.links.pcie_host_GBps},
                {"nvlink_GBps", h.links.nvlink_GBps},
                {"network_GBps_per_node", h.links.network_GBps_per_node},
                {"network_latency_us", h.links.network_latency_us}};
  Json m = Json::object();
  const auto& ms = h.measured;
  auto put = [&](const char* k, const auto& v) {
    if (v) m[k] = *v;
  };
  put("dram_triad_GBps", ms.dram_triad_GBps);
  put("dram_core_GBps", ms.dram_core_GBps);
  put("dram_adam_pattern_GBps", ms.dram_adam_pattern_GBps);
  put("cpu_adam_params_per_s", ms.cpu_adam_params_per_s);
  put("cpu_adam_threads", ms.cpu_adam_threads);
  put("cpu_pass_GBps", ms.cpu_pass_GBps);
  put("cpu_cast_GBps", ms.cpu_cast_GBps);
  put("nvme_read_GBps", ms.nvme_read_GBps);
  put("nvme_write_GBps", ms.nvme_write_GBps);
  put("nvme_read_latency_us", ms.nvme_read_latency_us);
  put("nvme_write_latency_us", ms.nvme_write_latency_us);
  put("nvme_settle_s", ms.nvme_settle_s);
  put("nvme_hot_read_GBps", ms.nvme_hot_read_GBps);
  put("nvme_hot_write_GBps", ms.nvme_hot_write_GBps);
  put("nvme_hot_read_latency_us", ms.nvme_hot_read_latency_us);
  put("nvme_hot_write_latency_us", ms.nvme_hot_write_latency_us);
  put("aio_block_size", ms.aio_block_size);
  put("aio_queue_depth", ms.aio_queue_depth);
  if (!ms.nvme_aio_sweep.empty()) {
    Json a = Json::array();
    for (const auto& r : ms.nvme_aio_sweep)
      a.push_back({{"block_size", r.block_size},
                   {"queue_depth", r.queue_depth},
                   {"read_GBps", r.read_GBps},
                   {"write_GBps", r.write_GBps}});
    m["nvme_aio_sweep"] = a;
  }
  if (!ms.nvme_idle_wake.empty()) {
    Json a = Json::array();
    for (const auto& c : ms.nvme_idle_wake) a.push_back({{"idle_ms", c.idle_ms}, {"extra_us", c.extra_us}});
    m["nvme_idle_wake"] = a;
  }
  put("gemm_efficiency", ms.gemm_efficiency);
  if (!ms.module_time_scale.empty()) {
    Json o = Json::object();
    for (const auto& x : ms.module_time_scale) o[x.role] = {{"forward", x.forward}, {"backward", x.backward}};
    m["module_time_scale"] = o;
  }
  put("backward_time_ratio", ms.backward_time_ratio);
  put("stream_spin_us", ms.stream_spin_us);
  put("stream_wake_latency_us", ms.stream_wake_latency_us);
  put("cpu_pool_wake_us", ms.cpu_pool_wake_us);
  if (!ms.stream_wake_pairs.empty()) {
    Json a = Json::array();
    for (const auto& w : ms.stream_wake_pairs) a.push_back({{"from", w.from}, {"to", w.to}, {"wake_us", w.wake_us}});
    m["stream_wake_pairs"] = a;
  }
  put("pcie_h2d_pageable_GBps", ms.pcie_h2d_pageable_GBps);
  put("pcie_d2h_pageable_GBps", ms.pcie_d2h_pageable_GBps);
  put("pcie_latency_us", ms.pcie_latency_us);
  put("nccl_busbw_GBps", ms.nccl_busbw_GBps);
  if (!m.empty()) j["measured"] = m;
  return j.dump(2) + "\n";
}

}  // namespace zs::core
