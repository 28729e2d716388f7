// Inside the SF update's CPU twin: the "fast, not replica-exact" method (SfMethod::kBlas), G by
// OpenBLAS sgemm a block of rows at a time, then the same update loop as the exact method.
#pragma once

#include <cstddef>

#include "kernels/sf_update.h"

namespace poseidon::kernels::cpu {

// Applies the optimizer to `count` elements of one row of W given that row of G (the caller
// instantiates it for the step's rule).
using RowUpdate = void (*)(size_t count, const float* g, float* w, float* state0, float* state1,
                           const OptimizerStep& step);

// Whether this build has OpenBLAS; without it sfUpdateBlas() must not be called.
bool haveSfBlas();
void sfUpdateBlas(const SfUpdate& update, RowUpdate row_update);

}  // namespace poseidon::kernels::cpu
