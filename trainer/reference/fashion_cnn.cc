#include "trainer/reference/fashion_cnn.h"

#include <memory>
#include <vector>

#include "trainer/reference/conv2d.h"

namespace poseidon::trainer::reference {

namespace {

constexpr const char* kName = "fashion-cnn";
constexpr Conv2dOptions kConv1{.out_channels = 32, .kernel = 5, .pad = 2};
constexpr Conv2dOptions kConv2{.out_channels = 64, .kernel = 5, .pad = 2};
constexpr size_t kHidden = 512;

Status append(std::vector<std::unique_ptr<Layer>>& layers, LayerKit::Made layer) {
  if (!layer.isOk()) return layer.status();
  layers.push_back(std::move(layer).value());
  return Status::ok();
}

Result<std::vector<std::unique_ptr<Layer>>> fashionLayers(const LayerKit& kit, size_t batch) {
  std::vector<std::unique_ptr<Layer>> layers;
  const auto shape = [&layers] { return layers.back()->outputShape(); };
  POSEIDON_RETURN_IF_ERROR(append(layers, kit.conv("conv1", batch, kFashionImage, kConv1)));
  POSEIDON_RETURN_IF_ERROR(append(layers, kit.relu("relu1", batch, shape())));
  POSEIDON_RETURN_IF_ERROR(append(layers, kit.pool("pool1", batch, shape(), 2)));
  POSEIDON_RETURN_IF_ERROR(append(layers, kit.conv("conv2", batch, shape(), kConv2)));
  POSEIDON_RETURN_IF_ERROR(append(layers, kit.relu("relu2", batch, shape())));
  POSEIDON_RETURN_IF_ERROR(append(layers, kit.pool("pool2", batch, shape(), 2)));
  POSEIDON_RETURN_IF_ERROR(append(layers, kit.fc("fc1", batch, shape(), kHidden)));
  POSEIDON_RETURN_IF_ERROR(append(layers, kit.relu("relu3", batch, shape())));
  POSEIDON_RETURN_IF_ERROR(append(layers, kit.fc("fc2", batch, shape(), kFashionClasses)));
  return layers;
}

}  // namespace

Result<Network> buildFashionCnn(size_t batch, uint64_t seed) { return buildFashionCnn(referenceKit(), batch, seed); }

Result<Network> buildFashionCnn(const LayerKit& kit, size_t batch, uint64_t seed) {
  Result<std::vector<std::unique_ptr<Layer>>> layers = fashionLayers(kit, batch);
  if (!layers.isOk()) return layers.status();
  Result<std::unique_ptr<ClassifierLoss>> loss = kit.loss(batch, kFashionClasses);
  if (!loss.isOk()) return loss.status();
  Result<Network> network =
      Network::create(kName, batch, kFashionImage, std::move(layers).value(), std::move(loss).value(), *kit.memory);
  if (!network.isOk()) return network;
  POSEIDON_RETURN_IF_ERROR(network->initialize(seed));
  return network;
}

model::Model fashionCnnModel(size_t batch) {
  // The shapes follow from the options above; written out here so describing the model does not
  // allocate a network's buffers.
  const auto conv = [](const char* name, const Conv2dOptions& options, uint64_t in, uint64_t side) {
    return model::Layer::convolution(name, model::ConvShape{.out_channels = options.out_channels,
                                                            .in_channels = in,
                                                            .kernel_h = options.kernel,
                                                            .kernel_w = options.kernel,
                                                            .out_h = side,
                                                            .out_w = side,
                                                            .bias = true});
  };
  const uint64_t side1 = kFashionImage.height;  // "same" padding keeps the side; each pool halves it
  const uint64_t side2 = side1 / 2;
  const uint64_t flat = kConv2.out_channels * (side2 / 2) * (side2 / 2);
  return model::Model(
      kName,
      {conv("conv1", kConv1, kFashionImage.channels, side1), conv("conv2", kConv2, kConv1.out_channels, side2),
       model::Layer::fullyConnected("fc1", kHidden, flat, /*bias=*/true),
       model::Layer::fullyConnected("fc2", kFashionClasses, kHidden, /*bias=*/true)},
      batch, kFashionImage);
}

}  // namespace poseidon::trainer::reference
