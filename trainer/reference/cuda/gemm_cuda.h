// The one place the GPU twins call cublasSgemm: the row-major product of blas.h's gemm, on a
// cuBLAS handle (and so on its stream).
//
// cuBLAS is column-major, and a row-major matrix with row stride s is, read column-major, its
// transpose with leading dimension s. So row-major C = op(A) op(B) is column-major
// C^T = op(B)^T op(A)^T: the same call with the operands swapped and m, n exchanged, each
// operand's transpose flag unchanged.
#pragma once

#include <cublas_v2.h>

#include <cstddef>

#include "common/status.h"
#include "trainer/reference/blas.h"

namespace poseidon::trainer::reference {

// c (m x n, row stride ldc) = op(a) (m x k) . op(b) (k x n) + beta * c, enqueued; fails, naming
// `what`, when cuBLAS refuses the call.
Status gemmCuda(cublasHandle_t handle, size_t m, size_t n, size_t k, Operand a, Operand b, float beta, float* c,
                size_t ldc, const char* what);

}  // namespace poseidon::trainer::reference
