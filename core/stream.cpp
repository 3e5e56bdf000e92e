#include "core/stream.h"

namespace zs::core {

std::string to_string(Stream s) {
  switch (s) {
    case Stream::compute: return "compute";
    case Stream::h2d: return "h2d";
    case Stream::d2h: return "d2h";
    case Stream::nvme_read: return "nvme_read";
    case Stream::nvme_write: return "nvme_write";
    case Stream::comm: return "comm";
    case Stream::cpu_adam: return "cpu_adam";
  }
  return "?";
}

}  // namespace zs::core
