#include "trainer/reference/blas.h"

#include <cblas.h>

#include <atomic>

namespace poseidon::trainer::reference {

namespace {

std::atomic<bool> threads_chosen{false};

blasint blasSize(size_t value) { return static_cast<blasint>(value); }

}  // namespace

void gemm(const Gemm& p) {
  ensureBlasThreadsChosen();
  cblas_sgemm(CblasRowMajor, p.transpose_a ? CblasTrans : CblasNoTrans, p.transpose_b ? CblasTrans : CblasNoTrans,
              blasSize(p.m), blasSize(p.n), blasSize(p.k), p.alpha, p.a, blasSize(p.lda), p.b, blasSize(p.ldb), p.beta,
              p.c, blasSize(p.ldc));
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
