// FullyConnectedCuda: the GPU twin of FullyConnected (y = x W^T + b), on cuBLAS.
//
// Same layouts and contract as the CPU layer (fully_connected.h), every span in device memory:
//   forward:  y = ones b^T (the bias in every row), then y += x W^T     (two sgemms)
//   backward: dX = dY W, then dW = dY^T X (not in factors-only mode), db = dY^T ones
// dX comes first, so once backward has returned (been enqueued) nothing later reads W: a
// gradient_ready hook may let a sync overwrite the parameters after an event on the stream.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "trainer/reference/cuda/gpu_context.h"
#include "trainer/reference/factor_source.h"
#include "trainer/reference/parametric_layer.h"

namespace poseidon::trainer::reference {

class FullyConnectedCuda final : public ParametricLayer, public FactorSource {
 public:
  // Fails as checkFullyConnected() does, or when the device memory cannot be had. The context must
  // outlive the layer.
  static Result<std::unique_ptr<FullyConnectedCuda>> create(GpuContext& context, std::string name, size_t batch,
                                                            SampleShape input, size_t outputs);

  size_t outputs() const { return outputs_; }  // M
  size_t inputs() const { return inputs_; }    // N

  std::optional<model::Layer> describe() const override;

  Status forward(std::span<const float> x, std::span<float> y) override;
  Status backward(std::span<const float> x, std::span<const float> y, std::span<const float> dy,
                  std::span<float> dx) override;

  void setFormWeightGradient(bool form) override { form_weight_gradient_ = form; }
  bool formsWeightGradient() const override { return form_weight_gradient_; }
  // X, K x N, the layer's own device copy, made on the stream at forward.
  std::span<const float> savedInput() const override { return saved_input_.span(); }
  // The last backward's dY, K x M: the caller's device memory, as passed to backward.
  std::span<const float> outputGradient() const { return output_gradient_; }

 private:
  FullyConnectedCuda(GpuContext& context, std::string name, size_t batch, SampleShape input, size_t outputs);
  Status allocateBuffers();

  GpuContext& context_;
  size_t inputs_;
  size_t outputs_;
  bool form_weight_gradient_ = true;
  FloatBlock saved_input_;
  FloatBlock ones_;  // K ones: the bias broadcast and the batch sum as products
  std::span<const float> output_gradient_;
};

}  // namespace poseidon::trainer::reference
