// AlexNet (both variants) and VGG19: plain stacks of convolutions and three FC layers.
#include <fmt/format.h>

#include "model/zoo.h"
#include "model/zoo_builder.h"

namespace poseidon::model {

using zoo_builder::Activation;
using zoo_builder::conv;
using zoo_builder::pool;
using zoo_builder::square;

namespace {

constexpr uint64_t kAlexNetBatch = 256;  // [Poseidon 2015] Table 2
constexpr uint64_t kVggBatch = 32;       // [Poseidon ATC'17] Table 3

// fc6 (256 x 6 x 6 -> 4096), fc7 and the classifier, as both AlexNets and VGG end.
void appendClassifier(std::vector<Layer>& layers, uint64_t inputs, uint64_t classes) {
  layers.push_back(Layer::fullyConnected("fc6", 4096, inputs, true));
  layers.push_back(Layer::fullyConnected("fc7", 4096, 4096, true));
  layers.push_back(Layer::fullyConnected("fc8", classes, 4096, true));
}

}  // namespace

Model alexnet() {
  // bvlc_alexnet's deploy definition: 227 x 227 input, max pools 3 / 2 (Caffe rounds up).
  std::vector<Layer> layers;
  Activation x{3, 227, 227};
  x = conv(layers, "conv1", x, 96, square(11, 4));
  x = pool(x, square(3, 2), true);
  x = conv(layers, "conv2", x, 256, square(5, 1, 2), {.bias = true, .groups = 2});
  x = pool(x, square(3, 2), true);
  x = conv(layers, "conv3", x, 384, square(3, 1, 1));
  x = conv(layers, "conv4", x, 384, square(3, 1, 1), {.bias = true, .groups = 2});
  x = conv(layers, "conv5", x, 256, square(3, 1, 1), {.bias = true, .groups = 2});
  x = pool(x, square(3, 2), true);
  appendClassifier(layers, x.channels * x.height * x.width, kImageNetClasses);
  return Model("alexnet", std::move(layers), kAlexNetBatch, InputShape{3, 227, 227});
}

Model alexnetTorchvision() {
  std::vector<Layer> layers;
  Activation x{3, 224, 224};
  x = conv(layers, "conv1", x, 64, square(11, 4, 2));
  x = pool(x, square(3, 2));
  x = conv(layers, "conv2", x, 192, square(5, 1, 2));
  x = pool(x, square(3, 2));
  x = conv(layers, "conv3", x, 384, square(3, 1, 1));
  x = conv(layers, "conv4", x, 256, square(3, 1, 1));
  x = conv(layers, "conv5", x, 256, square(3, 1, 1));
  x = pool(x, square(3, 2));  // 6 x 6 (the adaptive pool that follows keeps it)
  appendClassifier(layers, x.channels * x.height * x.width, kImageNetClasses);
  return Model("alexnet-torchvision", std::move(layers), kAlexNetBatch, InputShape{3, 224, 224});
}

Model vgg19(uint64_t classes) {
  // Configuration E: 3x3 convolutions (pad 1) in five blocks, a 2x2 max pool after each.
  const uint64_t blocks[][4] = {
      {64, 64, 0, 0}, {128, 128, 0, 0}, {256, 256, 256, 256}, {512, 512, 512, 512}, {512, 512, 512, 512}};
  std::vector<Layer> layers;
  Activation x{3, 224, 224};
  int index = 1;
  for (const auto& block : blocks) {
    for (uint64_t channels : block) {
      if (channels != 0) x = conv(layers, fmt::format("conv{}", index++), x, channels, square(3, 1, 1));
    }
    x = pool(x, square(2, 2));
  }
  appendClassifier(layers, x.channels * x.height * x.width, classes);  // 512 x 7 x 7 = 25088
  return Model(classes == kImageNetClasses      ? "vgg19"
               : classes == kImageNet22kClasses ? "vgg19-22k"
                                                : fmt::format("vgg19-{}", classes),
               std::move(layers), kVggBatch, InputShape{3, 224, 224});
}

Model vgg19_22k() { return vgg19(kImageNet22kClasses); }

}  // namespace poseidon::model
