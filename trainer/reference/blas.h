// The one place the reference layers call OpenBLAS: a row-major sgemm and the thread count.
//
// Every layer's heavy arithmetic is one of these products, so the speed and the bits of a
// training step are decided here.
#pragma once

#include <cstddef>

namespace poseidon::trainer::reference {

// A row-major matrix operand: its data, its row stride as stored, and whether the product uses
// its transpose.
struct Operand {
  const float* data = nullptr;
  size_t stride = 0;
  bool transposed = false;
};

// c (m x n, row stride ldc) = op(a) (m x k) . op(b) (k x n) + beta * c.
void gemm(size_t m, size_t n, size_t k, Operand a, Operand b, float beta, float* c, size_t ldc);

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
