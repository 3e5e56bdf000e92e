// The streams a rank's ops run on, in order (one queue each): the Plan's ops name one, the hardware profile's
// measured stream wake-ups name pairs of them, traces record them.
#pragma once

#include <cstdint>
#include <string>

namespace zs::core {

enum class Stream : uint8_t { compute, h2d, d2h, nvme_read, nvme_write, comm, cpu_adam };
inline constexpr int kStreams = 7;

std::string to_string(Stream s);

}  // namespace zs::core
