// Inside the SF update's CPU twin: the "fast, not replica-exact" method (SfMethod::kBlas), G by
// OpenBLAS sgemm a block of rows at a time, then the same update loop as the exact method.
#pragma once

#include <cstddef>

#include "kernels/cpu/update_loop.h"
#include "kernels/sf_update.h"

namespace poseidon::kernels::cpu {

// Whether this build has OpenBLAS; without it sfUpdateBlas() must not be called.
bool haveSfBlas();
// `row_update` applies the step's rule to one row of W given that row of G.
void sfUpdateBlas(const SfUpdate& update, RowUpdate row_update);

}  // namespace poseidon::kernels::cpu
