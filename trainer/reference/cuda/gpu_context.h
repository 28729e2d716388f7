// GpuContext: what every GPU twin of a reference layer computes with: one CUDA stream on the
// current device, a cuBLAS handle and a cuDNN handle bound to it, and the DeviceMemory ordered on
// it. Layers built on one context enqueue all their work on its stream, in call order, so a
// network's forward and backward need no synchronisation inside; the host waits only where it
// reads a result (the loss, a download) or calls synchronize().
//
// Numerics: cuBLAS keeps its default math (full fp32, no TF32 tensor cores) and cuDNN's
// convolutions are set to FMA math (no TF32) with fixed deterministic algorithms
// (conv2d_cuda.h), so a twin's results differ from the CPU's only by the order of float sums.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <memory>

#include "common/status.h"
#include "trainer/reference/cuda/device_memory_cuda.h"

namespace poseidon::trainer::reference {

class GpuContext {
 public:
  // On the current device. Fails with kUnavailable, naming the call, when there is no device or
  // driver, or a library cannot start on it.
  static Result<std::unique_ptr<GpuContext>> create();
  ~GpuContext();
  GpuContext(const GpuContext&) = delete;
  GpuContext& operator=(const GpuContext&) = delete;

  cudaStream_t stream() const { return stream_; }
  cublasHandle_t cublas() const { return cublas_; }
  cudnnHandle_t cudnn() const { return cudnn_; }
  // Where the twins built on this context keep their floats; outlives them only as long as the
  // context does.
  const FloatMemory& memory() const { return memory_; }

  // Waits for everything enqueued so far; reports an error a kernel raised since the last check.
  Status synchronize() const;

 private:
  GpuContext(cudaStream_t stream, cublasHandle_t cublas, cudnnHandle_t cudnn)
      : stream_(stream), cublas_(cublas), cudnn_(cudnn), memory_(stream) {}

  cudaStream_t stream_;
  cublasHandle_t cublas_;
  cudnnHandle_t cudnn_;
  DeviceMemory memory_;
};

}  // namespace poseidon::trainer::reference
