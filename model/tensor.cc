#include "model/tensor.h"

#include <utility>

namespace poseidon::model {

Tensor shapedTensor(std::string name, std::vector<uint64_t> shape) {
  uint64_t floats = shape.empty() ? 0 : 1;
  for (uint64_t dimension : shape) floats = boundedProduct(floats, dimension);
  return Tensor{std::move(name), floats, std::move(shape)};
}

}  // namespace poseidon::model
