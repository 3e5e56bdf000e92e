// The CUDA module (cuda_module.h): its one entry point, a table of the zs_exec_cuda and zs_probe_cuda functions the
// CLI uses.
#include "cli/cuda_module.h"

namespace {

zs::core::Result<std::unique_ptr<zs::exec::Communicator>> make_nccl(
    const zs::exec::NcclOptions& o,
    const std::function<zs::core::Status(zs::exec::NcclUniqueIdBytes& id)>& broadcast_id) {
  return zs::exec::make_nccl_communicator(o, broadcast_id);
}

const zs::cli::CudaModule kModule = {&zs::exec::cuda_available, &zs::exec::make_cuda_device, &make_nccl,
                                     &zs::probe::probe_gpu};

}  // namespace

extern "C" const zs::cli::CudaModule* zs_cuda_module() { return &kModule; }
