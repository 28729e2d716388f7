// Layer shapes from a parameter server tensor list, so the cost model prices exactly the model
// the PS places (ps/model_zoo.h) instead of a second copy of its numbers.
#pragma once

#include <span>
#include <vector>

#include "ps/chunk_layout.h"
#include "trainer/hybcomm/layer_shape.h"

namespace poseidon::trainer {

// Groups consecutive "<layer>.weight" / "<layer>.bias" tensors (ps/model_zoo's naming) into one
// layer each. A layer named "fc..." is fully connected: M is its bias length (its outputs) and
// N = weight / M. Any other layer is priced by its weights plus bias. Fails, naming the tensor or
// layer, on a name without ".weight" or ".bias", a tensor given twice, a tensor of 0 elements, or
// an FC layer without a bias or whose bias length does not divide its weight.
Result<std::vector<LayerShape>> layersFromTensors(std::span<const ps::TensorSpec> tensors);

}  // namespace poseidon::trainer
