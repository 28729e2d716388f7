// The CUDA runtime's, cuBLAS's and cuDNN's error codes as Status: kUnavailable for a missing or
// unusable device (no device, no driver, out of memory), kInternal for anything else, the message
// naming what was called, on which layer or object, and the library's own name for the code.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <string>

#include "common/status.h"

namespace poseidon::trainer::reference {

Status cudaCheck(cudaError_t error, const std::string& what);
Status cublasCheck(cublasStatus_t status, const std::string& what);
Status cudnnCheck(cudnnStatus_t status, const std::string& what);

}  // namespace poseidon::trainer::reference
