// Small CNNs for 28x28 images that train in milliseconds per step.
#pragma once

#include "trainer/reference/network.h"

namespace poseidon::testing {

// conv 5x5 8 (pad 2), ReLU, max-pool 2, FC 1568 -> 32 (+ ReLU), FC 32 -> 10. Two FC layers (with
// biases) and a convolution: every path of the schemes, at test speed.
Result<trainer::reference::Network> tinyCnn(size_t batch, uint64_t seed);

// The same with a second convolution (5x5 8 -> 8, pad 2, ReLU, max-pool 2; FC 392 -> 32) right
// after the first: two adjacent non-FC layers, which MG-WFBP may merge into one message.
Result<trainer::reference::Network> tinyCnnTwoConvs(size_t batch, uint64_t seed);

}  // namespace poseidon::testing
