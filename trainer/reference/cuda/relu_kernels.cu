#include "trainer/reference/cuda/launch_shape.cuh"
#include "trainer/reference/cuda/layer_kernels.h"

namespace poseidon::trainer::reference {

namespace {

__global__ void reluForward(const float* x, float* y, size_t n) {
  POSEIDON_GRID_STRIDE_LOOP(i, n) { y[i] = x[i] > 0.0f ? x[i] : 0.0f; }
}

__global__ void reluBackward(const float* y, const float* dy, float* dx, size_t n) {
  POSEIDON_GRID_STRIDE_LOOP(i, n) { dx[i] = y[i] > 0.0f ? dy[i] : 0.0f; }
}

}  // namespace

cudaError_t reluForwardCuda(const float* x, float* y, size_t n, cudaStream_t stream) {
  reluForward<<<blocksFor(n), kThreadsPerBlock, 0, stream>>>(x, y, n);
  return cudaGetLastError();
}

cudaError_t reluBackwardCuda(const float* y, const float* dy, float* dx, size_t n, cudaStream_t stream) {
  reluBackward<<<blocksFor(n), kThreadsPerBlock, 0, stream>>>(y, dy, dx, n);
  return cudaGetLastError();
}

}  // namespace poseidon::trainer::reference
