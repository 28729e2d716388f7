// The CNN for 28 x 28 grey images (Fashion-MNIST, 10 classes) that the demo and the examples
// train:
//   conv1 5x5, 32 channels, pad 2 + ReLU   -> 32 x 28 x 28
//   max-pool 2                             -> 32 x 14 x 14
//   conv2 5x5, 64 channels, pad 2 + ReLU   -> 64 x 14 x 14
//   max-pool 2                             -> 64 x 7 x 7
//   fc1 3136 -> 512 + ReLU
//   fc2 512 -> 10, softmax cross-entropy
// Parameters: conv1 832, conv2 51264, fc1 1606144, fc2 5130 (1663370 in all); parametric layers
// 0..3 in that order.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/status.h"
#include "model/model.h"
#include "trainer/reference/layer_kit.h"
#include "trainer/reference/network.h"

namespace poseidon::trainer::reference {

inline constexpr size_t kFashionClasses = 10;
inline constexpr SampleShape kFashionImage{1, 28, 28};

// The network for batch K, parameters initialised from `seed` (Network::initialize): the
// reference layers, or those of `kit` (the GPU twins: cuda/layer_kit_cuda.h), which get the
// same parameters from the same seed.
Result<Network> buildFashionCnn(size_t batch, uint64_t seed);
Result<Network> buildFashionCnn(const LayerKit& kit, size_t batch, uint64_t seed);
// Its description for batch K: equal to buildFashionCnn(batch, seed)->describe().
model::Model fashionCnnModel(size_t batch);

}  // namespace poseidon::trainer::reference
