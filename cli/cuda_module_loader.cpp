// load_cuda_module (cuda_module.h): dlopen of zerosim-cuda.so, once per process.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>

#include "cli/cuda_module.h"

namespace zs::cli {

const CudaModule* load_cuda_module(std::string* why) {
#if !defined(ZEROSIM_HAVE_CUDA_MODULE)
  if (why) *why = "this build has no CUDA (configure with nvcc on the PATH or at /usr/local/cuda)";
  return nullptr;
#else
  static std::once_flag once;
  static const CudaModule* mod = nullptr;
  static std::string error;
  std::call_once(once, [] {
    std::string path;
    if (const char* p = std::getenv("ZEROSIM_CUDA_MODULE"); p && *p) {
      path = p;
    } else {
      char buf[4096];
      const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
      const std::string exe = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
      path = exe.substr(0, exe.rfind('/') + 1) + "zerosim-cuda.so";
    }
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      error = "cannot load the CUDA module " + path + ": " + dlerror();
      return;
    }
    auto entry = reinterpret_cast<CudaModuleEntry>(dlsym(h, "zs_cuda_module"));
    if (!entry) {
      error = path + " has no zs_cuda_module: " + dlerror();
      return;
    }
    mod = entry();
  });
  if (!mod && why) *why = error;
  return mod;
#endif
}

}  // namespace zs::cli
