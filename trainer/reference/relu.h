// Relu: y = max(x, 0) element-wise; dx = dy where y > 0, else 0 (the subgradient 0 at x = 0, as
// PyTorch takes it).
#pragma once

#include "trainer/reference/layer.h"

namespace poseidon::trainer::reference {

class Relu final : public Layer {
 public:
  Relu(std::string name, size_t batch, SampleShape shape);

  Status forward(std::span<const float> x, std::span<float> y) override;
  Status backward(std::span<const float> x, std::span<const float> y, std::span<const float> dy,
                  std::span<float> dx) override;
};

}  // namespace poseidon::trainer::reference
