// CUDA twin of the fused SF reconstruction + update (kernels/sf_update.h); built only where
// nvcc is found, in poseidon::kernels_cuda.
#pragma once

#include <cuda_runtime_api.h>

#include "kernels/sf_update.h"

namespace poseidon::kernels {

// The factor pointers travel in the kernel's parameter block (no copy, one launch), which has
// room for this many peers; a job with more runs the SF update on the CPU twin (no limit there).
inline constexpr size_t kMaxCudaFactors = 128;

// Enqueues the update on `stream`; params, state and every factor are device memory, the spans
// themselves are host memory. Same summation order (__fmaf_rn, p then k ascending from +0) and
// element functions as the CPU twin's exact method, so the same bits. `method` and `isa` are
// CPU options and ignored. Returns cudaErrorInvalidValue for what sfUpdateProblem() rejects and
// for more than kMaxCudaFactors peers, before touching the device; else the launch's error.
cudaError_t sfUpdateCuda(const SfUpdate& update, cudaStream_t stream);

}  // namespace poseidon::kernels
