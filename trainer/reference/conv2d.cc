#include "trainer/reference/conv2d.h"

#include <algorithm>

#include "trainer/reference/batch_sums.h"
#include "trainer/reference/blas.h"

namespace poseidon::trainer::reference {

Result<ConvGeometry> convGeometry(const std::string& name, size_t batch, SampleShape input,
                                  const Conv2dOptions& options) {
  if (batch == 0 || sampleSize(input) == 0 || options.out_channels == 0 || options.kernel == 0 ||
      options.kernel > input.height + 2 * options.pad || options.kernel > input.width + 2 * options.pad) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "conv layer {}: batch {}, input {} x {} x {}, {} outputs, kernel {}, pad {}: expected every "
                      "size >= 1 and the kernel within the padded input",
                      name, batch, input.channels, input.height, input.width, options.out_channels, options.kernel,
                      options.pad);
  }
  return ConvGeometry{.batch = batch,
                      .channels = static_cast<size_t>(input.channels),
                      .height = static_cast<size_t>(input.height),
                      .width = static_cast<size_t>(input.width),
                      .kernel_h = options.kernel,
                      .kernel_w = options.kernel,
                      .pad_h = options.pad,
                      .pad_w = options.pad};
}

model::Layer describeConv(const std::string& name, const ConvGeometry& geometry, size_t out_channels) {
  return model::Layer::convolution(name, model::ConvShape{.out_channels = out_channels,
                                                          .in_channels = geometry.channels,
                                                          .kernel_h = geometry.kernel_h,
                                                          .kernel_w = geometry.kernel_w,
                                                          .groups = 1,
                                                          .stride = 1,
                                                          .out_h = geometry.outHeight(),
                                                          .out_w = geometry.outWidth(),
                                                          .bias = true});
}

Result<std::unique_ptr<Conv2d>> Conv2d::create(std::string name, size_t batch, SampleShape input,
                                               Conv2dOptions options) {
  Result<ConvGeometry> geometry = convGeometry(name, batch, input, options);
  if (!geometry.isOk()) return geometry.status();
  std::unique_ptr<Conv2d> layer(new Conv2d(std::move(name), *geometry, options.out_channels));
  POSEIDON_RETURN_IF_ERROR(layer->allocateParameters());
  return layer;
}

Conv2d::Conv2d(std::string name, const ConvGeometry& geometry, size_t out_channels)
    : ParametricLayer(std::move(name), geometry.batch, SampleShape{geometry.channels, geometry.height, geometry.width},
                      SampleShape{out_channels, geometry.outHeight(), geometry.outWidth()},
                      out_channels * geometry.columnRows(), out_channels, geometry.columnRows()),
      geometry_(geometry),
      out_channels_(out_channels),
      columns_(geometry.columnRows() * geometry.columnCols(), 0.0f),
      by_channel_(out_channels * geometry.columnCols(), 0.0f) {}

std::optional<model::Layer> Conv2d::describe() const { return describeConv(name(), geometry_, out_channels_); }

Status Conv2d::forward(std::span<const float> x, std::span<float> y) {
  POSEIDON_RETURN_IF_ERROR(checkForward(x, y));
  const size_t rows = geometry_.columnRows();
  const size_t cols = geometry_.columnCols();
  const size_t plane = geometry_.outPlane();
  im2col(geometry_, x, columns_);
  // out x (K * P) = W (out x C*kh*kw) . columns (C*kh*kw x K * P)
  gemm(out_channels_, cols, rows, {weight().data(), rows}, {columns_.data(), cols}, 0.0f, by_channel_.data(), cols);
  // Spread into K x out x P and add the bias.
  const std::span<const float> b = bias();
  for (size_t k = 0; k < batch(); ++k) {
    for (size_t o = 0; o < out_channels_; ++o) {
      const float* from = by_channel_.data() + o * cols + k * plane;
      float* to = y.data() + (k * out_channels_ + o) * plane;
      for (size_t p = 0; p < plane; ++p) to[p] = from[p] + b[o];
    }
  }
  return Status::ok();
}

Status Conv2d::backward(std::span<const float> x, std::span<const float> y, std::span<const float> dy,
                        std::span<float> dx) {
  POSEIDON_RETURN_IF_ERROR(checkBackward(x, y, dy, dx));
  const size_t rows = geometry_.columnRows();
  const size_t cols = geometry_.columnCols();
  const size_t plane = geometry_.outPlane();
  // Gather dY into out x (K * P), the layout of the forward product.
  for (size_t k = 0; k < batch(); ++k) {
    for (size_t o = 0; o < out_channels_; ++o) {
      const float* from = dy.data() + (k * out_channels_ + o) * plane;
      std::copy(from, from + plane, by_channel_.data() + o * cols + k * plane);
    }
  }
  sumOverBatch(dy, batch(), out_channels_, plane, biasGrad());
  // dW (out x C*kh*kw) = dY (out x K*P) . columns^T (K*P x C*kh*kw)
  gemm(out_channels_, rows, cols, {by_channel_.data(), cols}, {columns_.data(), cols, true}, 0.0f, weightGrad().data(),
       rows);
  if (dx.empty()) return Status::ok();
  // dX's columns (C*kh*kw x K*P) = W^T . dY, into the forward's columns (no longer needed).
  gemm(rows, cols, out_channels_, {weight().data(), rows, true}, {by_channel_.data(), cols}, 0.0f, columns_.data(),
       cols);
  col2im(geometry_, columns_, dx);
  return Status::ok();
}

}  // namespace poseidon::trainer::reference
