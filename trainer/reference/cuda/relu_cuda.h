// ReluCuda: the GPU twin of Relu (y = max(x, 0); dx = dy where y > 0), a small kernel on the
// context's stream. The same comparisons as the CPU loop, so the same bits.
#pragma once

#include <memory>
#include <string>

#include "trainer/reference/cuda/gpu_context.h"
#include "trainer/reference/layer.h"

namespace poseidon::trainer::reference {

class ReluCuda final : public Layer {
 public:
  // The context must outlive the layer.
  ReluCuda(GpuContext& context, std::string name, size_t batch, SampleShape shape);

  Status forward(std::span<const float> x, std::span<float> y) override;
  Status backward(std::span<const float> x, std::span<const float> y, std::span<const float> dy,
                  std::span<float> dx) override;

 private:
  GpuContext& context_;
};

}  // namespace poseidon::trainer::reference
