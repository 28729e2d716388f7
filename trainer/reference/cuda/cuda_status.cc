#include "trainer/reference/cuda/cuda_status.h"

namespace poseidon::trainer::reference {

Status cudaCheck(cudaError_t error, const std::string& what) {
  if (error == cudaSuccess) return Status::ok();
  const bool unavailable = error == cudaErrorNoDevice || error == cudaErrorInsufficientDriver ||
                           error == cudaErrorMemoryAllocation || error == cudaErrorDevicesUnavailable;
  return makeStatus(unavailable ? StatusCode::kUnavailable : StatusCode::kInternal, "{}: {} ({})", what,
                    cudaGetErrorName(error), cudaGetErrorString(error));
}

Status cublasCheck(cublasStatus_t status, const std::string& what) {
  if (status == CUBLAS_STATUS_SUCCESS) return Status::ok();
  const bool unavailable = status == CUBLAS_STATUS_NOT_INITIALIZED || status == CUBLAS_STATUS_ALLOC_FAILED;
  return makeStatus(unavailable ? StatusCode::kUnavailable : StatusCode::kInternal, "{}: cuBLAS {} ({})", what,
                    cublasGetStatusName(status), cublasGetStatusString(status));
}

Status cudnnCheck(cudnnStatus_t status, const std::string& what) {
  if (status == CUDNN_STATUS_SUCCESS) return Status::ok();
  const bool unavailable =
      status == CUDNN_STATUS_NOT_INITIALIZED || status == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
  return makeStatus(unavailable ? StatusCode::kUnavailable : StatusCode::kInternal, "{}: cuDNN error {} ({})", what,
                    static_cast<int>(status), cudnnGetErrorString(status));
}

}  // namespace poseidon::trainer::reference
