// MaxPool2d: the maximum of each window x window block, stride = window (2 x 2, stride 2 in the
// CNN), PyTorch's nn.MaxPool2d(window) without padding: an output of floor(H / window) x
// floor(W / window), a trailing row or column that does not fill a window is dropped.
//
// Forward remembers where each maximum came from (the first, in row-major order, when several
// are equal); backward routes dy there and gives every other input pixel 0.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trainer/reference/layer.h"

namespace poseidon::trainer::reference {

// Fails, naming layer `name` and the sizes, for a size of 0, a window larger than the input or an
// input of 2^32 floats or more (the argmax is a uint32 index). MaxPool2d and its GPU twin check this.
Status checkMaxPool(const std::string& name, size_t batch, SampleShape input, size_t window);
// floor(H / window) x floor(W / window), the channels kept.
SampleShape pooledShape(SampleShape input, size_t window);

class MaxPool2d final : public Layer {
 public:
  // Fails as checkMaxPool() does.
  static Result<std::unique_ptr<MaxPool2d>> create(std::string name, size_t batch, SampleShape input,
                                                   size_t window = 2);

  Status forward(std::span<const float> x, std::span<float> y) override;
  Status backward(std::span<const float> x, std::span<const float> y, std::span<const float> dy,
                  std::span<float> dx) override;

 private:
  MaxPool2d(std::string name, size_t batch, SampleShape input, size_t window);

  size_t window_;
  std::vector<uint32_t> argmax_;  // per output: the index into x of its maximum
};

}  // namespace poseidon::trainer::reference
