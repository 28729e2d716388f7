// Inside the dispatch layer: the CUDA side of each call, as an error message (empty: enqueued).
// kernels/dispatch_cuda.cc where the build has CUDA, kernels/dispatch_no_cuda.cc where not; the
// arguments have been checked by then.
#pragma once

#include <string>

#include "kernels/dispatch.h"

namespace poseidon::kernels::dispatch_detail {

std::string chunkUpdateOnCuda(const ChunkUpdate& update, CudaStream stream);
std::string sfUpdateOnCuda(const SfUpdate& update, CudaStream stream);
std::string packOnCuda(const PackJob& job, CudaStream stream);
std::string unpackOnCuda(const PackJob& job, CudaStream stream);

}  // namespace poseidon::kernels::dispatch_detail
