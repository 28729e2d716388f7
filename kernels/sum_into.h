// Element-wise sum into a buffer: what a ring all-reduce does with each piece its predecessor
// wrote into its staging. One IEEE addition per element, independent of every other element, so
// the vector code gives the scalar loop's bits (tests/kernels/sum_into_test.cc).
#pragma once

#include <cstddef>

namespace poseidon::kernels {

// sum[i] = addend[i] + sum[i] for i < count. The two ranges must not overlap.
void sumInto(float* sum, const float* addend, size_t count);

}  // namespace poseidon::kernels
