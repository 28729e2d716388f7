#include "trainer/reference/cuda/conv2d_cuda.h"

#include <algorithm>
#include <utility>

#include "trainer/reference/cuda/cuda_status.h"

namespace poseidon::trainer::reference {

namespace {

constexpr cudnnConvolutionFwdAlgo_t kForward = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
constexpr cudnnConvolutionBwdDataAlgo_t kBackwardData = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
constexpr cudnnConvolutionBwdFilterAlgo_t kBackwardFilter = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;

}  // namespace

Result<std::unique_ptr<Conv2dCuda>> Conv2dCuda::create(GpuContext& context, std::string name, size_t batch,
                                                       SampleShape input, Conv2dOptions options) {
  Result<ConvGeometry> geometry = convGeometry(name, batch, input, options);
  if (!geometry.isOk()) return geometry.status();
  std::unique_ptr<Conv2dCuda> layer(new Conv2dCuda(context, std::move(name), *geometry, options.out_channels));
  POSEIDON_RETURN_IF_ERROR(layer->allocateParameters());
  POSEIDON_RETURN_IF_ERROR(layer->prepare().withContext("conv layer " + layer->name()));
  return layer;
}

Conv2dCuda::Conv2dCuda(GpuContext& context, std::string name, const ConvGeometry& geometry, size_t out_channels)
    : ParametricLayer(std::move(name), geometry.batch, SampleShape{geometry.channels, geometry.height, geometry.width},
                      SampleShape{out_channels, geometry.outHeight(), geometry.outWidth()},
                      out_channels * geometry.columnRows(), out_channels, geometry.columnRows(), context.memory()),
      context_(context),
      geometry_(geometry),
      out_channels_(out_channels) {}

Status Conv2dCuda::prepare() {
  Result<std::unique_ptr<ConvDescriptors>> descriptors = ConvDescriptors::create(geometry_, out_channels_);
  if (!descriptors.isOk()) return descriptors.status();
  descriptors_ = std::move(descriptors).value();
  const ConvDescriptors& d = *descriptors_;
  cudnnHandle_t h = context_.cudnn();
  size_t forward = 0;
  size_t data = 0;
  size_t filter = 0;
  POSEIDON_RETURN_IF_ERROR(cudnnCheck(cudnnGetConvolutionForwardWorkspaceSize(h, d.input(), d.filter(), d.convolution(),
                                                                              d.output(), kForward, &forward),
                                      "the forward algorithm (implicit precomputed GEMM)"));
  POSEIDON_RETURN_IF_ERROR(cudnnCheck(cudnnGetConvolutionBackwardDataWorkspaceSize(
                                          h, d.filter(), d.output(), d.convolution(), d.input(), kBackwardData, &data),
                                      "the backward-data algorithm (ALGO_1)"));
  POSEIDON_RETURN_IF_ERROR(
      cudnnCheck(cudnnGetConvolutionBackwardFilterWorkspaceSize(h, d.input(), d.output(), d.convolution(), d.filter(),
                                                                kBackwardFilter, &filter),
                 "the backward-filter algorithm (ALGO_1)"));
  workspace_bytes_ = std::max({forward, data, filter});
  Result<FloatBlock> workspace = memory().allocate((workspace_bytes_ + sizeof(float) - 1) / sizeof(float));
  if (!workspace.isOk()) return workspace.status().withContext("the cuDNN workspace");
  workspace_ = std::move(workspace).value();
  return Status::ok();
}

std::optional<model::Layer> Conv2dCuda::describe() const { return describeConv(name(), geometry_, out_channels_); }

Status Conv2dCuda::forward(std::span<const float> x, std::span<float> y) {
  POSEIDON_RETURN_IF_ERROR(checkForward(x, y));
  const ConvDescriptors& d = *descriptors_;
  const float one = 1.0f;
  const float zero = 0.0f;
  POSEIDON_RETURN_IF_ERROR(cudnnCheck(
      cudnnConvolutionForward(context_.cudnn(), &one, d.input(), x.data(), d.filter(), weight().data(), d.convolution(),
                              kForward, workspace_.span().data(), workspace_bytes_, &zero, d.output(), y.data()),
      "conv layer " + name() + ": cudnnConvolutionForward"));
  return cudnnCheck(cudnnAddTensor(context_.cudnn(), &one, d.bias(), bias().data(), &one, d.output(), y.data()),
                    "conv layer " + name() + ": cudnnAddTensor (bias)");
}

Status Conv2dCuda::backward(std::span<const float> x, std::span<const float> y, std::span<const float> dy,
                            std::span<float> dx) {
  POSEIDON_RETURN_IF_ERROR(checkBackward(x, y, dy, dx));
  const ConvDescriptors& d = *descriptors_;
  cudnnHandle_t h = context_.cudnn();
  const float one = 1.0f;
  const float zero = 0.0f;
  if (!dx.empty()) {
    POSEIDON_RETURN_IF_ERROR(
        cudnnCheck(cudnnConvolutionBackwardData(h, &one, d.filter(), weight().data(), d.output(), dy.data(),
                                                d.convolution(), kBackwardData, workspace_.span().data(),
                                                workspace_bytes_, &zero, d.input(), dx.data()),
                   "conv layer " + name() + ": cudnnConvolutionBackwardData"));
  }
  POSEIDON_RETURN_IF_ERROR(
      cudnnCheck(cudnnConvolutionBackwardFilter(h, &one, d.input(), x.data(), d.output(), dy.data(), d.convolution(),
                                                kBackwardFilter, workspace_.span().data(), workspace_bytes_, &zero,
                                                d.filter(), weightGrad().data()),
                 "conv layer " + name() + ": cudnnConvolutionBackwardFilter"));
  return cudnnCheck(cudnnConvolutionBackwardBias(h, &one, d.output(), dy.data(), &zero, d.bias(), biasGrad().data()),
                    "conv layer " + name() + ": cudnnConvolutionBackwardBias");
}

}  // namespace poseidon::trainer::reference
