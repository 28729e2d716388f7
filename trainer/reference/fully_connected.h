// FullyConnected: y = x W^T + b, PyTorch's nn.Linear.
//
// x is K x N (a sample's C x H x W flattened in NCHW order, as torch.flatten does), y is K x M,
// the weight M x N row-major and the bias M, in one span (weight, bias). Backward:
//   dX = dY W,   dW = dY^T X,   db = the column sums of dY (summed over the batch).
// dW = U V^T with U = dY^T (M x K) and V = X^T (N x K): the sufficient factors of
// [Poseidon 2015] section 3.2 and [Poseidon ATC'17] section 3.2. In factors-only mode backward
// forms dX and db but not dW: a library that syncs the layer by SFB forms dW from the factors
// itself, so the M x K x N product would be wasted.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "trainer/reference/factor_source.h"
#include "trainer/reference/parametric_layer.h"

namespace poseidon::trainer::reference {

// Fails, naming layer `name` and the sizes, when one is 0. FullyConnected and its GPU twin check this.
Status checkFullyConnected(const std::string& name, size_t batch, SampleShape input, size_t outputs);

class FullyConnected final : public ParametricLayer, public FactorSource {
 public:
  // `input` may be any C x H x W (N = C * H * W); the output is M x 1 x 1. Fails, naming the
  // layer and the sizes, when one is 0.
  static Result<std::unique_ptr<FullyConnected>> create(std::string name, size_t batch, SampleShape input,
                                                        size_t outputs);

  size_t outputs() const { return outputs_; }  // M
  size_t inputs() const { return inputs_; }    // N

  std::optional<model::Layer> describe() const override;

  Status forward(std::span<const float> x, std::span<float> y) override;
  Status backward(std::span<const float> x, std::span<const float> y, std::span<const float> dy,
                  std::span<float> dx) override;

  // false: backward leaves the weight's gradient untouched (factors-only mode).
  void setFormWeightGradient(bool form) override { form_weight_gradient_ = form; }
  bool formsWeightGradient() const override { return form_weight_gradient_; }

  // The last forward's input X, K x N row-major (V^T): the layer's own copy, so the caller may
  // overwrite its input buffer (the next iteration's forward of the layer below) while the factors
  // are still being sent. The span is the same memory for the layer's life.
  std::span<const float> savedInput() const override { return saved_input_; }
  // The last backward's dY, K x M row-major (U^T): the caller's memory, as passed to backward.
  std::span<const float> outputGradient() const { return output_gradient_; }

 private:
  FullyConnected(std::string name, size_t batch, SampleShape input, size_t outputs);

  size_t inputs_;
  size_t outputs_;
  bool form_weight_gradient_ = true;
  std::vector<float> saved_input_;
  std::span<const float> output_gradient_;
};

}  // namespace poseidon::trainer::reference
