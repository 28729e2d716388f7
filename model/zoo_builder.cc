#include "model/zoo_builder.h"

namespace poseidon::model::zoo_builder {

namespace {

uint64_t outputSize(uint64_t in, uint64_t kernel, uint64_t stride, uint64_t pad, bool ceil) {
  const uint64_t span = in + 2 * pad - kernel;
  return (ceil ? (span + stride - 1) / stride : span / stride) + 1;
}

}  // namespace

Activation conv(std::vector<Layer>& layers, const std::string& name, Activation in, uint64_t out, const Window& window,
                ConvOptions options) {
  ConvShape shape;
  shape.out_channels = out;
  shape.in_channels = in.channels / options.groups;
  shape.kernel_h = window.kernel_h;
  shape.kernel_w = window.kernel_w;
  shape.groups = options.groups;
  shape.stride = window.stride;
  shape.out_h = outputSize(in.height, window.kernel_h, window.stride, window.pad_h, false);
  shape.out_w = outputSize(in.width, window.kernel_w, window.stride, window.pad_w, false);
  shape.bias = options.bias;
  layers.push_back(Layer::convolution(name, shape));
  return {out, shape.out_h, shape.out_w};
}

void batchNorm(std::vector<Layer>& layers, const std::string& name, uint64_t channels) {
  layers.push_back(Layer::other(name, channels, channels));
}

Activation pool(Activation in, const Window& window, bool ceil) {
  return {in.channels, outputSize(in.height, window.kernel_h, window.stride, window.pad_h, ceil),
          outputSize(in.width, window.kernel_w, window.stride, window.pad_w, ceil)};
}

}  // namespace poseidon::model::zoo_builder
