// The launch shape of the twins' element-wise kernels: 256 threads a block, a grid-stride loop
// over n elements, at most 4096 blocks (plenty for any current GPU's SMs).
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>

namespace poseidon::trainer::reference {

inline constexpr unsigned kThreadsPerBlock = 256;

inline unsigned blocksFor(size_t n) {
  const size_t blocks = (n + kThreadsPerBlock - 1) / kThreadsPerBlock;
  return static_cast<unsigned>(std::clamp<size_t>(blocks, 1, 4096));
}

}  // namespace poseidon::trainer::reference

// for (i = this thread's first; i < n; i += all threads)
#define POSEIDON_GRID_STRIDE_LOOP(i, n)                                                \
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
