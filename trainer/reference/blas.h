// The one place the reference layers call OpenBLAS: a row-major sgemm and the thread count.
//
// Every layer's heavy arithmetic is one of these products, so the speed and the bits of a
// training step are decided here.
#pragma once

#include <cstddef>

namespace poseidon::trainer::reference {

// C (m x n) = alpha * op(A) op(B) + beta * C, all row-major; op(A) is m x k, op(B) is k x n.
// lda / ldb / ldc are the row strides of A, B and C as stored (before the transpose).
struct Gemm {
  bool transpose_a = false;
  bool transpose_b = false;
  size_t m = 0;
  size_t n = 0;
  size_t k = 0;
  float alpha = 1.0f;
  const float* a = nullptr;
  size_t lda = 0;
  const float* b = nullptr;
  size_t ldb = 0;
  float beta = 0.0f;
  float* c = nullptr;
  size_t ldc = 0;
};

void gemm(const Gemm& product);

// OpenBLAS threads for every later product in this process. The default is 1 (applied by the
// first layer built unless this was called before): a job here runs several worker processes on
// 2 shared cores, and each one spawning a thread per core would oversubscribe them and make a
// step's time depend on its neighbours. A single process that has the machine to itself may ask
// for more; with a fixed count, OpenBLAS splits a product the same way every run, so results stay
// reproducible for that count.
void setBlasThreads(int threads);
int blasThreads();
// Applies the default of one thread unless setBlasThreads() was called first.
void ensureBlasThreadsChosen();

}  // namespace poseidon::trainer::reference
