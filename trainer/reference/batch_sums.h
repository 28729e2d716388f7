// The bias gradient of a layer whose output is K x C x P (P = 1 for a fully-connected layer,
// H x W for a convolution): each channel's sum over the batch and the plane.
#pragma once

#include <cstddef>
#include <span>

namespace poseidon::trainer::reference {

// out[c] = sum over k, p of dy[(k * channels + c) * plane + p]; each sum runs in double in one
// fixed order (k, then p) and is rounded to float once, so the bits do not depend on the caller.
void sumOverBatch(std::span<const float> dy, size_t batch, size_t channels, size_t plane, std::span<float> out);

}  // namespace poseidon::trainer::reference
