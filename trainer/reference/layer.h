// Layer: one step of a reference network, a plain compute object a training loop calls.
//
// Layouts (what the library registers and sends, so they are fixed): activations are batch-major
// NCHW, K samples x C x H x W, row-major floats, as PyTorch and Caffe store them; a layer's
// parameters are one contiguous span in model::Layer's tensor order (weight, then bias), and its
// gradient span has the same layout.
//
// The interface speaks only of spans of floats and never reads them itself, so a GPU twin
// (cuBLAS / cuDNN) can implement it with device memory behind the same spans and enqueue its work
// on a stream it was built with; see README.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "common/status.h"
#include "model/layer.h"
#include "model/model.h"
#include "trainer/reference/float_memory.h"

namespace poseidon::trainer::reference {

// One sample's shape, channels x height x width; a vector of N features is N x 1 x 1.
using SampleShape = model::InputShape;

inline size_t sampleSize(const SampleShape& shape) {
  return static_cast<size_t>(shape.channels * shape.height * shape.width);
}

class Layer {
 public:
  // `memory` (which must outlive the layer) is where x, y, dy, dx and the layer's own state live.
  Layer(std::string name, size_t batch, SampleShape input, SampleShape output,
        const FloatMemory& memory = hostMemory());
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  const std::string& name() const { return name_; }
  const FloatMemory& memory() const { return *memory_; }
  // K: the samples of every forward and backward call.
  size_t batch() const { return batch_; }
  const SampleShape& inputShape() const { return input_; }
  const SampleShape& outputShape() const { return output_; }
  size_t inputSize() const { return batch_ * sampleSize(input_); }    // floats of x and dx
  size_t outputSize() const { return batch_ * sampleSize(output_); }  // floats of y and dy

  // Parametric layers override these (see ParametricLayer); the others have no parameters.
  virtual size_t parameterCount() const { return 0; }
  virtual std::optional<model::Layer> describe() const { return std::nullopt; }

  // y = f(x) for the batch; x has inputSize() floats, y outputSize(). Whatever backward needs
  // beyond x and y the layer keeps itself.
  virtual Status forward(std::span<const float> x, std::span<float> y) = 0;
  // From dy (dL/dy) of the last forward: dx (dL/dx) and, for a parametric layer, its parameter
  // gradient, overwritten (not accumulated). x and y are the last forward's, unchanged since. An
  // empty dx means the input's gradient is not wanted (the first layer), which skips its work.
  virtual Status backward(std::span<const float> x, std::span<const float> y, std::span<const float> dy,
                          std::span<float> dx) = 0;

 protected:
  // OK, or kInvalidArgument naming this layer, the argument, its size and the size expected.
  Status checkSize(const char* what, size_t size, size_t expected) const;
  Status checkForward(std::span<const float> x, std::span<float> y) const;
  Status checkBackward(std::span<const float> x, std::span<const float> y, std::span<const float> dy,
                       std::span<float> dx) const;

 private:
  std::string name_;
  size_t batch_;
  SampleShape input_;
  SampleShape output_;
  const FloatMemory* memory_;
};

}  // namespace poseidon::trainer::reference
