// Conv2dCuda: the GPU twin of Conv2d (stride 1, zero padding, one group), on cuDNN.
//
// Same layouts and contract as the CPU layer (conv2d.h), every span in device memory:
//   forward:  cudnnConvolutionForward, then the bias by cudnnAddTensor
//   backward: dX by cudnnConvolutionBackwardData (first, so nothing after it reads W), dW by
//             cudnnConvolutionBackwardFilter, db by cudnnConvolutionBackwardBias
// The algorithms are fixed, not searched: implicit precomputed GEMM forward, ALGO_1 for backward
// data and backward filter, all three deterministic in cuDNN's documentation (no atomics), so the
// same inputs give the same bits run after run on one GPU. The workspace the three need is
// allocated once, at create().
#pragma once

#include <memory>
#include <span>
#include <string>

#include "trainer/reference/conv2d.h"
#include "trainer/reference/cuda/cudnn_descriptors.h"
#include "trainer/reference/cuda/gpu_context.h"
#include "trainer/reference/parametric_layer.h"

namespace poseidon::trainer::reference {

class Conv2dCuda final : public ParametricLayer {
 public:
  // Fails as convGeometry() does, when cuDNN refuses the geometry or an algorithm, or when the
  // device memory cannot be had. The context must outlive the layer.
  static Result<std::unique_ptr<Conv2dCuda>> create(GpuContext& context, std::string name, size_t batch,
                                                    SampleShape input, Conv2dOptions options);

  const ConvGeometry& geometry() const { return geometry_; }
  std::optional<model::Layer> describe() const override;

  Status forward(std::span<const float> x, std::span<float> y) override;
  Status backward(std::span<const float> x, std::span<const float> y, std::span<const float> dy,
                  std::span<float> dx) override;

 private:
  Conv2dCuda(GpuContext& context, std::string name, const ConvGeometry& geometry, size_t out_channels);
  Status prepare();

  GpuContext& context_;
  ConvGeometry geometry_;
  size_t out_channels_;
  std::unique_ptr<ConvDescriptors> descriptors_;
  FloatBlock workspace_;
  size_t workspace_bytes_ = 0;
};

}  // namespace poseidon::trainer::reference
