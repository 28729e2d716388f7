// CUDA twin of the fused chunk update (kernels/chunk_update.h); built only where nvcc is found
// (POSEIDON_HAVE_CUDA), in the poseidon::kernels_cuda library.
#pragma once

#include <cuda_runtime_api.h>

#include "kernels/chunk_update.h"

namespace poseidon::kernels {

// The gradient pointers travel to the kernel by value, in its parameter block, so an update
// costs one launch and no copy; the block has room for this many. A server with more workers
// pre-sums groups of them (in rank order) first.
inline constexpr size_t kMaxCudaGradients = 16;

// Enqueues the update on `stream`; every pointer in `update` is device memory (or managed). The
// sum order and the element functions are the CPU twin's, so the result has the same bits.
// Returns cudaErrorInvalidValue for what chunkUpdateCpu() rejects and for more than
// kMaxCudaGradients gradients, before touching the device; else the launch's error. A count of 0
// is a no-op.
cudaError_t chunkUpdateCuda(const ChunkUpdate& update, cudaStream_t stream);

}  // namespace poseidon::kernels
