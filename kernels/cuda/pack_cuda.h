// CUDA twins of pack / unpack (kernels/pack.h); built only where nvcc is found, in
// poseidon::kernels_cuda.
#pragma once

#include <cuda_runtime_api.h>

#include "kernels/pack.h"

namespace poseidon::kernels {

// Enqueue on `stream`. job.pieces, job.packed and every piece's tensor are device memory (the
// piece table is built and copied once per layer group). The element functions are the CPU
// twin's, so the bits are the same. Returns cudaErrorInvalidValue for what packProblem() rejects
// without reading the table; else the launch's error. packed_count 0 is a no-op.
cudaError_t packCuda(const PackJob& job, cudaStream_t stream);
cudaError_t unpackCuda(const PackJob& job, cudaStream_t stream);

}  // namespace poseidon::kernels
