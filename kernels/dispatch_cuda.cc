#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <type_traits>

#include "kernels/cuda/chunk_update_cuda.h"
#include "kernels/cuda/pack_cuda.h"
#include "kernels/cuda/sf_update_cuda.h"
#include "kernels/dispatch.h"
#include "kernels/dispatch_cuda.h"

namespace poseidon::kernels {

static_assert(std::is_same_v<CudaStream, cudaStream_t>, "dispatch.h's stream type must be the runtime's");

bool kernelsHaveCuda() { return true; }

namespace dispatch_detail {
namespace {

std::string message(cudaError_t err) {
  if (err == cudaSuccess) return {};
  return fmt::format("CUDA error {} ({}): {}", static_cast<int>(err), cudaGetErrorName(err), cudaGetErrorString(err));
}

}  // namespace

std::string chunkUpdateOnCuda(const ChunkUpdate& update, CudaStream stream) {
  if (update.gradients.size() > kMaxCudaGradients) {
    return fmt::format("{} gradients exceed the CUDA kernel's {} per launch (pre-sum groups in rank order)",
                       update.gradients.size(), kMaxCudaGradients);
  }
  return message(chunkUpdateCuda(update, stream));
}

std::string sfUpdateOnCuda(const SfUpdate& update, CudaStream stream) {
  if (update.u.size() > kMaxCudaFactors) {
    return fmt::format("{} peers' factors exceed the CUDA kernel's {} per launch (use the CPU twin)", update.u.size(),
                       kMaxCudaFactors);
  }
  return message(sfUpdateCuda(update, stream));
}

std::string packOnCuda(const PackJob& job, CudaStream stream) { return message(packCuda(job, stream)); }
std::string unpackOnCuda(const PackJob& job, CudaStream stream) { return message(unpackCuda(job, stream)); }

}  // namespace dispatch_detail
}  // namespace poseidon::kernels
