#include "trainer/reference/cuda/gemm_cuda.h"

#include <limits>

#include "trainer/reference/cuda/cuda_status.h"

namespace poseidon::trainer::reference {

namespace {

cublasOperation_t operation(const Operand& operand) { return operand.transposed ? CUBLAS_OP_T : CUBLAS_OP_N; }

}  // namespace

Status gemmCuda(cublasHandle_t handle, size_t m, size_t n, size_t k, Operand a, Operand b, float beta, float* c,
                size_t ldc, const char* what) {
  constexpr size_t kMax = std::numeric_limits<int>::max();
  if (m > kMax || n > kMax || k > kMax || a.stride > kMax || b.stride > kMax || ldc > kMax) {
    return makeStatus(StatusCode::kInvalidArgument, "{}: a {} x {} x {} product exceeds cuBLAS's int sizes", what, m, n,
                      k);
  }
  const float alpha = 1.0f;
  const auto i = [](size_t v) { return static_cast<int>(v); };
  return cublasCheck(cublasSgemm(handle, operation(b), operation(a), i(n), i(m), i(k), &alpha, b.data, i(b.stride),
                                 a.data, i(a.stride), &beta, c, i(ldc)),
                     what);
}

}  // namespace poseidon::trainer::reference
