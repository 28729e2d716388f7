#include "trainer/reference/blas.h"

#include <cblas.h>

#include <atomic>

namespace poseidon::trainer::reference {

namespace {

std::atomic<bool> threads_chosen{false};

blasint blasSize(size_t value) { return static_cast<blasint>(value); }

}  // namespace

void gemm(size_t m, size_t n, size_t k, Operand a, Operand b, float beta, float* c, size_t ldc) {
  ensureBlasThreadsChosen();
  cblas_sgemm(CblasRowMajor, a.transposed ? CblasTrans : CblasNoTrans, b.transposed ? CblasTrans : CblasNoTrans,
              blasSize(m), blasSize(n), blasSize(k), 1.0f, a.data, blasSize(a.stride), b.data, blasSize(b.stride), beta,
              c, blasSize(ldc));
}

void setBlasThreads(int threads) {
  threads_chosen.store(true);
  openblas_set_num_threads(threads < 1 ? 1 : threads);
}

int blasThreads() { return openblas_get_num_threads(); }

void ensureBlasThreadsChosen() {
  bool expected = false;
  if (threads_chosen.compare_exchange_strong(expected, true)) openblas_set_num_threads(1);
}

}  // namespace poseidon::trainer::reference
