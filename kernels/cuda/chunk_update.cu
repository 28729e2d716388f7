// CUDA twin of the fused chunk update: one thread per element (grid-stride), the same sum order
// and element functions as the CPU twin.
#include <algorithm>

#include "kernels/chunk_update_check.h"
#include "kernels/cuda/chunk_update_cuda.h"
#include "kernels/optimizer_element.h"

namespace poseidon::kernels {
namespace {

struct GradientPointers {
  const float* p[kMaxCudaGradients];
};

constexpr int kThreads = 256;
// Enough blocks to fill any current GPU several times over; the grid-stride loop does the rest.
constexpr size_t kMaxBlocks = 4096;

template <ElementRule R>
__global__ void chunkUpdateKernel(float* __restrict__ w, float* __restrict__ state0, float* __restrict__ state1,
                                  size_t count, GradientPointers gradients, int n, OptimizerStep step) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    float g = gradients.p[0][i];
    for (int k = 1; k < n; ++k) g += gradients.p[k][i];
    updateElementAt<R>(g, i, w, state0, state1, step);
  }
}

template <ElementRule R>
cudaError_t launch(const ChunkUpdate& u, const GradientPointers& g, cudaStream_t stream) {
  const size_t blocks = std::min(kMaxBlocks, (u.count + kThreads - 1) / kThreads);
  chunkUpdateKernel<R><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      u.params, u.state0, u.state1, u.count, g, static_cast<int>(u.gradients.size()), u.step);
  return cudaGetLastError();
}

}  // namespace

cudaError_t chunkUpdateCuda(const ChunkUpdate& update, cudaStream_t stream) {
  if (!chunkUpdateProblem(update).empty() || update.gradients.size() > kMaxCudaGradients) {
    return cudaErrorInvalidValue;
  }
  if (update.count == 0) return cudaSuccess;
  GradientPointers g{};
  for (size_t k = 0; k < update.gradients.size(); ++k) g.p[k] = update.gradients[k];
  return withElementRule(elementRule(update.step),
                         [&](auto rule) { return launch<decltype(rule)::value>(update, g, stream); });
}

}  // namespace poseidon::kernels
