#include "trainer/reference/cuda/gpu_context.h"

#include "trainer/reference/cuda/cuda_status.h"

namespace poseidon::trainer::reference {

namespace {

// Owns what create() has made so far, so a failure part-way frees it.
struct Pieces {
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  cudnnHandle_t cudnn = nullptr;

  ~Pieces() {
    if (cudnn != nullptr) static_cast<void>(cudnnDestroy(cudnn));
    if (cublas != nullptr) static_cast<void>(cublasDestroy(cublas));
    if (stream != nullptr) static_cast<void>(cudaStreamDestroy(stream));
  }
};

}  // namespace

Result<std::unique_ptr<GpuContext>> GpuContext::create() {
  int devices = 0;
  POSEIDON_RETURN_IF_ERROR(cudaCheck(cudaGetDeviceCount(&devices), "GpuContext: cudaGetDeviceCount"));
  if (devices == 0) return makeStatus(StatusCode::kUnavailable, "GpuContext: no CUDA device (0 devices)");
  Pieces p;
  // Non-blocking: the legacy default stream, which other code in the process may use, does not
  // serialise with this one.
  POSEIDON_RETURN_IF_ERROR(
      cudaCheck(cudaStreamCreateWithFlags(&p.stream, cudaStreamNonBlocking), "GpuContext: cudaStreamCreate"));
  POSEIDON_RETURN_IF_ERROR(cublasCheck(cublasCreate(&p.cublas), "GpuContext: cublasCreate"));
  POSEIDON_RETURN_IF_ERROR(cublasCheck(cublasSetStream(p.cublas, p.stream), "GpuContext: cublasSetStream"));
  // Full fp32 products: no TF32 tensor-core shortcut, whose 10-bit mantissa would break the
  // comparison with the CPU layers.
  POSEIDON_RETURN_IF_ERROR(
      cublasCheck(cublasSetMathMode(p.cublas, CUBLAS_DEFAULT_MATH), "GpuContext: cublasSetMathMode"));
  POSEIDON_RETURN_IF_ERROR(cudnnCheck(cudnnCreate(&p.cudnn), "GpuContext: cudnnCreate"));
  POSEIDON_RETURN_IF_ERROR(cudnnCheck(cudnnSetStream(p.cudnn, p.stream), "GpuContext: cudnnSetStream"));
  std::unique_ptr<GpuContext> context(new GpuContext(p.stream, p.cublas, p.cudnn));
  p.stream = nullptr;  // the context owns them now
  p.cublas = nullptr;
  p.cudnn = nullptr;
  return context;
}

GpuContext::~GpuContext() {
  static_cast<void>(cudaStreamSynchronize(stream_));
  static_cast<void>(cudnnDestroy(cudnn_));
  static_cast<void>(cublasDestroy(cublas_));
  static_cast<void>(cudaStreamDestroy(stream_));
}

Status GpuContext::synchronize() const {
  POSEIDON_RETURN_IF_ERROR(cudaCheck(cudaStreamSynchronize(stream_), "GpuContext: cudaStreamSynchronize"));
  return cudaCheck(cudaGetLastError(), "GpuContext: a kernel on the stream");
}

}  // namespace poseidon::trainer::reference
