#include "kernels/dispatch.h"
#include "kernels/dispatch_cuda.h"

namespace poseidon::kernels {

bool kernelsHaveCuda() { return false; }

namespace dispatch_detail {
namespace {
std::string noCuda() { return "this build has no CUDA (nvcc was not found, or POSEIDON_WITH_CUDA=OFF)"; }
}  // namespace

std::string chunkUpdateOnCuda(const ChunkUpdate&, CudaStream) { return noCuda(); }
std::string sfUpdateOnCuda(const SfUpdate&, CudaStream) { return noCuda(); }
std::string packOnCuda(const PackJob&, CudaStream) { return noCuda(); }
std::string unpackOnCuda(const PackJob&, CudaStream) { return noCuda(); }

}  // namespace dispatch_detail
}  // namespace poseidon::kernels
