// The dispatch layer: one call per kernel that names where its buffers live and runs the CPU
// twin or the CUDA kernel accordingly, inside an NVTX range (visible in Nsight Systems for both).
//
// The trainer and the SFB peers call these; the parameter server, which never touches a GPU,
// calls the CPU twins directly. This header needs no CUDA headers: a stream is passed as the
// runtime's own handle type (cudaStream_t is `CUstream_st*`), and the CUDA path exists only when
// the build found nvcc (kernelsHaveCuda()).
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "kernels/chunk_update.h"
#include "kernels/pack.h"
#include "kernels/sf_update.h"

struct CUstream_st;  // the CUDA runtime's stream; cudaStream_t is a pointer to it

namespace poseidon::kernels {

enum class Device : uint8_t { kCpu = 1, kCuda = 2 };

using CudaStream = CUstream_st*;

// Where a kernel runs: on the host, or enqueued on a CUDA stream (null: the legacy default
// stream). All of a call's buffers are on that device; the CUDA calls return once enqueued.
struct Place {
  Device device = Device::kCpu;
  CudaStream stream = nullptr;

  static Place cpu() { return {}; }
  static Place cuda(CudaStream s) { return {Device::kCuda, s}; }
};

// What a dispatched call returns: OK, or kInvalidArgument / kUnavailable / kInternal saying why not ("sfUpdate on cuda:
// v has 3 factors but u has 4"; "chunkUpdate on cuda: this build has no CUDA (nvcc was not found)"). Never throws for
// bad arguments: the message says which.

bool kernelsHaveCuda();

Status chunkUpdate(const ChunkUpdate& update, Place place);
Status sfUpdate(const SfUpdate& update, Place place);  // the method and isa apply to the CPU
Status pack(const PackJob& job, Place place);
Status unpack(const PackJob& job, Place place);

}  // namespace poseidon::kernels
