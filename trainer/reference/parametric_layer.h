// ParametricLayer: a layer with a weight and a bias, kept as one span of parameters and one of
// gradients that the layer owns until a caller binds its own memory (registered buffers, so the
// library reads and writes them without a copy).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "trainer/reference/layer.h"

namespace poseidon::trainer::reference {

class ParametricLayer : public Layer {
 public:
  // weights + biases floats in one span, weight first; fan_in scales the initialisation.
  ParametricLayer(std::string name, size_t batch, SampleShape input, SampleShape output, size_t weights, size_t biases,
                  size_t fan_in);

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
  // overlapping), copying the current parameter values there; the layer's own storage is freed.
  // The memory must outlive the layer or the next bind.
  Status bind(std::span<float> params, std::span<float> grads);

  // PyTorch's default for nn.Linear and nn.Conv2d (Kaiming-uniform with a = sqrt(5)): weight and
  // bias uniform in [-1/sqrt(fan_in), 1/sqrt(fan_in)), weight first, from std::mt19937_64(seed).
  void initialize(uint64_t seed);

 private:
  size_t weights_;
  size_t biases_;
  size_t fan_in_;
  std::vector<float> own_params_;
  std::vector<float> own_grads_;
  std::span<float> params_;
  std::span<float> grads_;
};

}  // namespace poseidon::trainer::reference
