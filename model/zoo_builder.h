// What the zoo's network definitions share: the activation flowing between layers, and helpers
// that append a convolution (with its output size worked out from the input, as the frameworks
// do), a batch norm or a pooling step. Internal to model/zoo_*.cc.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/layer.h"

namespace poseidon::model::zoo_builder {

// channels x height x width of one sample's feature map.
struct Activation {
  uint64_t channels = 0;
  uint64_t height = 0;
  uint64_t width = 0;
};

struct Window {
  uint64_t kernel_h = 1;
  uint64_t kernel_w = 1;
  uint64_t stride = 1;
  uint64_t pad_h = 0;
  uint64_t pad_w = 0;
};

// A k x k window.
inline Window square(uint64_t kernel, uint64_t stride = 1, uint64_t pad = 0) {
  return {kernel, kernel, stride, pad, pad};
}
// Inception-V3's factorised kernels (1 x 7, 7 x 1, ...), stride 1.
inline Window rect(uint64_t kernel_h, uint64_t kernel_w, uint64_t pad_h, uint64_t pad_w) {
  return {kernel_h, kernel_w, 1, pad_h, pad_w};
}

struct ConvOptions {
  bool bias = true;
  uint64_t groups = 1;
};

// Appends the convolution `name` of `in` to `out` channels and returns its output.
Activation conv(std::vector<Layer>& layers, const std::string& name, Activation in, uint64_t out, const Window& window,
                ConvOptions options = {});
// Appends batch norm `name` over `channels` (scale and shift: "<name>.weight", "<name>.bias";
// the running mean and variance are statistics, not trained parameters, and are not synced).
void batchNorm(std::vector<Layer>& layers, const std::string& name, uint64_t channels);
// Max or average pooling: the same channels, a smaller map. Caffe rounds the output size up,
// PyTorch down (`ceil`).
Activation pool(Activation in, const Window& window, bool ceil = false);

}  // namespace poseidon::model::zoo_builder
