// A small CNN for 28x28 images that trains in milliseconds per step: conv 5x5 8 (pad 2), ReLU,
// max-pool 2, FC 1568 -> 32 (+ ReLU), FC 32 -> 10. Two FC layers (with biases) and a convolution:
// every path of the schemes, at test speed.
#pragma once

#include "trainer/reference/network.h"

namespace poseidon::testing {

Result<trainer::reference::Network> tinyCnn(size_t batch, uint64_t seed);

}  // namespace poseidon::testing
