#include "trainer/reference/cuda/cudnn_descriptors.h"

#include <limits>

#include "trainer/reference/cuda/cuda_status.h"

namespace poseidon::trainer::reference {

Result<std::unique_ptr<ConvDescriptors>> ConvDescriptors::create(const ConvGeometry& g, size_t out_channels) {
  constexpr size_t kMax = std::numeric_limits<int>::max();
  for (const size_t size : {g.batch, g.channels, g.height, g.width, g.kernel_h, g.kernel_w, g.pad_h, out_channels}) {
    if (size > kMax) {
      return makeStatus(StatusCode::kInvalidArgument, "cuDNN convolution: a size of {} exceeds cuDNN's int", size);
    }
  }
  const auto i = [](size_t v) { return static_cast<int>(v); };
  std::unique_ptr<ConvDescriptors> d(new ConvDescriptors());
  POSEIDON_RETURN_IF_ERROR(cudnnCheck(cudnnCreateTensorDescriptor(&d->input_), "cudnnCreateTensorDescriptor"));
  POSEIDON_RETURN_IF_ERROR(cudnnCheck(cudnnCreateTensorDescriptor(&d->output_), "cudnnCreateTensorDescriptor"));
  POSEIDON_RETURN_IF_ERROR(cudnnCheck(cudnnCreateTensorDescriptor(&d->bias_), "cudnnCreateTensorDescriptor"));
  POSEIDON_RETURN_IF_ERROR(cudnnCheck(cudnnCreateFilterDescriptor(&d->filter_), "cudnnCreateFilterDescriptor"));
  POSEIDON_RETURN_IF_ERROR(
      cudnnCheck(cudnnCreateConvolutionDescriptor(&d->convolution_), "cudnnCreateConvolutionDescriptor"));

  POSEIDON_RETURN_IF_ERROR(cudnnCheck(cudnnSetTensor4dDescriptor(d->input_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                                                 i(g.batch), i(g.channels), i(g.height), i(g.width)),
                                      "cudnnSetTensor4dDescriptor (input)"));
  POSEIDON_RETURN_IF_ERROR(
      cudnnCheck(cudnnSetTensor4dDescriptor(d->output_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, i(g.batch),
                                            i(out_channels), i(g.outHeight()), i(g.outWidth())),
                 "cudnnSetTensor4dDescriptor (output)"));
  POSEIDON_RETURN_IF_ERROR(
      cudnnCheck(cudnnSetTensor4dDescriptor(d->bias_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, i(out_channels), 1, 1),
                 "cudnnSetTensor4dDescriptor (bias)"));
  POSEIDON_RETURN_IF_ERROR(
      cudnnCheck(cudnnSetFilter4dDescriptor(d->filter_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, i(out_channels),
                                            i(g.channels), i(g.kernel_h), i(g.kernel_w)),
                 "cudnnSetFilter4dDescriptor"));
  // Cross-correlation (what every framework, and the CPU layer, calls convolution), stride 1.
  POSEIDON_RETURN_IF_ERROR(cudnnCheck(cudnnSetConvolution2dDescriptor(d->convolution_, i(g.pad_h), i(g.pad_w), 1, 1, 1,
                                                                      1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                                      "cudnnSetConvolution2dDescriptor"));
  // FMA math: full fp32. The default would allow TF32 tensor cores on Ampere and later.
  POSEIDON_RETURN_IF_ERROR(
      cudnnCheck(cudnnSetConvolutionMathType(d->convolution_, CUDNN_FMA_MATH), "cudnnSetConvolutionMathType"));
  return d;
}

ConvDescriptors::~ConvDescriptors() {
  if (convolution_ != nullptr) static_cast<void>(cudnnDestroyConvolutionDescriptor(convolution_));
  if (filter_ != nullptr) static_cast<void>(cudnnDestroyFilterDescriptor(filter_));
  for (cudnnTensorDescriptor_t t : {bias_, output_, input_}) {
    if (t != nullptr) static_cast<void>(cudnnDestroyTensorDescriptor(t));
  }
}

}  // namespace poseidon::trainer::reference
