// The CPU twins' fused update loop: sum up to four gradient streams in order and apply one
// optimizer step per element. Shared by the chunk update (kernels/cpu/chunk_update.cc) and the
// SF update's epilogue (kernels/cpu/sf_update.cc), so both evaluate the element functions through
// the same compiled loop shape.
//
// Speed comes from the compiler's vectoriser, so the loop is shaped for it: the optimizer rule
// and the gradient count (1..4) are template parameters (no branch inside the loop), every buffer
// is a __restrict__ pointer (the update checks have made sure written buffers overlap nothing),
// and the step's scalars are a local copy (a store through params could otherwise alias them).
// It is kept out of line: inlined side by side into one dispatcher, GCC 12 lost the restrict
// facts and left Adam with four gradients scalar (4x slower). Files that include this get -O3
// (kernels/CMakeLists.txt): GCC's -O2 cost model refuses loops that need a remainder.
#pragma once

#include <cstddef>

#include "kernels/optimizer_element.h"

namespace poseidon::kernels::cpu {

// g = ((a + b) + c) + d over the first N of a, b, c, d, then the element update. Pointers past N
// are unused (the caller passes a again; reading through two restrict pointers is allowed).
template <ElementRule R, int N>
[[gnu::noinline]] void fusedLoop(size_t count, const float* __restrict__ a, const float* __restrict__ b,
                                 const float* __restrict__ c, const float* __restrict__ d, float* __restrict__ w,
                                 float* __restrict__ state0, float* __restrict__ state1, const OptimizerStep step) {
  static_assert(N >= 1 && N <= 4);
  for (size_t i = 0; i < count; ++i) {
    float g = a[i];
    if constexpr (N >= 2) g += b[i];
    if constexpr (N >= 3) g += c[i];
    if constexpr (N >= 4) g += d[i];
    updateElementAt<R>(g, i, w, state0, state1, step);
  }
}

// One row of an SF update's epilogue: a gradient stream and the row of W (and state) it updates.
using RowUpdate = void (*)(size_t count, const float* g, float* w, float* state0, float* state1,
                           const OptimizerStep step);

// fusedLoop with one gradient, as a RowUpdate.
template <ElementRule R>
void rowUpdate(size_t count, const float* g, float* w, float* state0, float* state1, const OptimizerStep step) {
  fusedLoop<R, 1>(count, g, g, g, g, w, state0, state1, step);
}

// A state pointer moved to an element offset; null (a state the rule does not use) stays null.
inline float* offsetOrNull(float* p, size_t offset) { return p == nullptr ? nullptr : p + offset; }

}  // namespace poseidon::kernels::cpu
