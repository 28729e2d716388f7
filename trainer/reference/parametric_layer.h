// ParametricLayer: a layer with a weight and a bias, kept as one span of parameters and one of
// gradients that the layer owns until a caller binds its own memory (registered buffers, so the
// library reads and writes them without a copy). Both live in the layer's FloatMemory: host memory
// for the reference layers, device memory for their GPU twins.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "trainer/reference/float_memory.h"
#include "trainer/reference/layer.h"

namespace poseidon::trainer::reference {

class ParametricLayer : public Layer {
 public:
  // weights + biases floats in one span, weight first; fan_in scales the initialisation. The
  // memory (which must outlive the layer) holds the parameters; a subclass's create() calls
  // allocateParameters() before handing the layer out.
  ParametricLayer(std::string name, size_t batch, SampleShape input, SampleShape output, size_t weights, size_t biases,
                  size_t fan_in, const FloatMemory& memory = hostMemory());

  size_t parameterCount() const override { return weights_ + biases_; }
  size_t weightCount() const { return weights_; }
  size_t biasCount() const { return biases_; }

  std::span<float> params() { return params_; }
  std::span<const float> params() const { return params_; }
  std::span<float> grads() { return grads_; }
  std::span<const float> grads() const { return grads_; }
  std::span<float> weight() { return params_.first(weights_); }
  std::span<const float> weight() const { return params_.first(weights_); }
  std::span<const float> bias() const { return params_.subspan(weights_); }
  std::span<float> weightGrad() { return grads_.first(weights_); }
  std::span<float> biasGrad() { return grads_.subspan(weights_); }

  // Moves the parameters and gradients to the caller's memory (parameterCount() floats each, not
  // overlapping, of the layer's memory kind), copying the current parameter values there; the
  // layer's own storage is freed. The memory must outlive the layer or the next bind.
  Status bind(std::span<float> params, std::span<float> grads);

  // PyTorch's default for nn.Linear and nn.Conv2d (Kaiming-uniform with a = sqrt(5)): weight and
  // bias uniform in [-1/sqrt(fan_in), 1/sqrt(fan_in)), weight first, from std::mt19937_64(seed).
  // Drawn on the host and written to the layer's memory, so a twin gets the same bits; fails only
  // when that write does.
  Status initialize(uint64_t seed);

 protected:
  // The layer's own zeroed parameters and gradients; fails, naming the layer, when its memory
  // cannot give them.
  Status allocateParameters();

 private:
  size_t weights_;
  size_t biases_;
  size_t fan_in_;
  FloatBlock own_params_;
  FloatBlock own_grads_;
  std::span<float> params_;
  std::span<float> grads_;
};

}  // namespace poseidon::trainer::reference
