// MaxPool2dCuda: the GPU twin of MaxPool2d (window x window maximum, stride = window, the first
// maximum on a tie, its index kept for backward), two small kernels on the context's stream that
// scan each window in the CPU loop's order, so the same bits and the same argmax.
#pragma once

#include <memory>
#include <string>

#include "trainer/reference/cuda/gpu_context.h"
#include "trainer/reference/cuda/layer_kernels.h"
#include "trainer/reference/layer.h"

namespace poseidon::trainer::reference {

class MaxPool2dCuda final : public Layer {
 public:
  // Fails as checkMaxPool() does, or when the device memory cannot be had. The context must
  // outlive the layer.
  static Result<std::unique_ptr<MaxPool2dCuda>> create(GpuContext& context, std::string name, size_t batch,
                                                       SampleShape input, size_t window = 2);

  Status forward(std::span<const float> x, std::span<float> y) override;
  Status backward(std::span<const float> x, std::span<const float> y, std::span<const float> dy,
                  std::span<float> dx) override;

 private:
  MaxPool2dCuda(GpuContext& context, std::string name, size_t batch, SampleShape input, size_t window);

  GpuContext& context_;
  PoolShape shape_;
  DeviceBytes argmax_;  // uint32 per output: the index into x of its maximum
};

}  // namespace poseidon::trainer::reference
