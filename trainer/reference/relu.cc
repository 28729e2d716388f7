#include "trainer/reference/relu.h"

#include <utility>

namespace poseidon::trainer::reference {

Relu::Relu(std::string name, size_t batch, SampleShape shape) : Layer(std::move(name), batch, shape, shape) {}

Status Relu::forward(std::span<const float> x, std::span<float> y) {
  POSEIDON_RETURN_IF_ERROR(checkForward(x, y));
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
  return Status::ok();
}

Status Relu::backward(std::span<const float> x, std::span<const float> y, std::span<const float> dy,
                      std::span<float> dx) {
  POSEIDON_RETURN_IF_ERROR(checkBackward(x, y, dy, dx));
  for (size_t i = 0; i < dx.size(); ++i) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
  return Status::ok();
}

}  // namespace poseidon::trainer::reference
