// ResNet-50 as torchvision defines it (He et al. 2015, Table 1, with torchvision's "v1.5"
// stride on the 3x3 convolution of a downsampling block): convolutions without bias, each
// followed by a batch norm layer of its own; names as torchvision's state dict.
#include <fmt/format.h>

#include "model/zoo.h"
#include "model/zoo_builder.h"

namespace poseidon::model {

using zoo_builder::Activation;
using zoo_builder::batchNorm;
using zoo_builder::ConvOptions;
using zoo_builder::pool;
using zoo_builder::square;
using zoo_builder::Window;

namespace {

constexpr uint64_t kResNetBatch = 32;  // [Poseidon ATC'17] Table 3 trains ResNet-152 at 32
constexpr uint64_t kExpansion = 4;     // a bottleneck's output is 4x its width

Activation convBn(std::vector<Layer>& layers, const std::string& conv_name, const std::string& bn_name, Activation in,
                  uint64_t out, const Window& window) {
  const Activation y = zoo_builder::conv(layers, conv_name, in, out, window, ConvOptions{.bias = false});
  batchNorm(layers, bn_name, out);
  return y;
}

// Block `name` ("layer2.0"): 1x1 to `width`, 3x3 (carrying the stride), 1x1 to 4 x width, and a
// projection of the input when its shape changes.
Activation appendBottleneck(std::vector<Layer>& layers, const std::string& name, Activation in, uint64_t width,
                            uint64_t stride) {
  Activation y = convBn(layers, name + ".conv1", name + ".bn1", in, width, square(1));
  y = convBn(layers, name + ".conv2", name + ".bn2", y, width, square(3, stride, 1));
  y = convBn(layers, name + ".conv3", name + ".bn3", y, width * kExpansion, square(1));
  if (stride != 1 || in.channels != width * kExpansion) {
    convBn(layers, name + ".downsample.0", name + ".downsample.1", in, width * kExpansion, square(1, stride));
  }
  return y;
}

}  // namespace

Model resnet50() {
  const uint64_t blocks[] = {3, 4, 6, 3};
  const uint64_t widths[] = {64, 128, 256, 512};
  std::vector<Layer> layers;
  Activation x{3, 224, 224};
  x = convBn(layers, "conv1", "bn1", x, 64, square(7, 2, 3));
  x = pool(x, square(3, 2, 1));
  for (size_t stage = 0; stage < 4; ++stage) {
    for (uint64_t b = 0; b < blocks[stage]; ++b) {
      const uint64_t stride = stage > 0 && b == 0 ? 2 : 1;
      x = appendBottleneck(layers, fmt::format("layer{}.{}", stage + 1, b), x, widths[stage], stride);
    }
  }
  // Global average pool, then the classifier on 2048 channels.
  layers.push_back(Layer::fullyConnected("fc", kImageNetClasses, x.channels, true));
  return Model("resnet50", std::move(layers), kResNetBatch, InputShape{3, 224, 224});
}

}  // namespace poseidon::model
