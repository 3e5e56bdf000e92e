// Plan helpers (declared in plan.h): names, the summary and the JSON form (docs/PLAN.md).
#include "core/plan.h"

#include <nlohmann/json.hpp>

namespace zs::core {

std::string to_string(OpKind k) {
  switch (k) {
    case OpKind::forward: return "forward";
    case OpKind::backward: return "backward";
    case OpKind::recompute: return "recompute";
    case OpKind::h2d: return "h2d";
    case OpKind::d2h: return "d2h";
    case OpKind::nvme_read: return "nvme_read";
    case OpKind::nvme_write: return "nvme_write";
    case OpKind::allgather: return "allgather";
    case OpKind::reduce_scatter: return "reduce_scatter";
    case OpKind::allreduce: return "allreduce";
    case OpKind::adam_cpu: return "adam_cpu";
    case OpKind::adam_gpu: return "adam_gpu";
    case OpKind::cast_cpu: return "cast_cpu";
    case OpKind::alloc: return "alloc";
    case OpKind::release: return "release";
  }
  return "?";
}

std::string to_string(Phase p) {
  switch (p) {
    case Phase::forward: return "forward";
    case Phase::backward: return "backward";
    case Phase::optimizer: return "optimizer";
  }
  return "?";
}

std::string to_string(Purpose p) {
  switch (p) {
    case Purpose::unset: return "unset";
    case Purpose::compute: return "compute";
    case Purpose::checkpoint_out: return "checkpoint_out";
    case Purpose::checkpoint_in: return "checkpoint_in";
    case Purpose::release_activations: return "release_activations";
    case Purpose::read_params: return "read_params";
    case Purpose::upload_params: return "upload_params";
    case Purpose::gather_params: return "gather_params";
    case Purpose::release_params: return "release_params";
    case Purpose::release_grads: return "release_grads";
    case Purpose::reduce_grads: return "reduce_grads";
    case Purpose::alloc_allreduce_bucket: return "alloc_allreduce_bucket";
    case Purpose::allreduce_grads: return "allreduce_grads";
    case Purpose::release_allreduce_bucket: return "release_allreduce_bucket";
    case Purpose::alloc_reduce_temporaries: return "alloc_reduce_temporaries";
    case Purpose::release_reduce_temporaries: return "release_reduce_temporaries";
    case Purpose::offload_grads: return "offload_grads";
    case Purpose::fp32_grads_to_host: return "fp32_grads_to_host";
    case Purpose::cast_fp32_grads: return "cast_fp32_grads";
    case Purpose::write_grads: return "write_grads";
    case Purpose::grad_norm: return "grad_norm";
    case Purpose::swap_state_in: return "swap_state_in";
    case Purpose::swap_state_out: return "swap_state_out";
    case Purpose::alloc_fp32_grads: return "alloc_fp32_grads";
    case Purpose::release_fp32_grads: return "release_fp32_grads";
    case Purpose::adam: return "adam";
    case Purpose::cast_params: return "cast_params";
    case Purpose::upload_updated_params: return "upload_updated_params";
    case Purpose::updated_params_to_host: return "updated_params_to_host";
    case Purpose::write_updated_params: return "write_updated_params";
    case Purpose::gather_updated_params: return "gather_updated_params";
    case Purpose::gather_persistent_params: return "gather_persistent_params";
  }
  return "?";
}

std::string to_string(Schedule s) {
  switch (s) {
    case Schedule::deepspeed: return "deepspeed";
    case Schedule::dpu: return "dpu";
    case Schedule::overlap: return "overlap";
  }
  return "?";
}

std::string to_string(TensorKind k) {
  switch (k) {
    case TensorKind::lp_param: return "lp_param";
    case TensorKind::lp_grad: return "lp_grad";
    case TensorKind::fp32_master: return "fp32_master";
    case TensorKind::adam_m: return "adam_m";
    case TensorKind::adam_v: return "adam_v";
    case TensorKind::fp32_grad: return "fp32_grad";
    case TensorKind::activation: return "activation";
  }
  return "?";
}

std::optional<Schedule> parse_schedule(const std::string& name) {
  for (Schedule s : {Schedule::deepspeed, Schedule::dpu, Schedule::overlap})
    if (to_string(s) == name) return s;
  return std::nullopt;
}

PlanSummary summarize(const Plan& p) {
  PlanSummary s;
  for (const Op& op : p.ops) {
    const auto ph = static_cast<size_t>(op.phase);
    ++s.ops_per_phase[ph];
    switch (op.kind) {
      case OpKind::forward:
      case OpKind::backward:
      case OpKind::recompute:
      case OpKind::adam_cpu:
      case OpKind::adam_gpu: ++s.compute_ops_per_phase[ph]; break;
      case OpKind::allgather:
      case OpKind::reduce_scatter:
      case OpKind::allreduce: ++s.collectives; break;
      default: break;
    }
    s.gemm_flops += op.gemm_flops;
    s.mem_bound_bytes += op.mem_bound_bytes;
  }
  return s;
}

namespace {

nlohmann::ordered_json layout_to_json(const Layout& l) {
  using nlohmann::ordered_json;
  ordered_json params = ordered_json::array();
  for (const auto& p : l.params)
    params.push_back({{"name", p.name},
                      {"layer", p.layer},
                      {"numel", p.numel},
                      {"flat_offset", p.flat_offset},
                      {"part", p.part},
                      {"persistent", p.persistent},
                      {"lp_home", to_string(p.lp_home)},
                      {"group", p.group},
                      {"trainable", p.trainable}});
  ordered_json groups = ordered_json::array();
  for (const auto& g : l.groups)
    groups.push_back({{"first", g.first},
                      {"last", g.last},
                      {"elements", g.elements},
                      {"tier", to_string(g.tier)},
                      {"layer", g.layer}});
  return {{"stage", l.stage},       {"world", l.world},   {"flat_partition", l.flat_partition},
          {"partition_elements", l.partition_elements}, {"frozen_elements", l.frozen_elements},
          {"lp_cpu_flat_elements", l.lp_cpu_flat_elements}, {"lp_reuse_buffer_elements", l.lp_reuse_buffer_elements},
          {"sub_groups", l.sub_groups}, {"params", params}, {"groups", groups}};
}

}  // namespace

std::string plan_to_json(const Plan& p, bool with_ledger) {
  using nlohmann::ordered_json;
  ordered_json j;
  j["model"] = p.model;
  j["hardware"] = p.hardware;
  j["ds_config"] = p.ds_config;
  j["schedule"] = to_string(p.schedule);
  j["ranks"] = p.ranks;
  j["ranks_per_node"] = p.ranks_per_node;
  j["represented_ranks"] = p.represented_ranks;
  j["feasible"] = p.feasible;
  j["infeasible_reason"] = p.infeasible_reason;
  j["overflow_op"] = p.overflow_op;
  j["tokens_per_step"] = p.tokens_per_step;
  j["model_flops_per_step"] = p.model_flops_per_step;
  auto tiers = [](const std::array<int64_t, 3>& a) {
    return ordered_json{{"gpu", a[0]}, {"cpu", a[1]}, {"nvme", a[2]}};
  };
  j["peak_bytes"] = tiers(p.peak_bytes);
  j["peak_op"] = tiers(p.peak_op);
  j["static_bytes"] = tiers(p.static_bytes);
  j["overhead_bytes"] = tiers(p.overhead_bytes);
  j["init_bytes"] = tiers(p.init_bytes);
  j["capacity_bytes"] = tiers(p.capacity_bytes);
  j["per_step_bytes"] = {{"h2d", p.per_step.h2d},
                         {"d2h", p.per_step.d2h},
                         {"nvme_read", p.per_step.nvme_read},
                         {"nvme_write", p.per_step.nvme_write},
                         {"network", p.per_step.network}};
  j["notes"] = p.notes;
  ordered_json ts = ordered_json::array();
  for (const auto& t : p.tensors)
    ts.push_back({{"name", t.name},
                  {"kind", to_string(t.kind)},
                  {"layer", t.layer},
                  {"numel", t.numel},
                  {"bytes", t.bytes},
                  {"home", to_string(t.home)},
                  {"pinned", t.pinned},
                  {"persistent", t.persistent}});
  j["tensors"] = std::move(ts);
  j["layout"] = layout_to_json(p.layout);
  ordered_json ops = ordered_json::array();
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const Op& op = p.ops[i];
    ordered_json o;
    o["id"] = op.id;
    o["rank"] = op.rank;
    o["stream"] = to_string(op.stream);
    o["kind"] = to_string(op.kind);
    o["layer"] = op.layer;
    o["phase"] = to_string(op.phase);
    o["micro_step"] = op.micro_step;
    o["tensor"] = op.tensor;
    o["tensor_count"] = op.tensor_count;
    o["bytes"] = op.bytes;
    o["flops"] = op.gemm_flops;  // GEMM FLOPs; the memory-bound part is in bytes below
    if (op.attention_flops > 0) o["attention_flops"] = op.attention_flops;
    o["mem_bound_bytes"] = op.mem_bound_bytes;
    if (op.role != ModuleRole::none) o["role"] = to_string(op.role);
    o["elements"] = op.elements;
    if (op.pageable_host) o["pageable_host"] = true;
    o["group_ranks"] = op.group_ranks;
    o["deps"] = op.deps;
    o["mem_delta"] = tiers(op.mem_delta);
    if (with_ledger && i < p.ledger.size()) o["ledger"] = tiers(p.ledger[i]);
    ops.push_back(std::move(o));
  }
  j["ops"] = std::move(ops);
  return j.dump();
}

}  // namespace zs::core
