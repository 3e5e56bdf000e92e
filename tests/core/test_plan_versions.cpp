// DeepSpeed releases that schedule the same ds_config differently (RunSettings::deepspeed_version). PR #8207 (commit
// 7dfa67ae, first in v0.19.5) made offload_config.py's pin_memory default True in both offload blocks and the ZeRO-3
// boundary copy of the fp32 gradients non-blocking (stage3.py partition_grads).
#include "tests/core/test_plan_helpers.h"

using namespace plan_test;

namespace {

Strategy at_version(const std::string& json, const ModelSpec& m, const DeepSpeedVersion& v) {
  RunSettings run;
  run.gpus_per_node = 4;
  run.seq_len = 1024;
  run.hidden = m.hidden;
  run.deepspeed_version = v;
  auto s = parse_ds_config_text(json, "inline.json", run);
  if (!s.ok()) FAIL(s.error().message);
  return *s;
}

}  // namespace

TEST_CASE("deepspeed versions parse as MAJOR.MINOR.PATCH", "[plan][version]") {
  REQUIRE(parse_deepspeed_version("0.13.3"));
  CHECK(*parse_deepspeed_version("0.13.3") < kPinnedOffloadSince);
  CHECK_FALSE(*parse_deepspeed_version("0.19.6") < kPinnedOffloadSince);
  CHECK_FALSE(parse_deepspeed_version("0.13"));
  CHECK_FALSE(parse_deepspeed_version("0.13.3rc1"));
  CHECK_FALSE(parse_deepspeed_version("latest"));
  CHECK(to_string(DeepSpeedVersion{}) == "0.19.6");
}

TEST_CASE("before v0.19.5 the offload blocks default to pageable host memory", "[plan][version]") {
  const ModelSpec m = model("gpt2-1.5b");
  const std::string cfg = R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3,
      "offload_optimizer": {"device": "cpu"}, "offload_param": {"device": "cpu"}}})";
  const Strategy old = at_version(cfg, m, {0, 13, 3});
  CHECK_FALSE(old.zero.offload_optimizer.pin_memory);
  CHECK_FALSE(old.zero.offload_param.pin_memory);
  const Strategy now = at_version(cfg, m, {});
  CHECK(now.zero.offload_optimizer.pin_memory);
  CHECK(now.zero.offload_param.pin_memory);
  // A key in the file wins over either default.
  const Strategy pinned = at_version(R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3,
      "offload_optimizer": {"device": "cpu", "pin_memory": true}}})", m, {0, 13, 3});
  CHECK(pinned.zero.offload_optimizer.pin_memory);
}

// stage3.py partition_grads before PR #8207: fp32_grad_tensor.copy_(grad_buffer), a blocking copy from the GPU's
// 16-bit buffer into the CPU fp32 one. PyTorch (aten/src/ATen/native/cuda/Copy.cu, copy_kernel_cuda) converts the
// dtype on the CPU when non_blocking is false: the 16-bit bytes go into a pageable temporary, the host casts.
TEST_CASE("before v0.19.5 ZeRO-3 copies the boundary fp32 gradients blocking, through a pageable host cast",
          "[plan][version]") {
  const ModelSpec m = model("gpt2-1.5b");
  const Hardware hw = hardware("dgx-a100-80gb");
  const std::string cfg = R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
      "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "pin_memory": true}}})";
  auto count = [](const Plan& p, OpKind k, Stream s, Phase ph) {
    int64_t n = 0, bytes = 0;
    for (const auto& op : p.ops)
      if (op.kind == k && op.stream == s && op.phase == ph) n += 1, bytes += op.bytes;
    return std::pair{n, bytes};
  };
  const Plan now = make_plan(m, hw, at_version(cfg, m, {}));
  const Plan old = make_plan(m, hw, at_version(cfg, m, {0, 13, 3}));
  const auto [old_blocking, old_bytes] = count(old, OpKind::d2h, Stream::compute, Phase::backward);
  const auto [old_casts, cast_bytes] = count(old, OpKind::cast_cpu, Stream::compute, Phase::backward);
  CHECK(count(now, OpKind::d2h, Stream::compute, Phase::backward).first == 0);
  REQUIRE(old_blocking > 0);
  CHECK(old_casts == old_blocking);
  // The fp32 bytes of the non-blocking copy (4 B/param) against the 16-bit bytes of the blocking one (2 B/param),
  // and the cast reads 2 and writes 4 bytes per parameter.
  int64_t fp32_now = 0;
  for (const auto& op : now.ops)
    if (op.kind == OpKind::d2h && op.tensor >= 0 && now.tensors[static_cast<size_t>(op.tensor)].kind == TensorKind::fp32_grad)
      fp32_now += op.bytes;
  CHECK(old_bytes * 2 == fp32_now);
  CHECK(cast_bytes == 3 * old_bytes);
  for (const auto& op : old.ops)
    if (op.kind == OpKind::d2h && op.stream == Stream::compute) CHECK(op.pageable_host);
}
