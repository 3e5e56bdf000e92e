// The host device: a GPU stand-in on the CPU with its own memory capacity (the hardware profile's GPU memory), so
// a plan that overflows fails exactly as it would on a real GPU; one worker thread per stream runs the enqueued
// work in order; H2D/D2H are memcpys from page-locked host buffers. Used by `zerosim train --device host`, the
// tests, and CI (no GPU there).
//   auto dev = make_host_device({.memory_bytes = hw.gpu.memory_bytes()});
#pragma once

#include <memory>

#include "exec/device.h"

namespace zs::exec {

struct HostDeviceOptions {
  int64_t memory_bytes = 8LL << 30;  // the stand-in's "HBM"
  bool lock_pinned = true;           // mlock allocate_host(pinned) memory
};

std::unique_ptr<Device> make_host_device(const HostDeviceOptions& o);

}  // namespace zs::exec
