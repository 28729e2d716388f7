#include "trainer/reference/max_pool.h"

#include <algorithm>
#include <limits>

namespace poseidon::trainer::reference {

Status checkMaxPool(const std::string& name, size_t batch, SampleShape input, size_t window) {
  // The argmax is kept as uint32 indices into x.
  const bool fits_index = batch * sampleSize(input) <= std::numeric_limits<uint32_t>::max();
  if (batch == 0 || sampleSize(input) == 0 || window == 0 || window > input.height || window > input.width ||
      !fits_index) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "max-pool layer {}: batch {}, input {} x {} x {}, window {}: expected every size >= 1, the "
                      "window within the input and under 2^32 input floats",
                      name, batch, input.channels, input.height, input.width, window);
  }
  return Status::ok();
}

SampleShape pooledShape(SampleShape input, size_t window) {
  return SampleShape{input.channels, input.height / window, input.width / window};
}

Result<std::unique_ptr<MaxPool2d>> MaxPool2d::create(std::string name, size_t batch, SampleShape input, size_t window) {
  POSEIDON_RETURN_IF_ERROR(checkMaxPool(name, batch, input, window));
  return std::unique_ptr<MaxPool2d>(new MaxPool2d(std::move(name), batch, input, window));
}

MaxPool2d::MaxPool2d(std::string name, size_t batch, SampleShape input, size_t window)
    : Layer(std::move(name), batch, input, pooledShape(input, window)), window_(window), argmax_(outputSize(), 0) {}

Status MaxPool2d::forward(std::span<const float> x, std::span<float> y) {
  POSEIDON_RETURN_IF_ERROR(checkForward(x, y));
  const auto height = static_cast<size_t>(inputShape().height);
  const auto width = static_cast<size_t>(inputShape().width);
  const auto out_h = static_cast<size_t>(outputShape().height);
  const auto out_w = static_cast<size_t>(outputShape().width);
  const size_t planes = batch() * static_cast<size_t>(inputShape().channels);
  size_t out = 0;
  for (size_t plane = 0; plane < planes; ++plane) {
    const size_t base = plane * height * width;
    for (size_t oh = 0; oh < out_h; ++oh) {
      for (size_t ow = 0; ow < out_w; ++ow, ++out) {
        size_t best = base + oh * window_ * width + ow * window_;
        for (size_t i = 0; i < window_; ++i) {
          const size_t row = base + (oh * window_ + i) * width + ow * window_;
          for (size_t j = 0; j < window_; ++j) {
            if (x[row + j] > x[best]) best = row + j;
          }
        }
        y[out] = x[best];
        argmax_[out] = static_cast<uint32_t>(best);
      }
    }
  }
  return Status::ok();
}

Status MaxPool2d::backward(std::span<const float> x, std::span<const float> y, std::span<const float> dy,
                           std::span<float> dx) {
  POSEIDON_RETURN_IF_ERROR(checkBackward(x, y, dy, dx));
  if (dx.empty()) return Status::ok();
  // Windows do not overlap, so each input pixel receives at most one output's gradient.
  std::fill(dx.begin(), dx.end(), 0.0f);
  for (size_t out = 0; out < dy.size(); ++out) dx[argmax_[out]] = dy[out];
  return Status::ok();
}

}  // namespace poseidon::trainer::reference
