#include "probe/report.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "exec/checksum.h"
#include "exec/cpu_adam.h"
#include "exec/io_env.h"
#include "exec/pinned_buffer.h"
#include "exec/thread_pool.h"
#include "probe/membw.h"

// Set by probe/CMakeLists.txt on this file; empty = not built.
#ifndef ZS_BUILD_CUDA
#define ZS_BUILD_CUDA ""
#endif
#ifndef ZS_BUILD_NCCL
#define ZS_BUILD_NCCL ""
#endif
#ifndef ZS_BUILD_MPI
#define ZS_BUILD_MPI ""
#endif
#ifndef ZS_BUILD_SIMGRID
#define ZS_BUILD_SIMGRID ""
#endif
#ifndef ZS_BUILD_QT
#define ZS_BUILD_QT ""
#endif
#ifndef ZS_BUILD_AIO
#define ZS_BUILD_AIO ""
#endif
#ifndef ZS_BUILD_COMPILER
#define ZS_BUILD_COMPILER "unknown"
#endif
#ifndef ZS_BUILD_TYPE
#define ZS_BUILD_TYPE ""
#endif

namespace zs::probe {
namespace {

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      auto pos = line.find(':');
      if (pos != std::string::npos) return line.substr(pos + 2);
    }
  return "unknown";
}

std::string read_first_line(const char* path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return s;
}

std::string gib(double bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  return b;
}

void built(std::vector<ReportItem>& out, const char* name, const char* value) {
  const std::string v = value;
  out.push_back({"build", name, v.empty() ? "not built" : "built (" + v + ")", !v.empty()});
}

}  // namespace

std::vector<ReportItem> build_report(const std::vector<std::string>& nvme_paths) {
  std::vector<ReportItem> out;
  // ---- cpu ----
  out.push_back({"cpu", "model", cpu_model()});
  out.push_back({"cpu", "cpus available", std::to_string(exec::available_cpus())});
#if defined(__x86_64__)
  std::string flags;
  auto flag = [&](const char* name, bool have) {
    if (have) flags += (flags.empty() ? "" : " ") + std::string(name);
  };
  flag("sse4.2", __builtin_cpu_supports("sse4.2"));
  flag("avx", __builtin_cpu_supports("avx"));
  flag("avx2", __builtin_cpu_supports("avx2"));
  flag("fma", __builtin_cpu_supports("fma"));
  flag("f16c", __builtin_cpu_supports("f16c"));
  flag("avx512f", __builtin_cpu_supports("avx512f"));
  flag("avx512bw", __builtin_cpu_supports("avx512bw"));
  flag("avx512vl", __builtin_cpu_supports("avx512vl"));
  flag("avx512_bf16", __builtin_cpu_supports("avx512bf16"));
  flag("avx512_fp16", __builtin_cpu_supports("avx512fp16"));
  out.push_back({"cpu", "SIMD flags", flags.empty() ? "none" : flags});
#else
  out.push_back({"cpu", "SIMD flags", "not x86-64: scalar kernels only", false});
#endif
  std::string kernels;
  for (exec::AdamKernel k : {exec::AdamKernel::avx512, exec::AdamKernel::avx2, exec::AdamKernel::scalar})
    kernels +=
        std::string(kernels.empty() ? "" : ", ") + to_string(k) + (exec::adam_kernel_supported(k) ? " yes" : " no");
  out.push_back({"cpu", "CPU Adam kernel", std::string(to_string(exec::best_adam_kernel())) + " (" + kernels + ")"});
  out.push_back({"cpu", "crc32c", exec::crc32c_implementation()});

  // ---- memory ----
  out.push_back({"memory", "physical", gib(static_cast<double>(physical_memory_bytes()))});
  const int64_t lim = exec::memlock_limit_bytes();
  out.push_back({"memory", "RLIMIT_MEMLOCK", lim < 0 ? "unlimited" : std::to_string(lim >> 10) + " KiB"});
  {
    auto b = exec::PinnedBuffer::allocate(64 << 20, true);
    const bool ok = b && b->locked();
    out.push_back({"memory", "mlock 64 MiB",
                   ok ? "ok (page-locked swap buffers)" : (b ? b->lock_error() : b.error().message), ok});
  }

  // ---- nvme / aio ----
  const std::string aio = ZS_BUILD_AIO;
  out.push_back({"nvme", "libaio",
                 !exec::built_with_libaio() ? "not built (synchronous pread/pwrite fallback)"
                                            : "built (" + (aio.empty() ? std::string("libaio") : aio) + ")",
                 exec::built_with_libaio()});
  const std::string max_nr = read_first_line("/proc/sys/fs/aio-max-nr"), nr = read_first_line("/proc/sys/fs/aio-nr");
  if (!max_nr.empty()) out.push_back({"nvme", "aio contexts", nr + " in use of aio-max-nr " + max_nr});
  for (const auto& p : nvme_paths) {
    auto r = exec::default_io_env()->probe_dir(p);
    if (!r) {
      out.push_back({"nvme", p, "not usable: " + r.error().message, false});
      continue;
    }
    const std::string fs = exec::filesystem_type(p);
    std::string v = fs + ", " + gib(static_cast<double>(exec::filesystem_bytes(p))) + ", O_DIRECT " +
                    (r->direct ? "supported (memory aligned to " + std::to_string(r->memory_alignment) + " bytes)"
                               : std::string("NOT supported (buffered fallback)"));
    if (fs == "tmpfs") v += "; tmpfs is RAM, not a drive";
    out.push_back({"nvme", p, v, r->direct && fs != "tmpfs"});
  }

  // ---- build and GPU stack ----
  out.push_back({"build", "compiler",
                 std::string(ZS_BUILD_COMPILER) + (std::string(ZS_BUILD_TYPE).empty() ? "" : ", " ZS_BUILD_TYPE)});
  built(out, "CUDA", ZS_BUILD_CUDA);
  {
    void* h = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    out.push_back({"build", "CUDA driver", h ? "libcuda.so.1 present" : "not found (no GPU driver): GPU parts skipped",
                   h != nullptr});
    if (h) ::dlclose(h);
  }
  built(out, "NCCL", ZS_BUILD_NCCL);
  built(out, "MPI", ZS_BUILD_MPI);
  built(out, "SimGrid", ZS_BUILD_SIMGRID);
  built(out, "Qt", ZS_BUILD_QT);
  return out;
}

}  // namespace zs::probe
