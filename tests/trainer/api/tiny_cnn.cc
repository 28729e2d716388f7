#include "tests/trainer/api/tiny_cnn.h"

#include "trainer/reference/conv2d.h"
#include "trainer/reference/fashion_cnn.h"
#include "trainer/reference/fully_connected.h"
#include "trainer/reference/max_pool.h"
#include "trainer/reference/relu.h"

namespace poseidon::testing {

using namespace trainer::reference;

Result<Network> tinyCnn(size_t batch, uint64_t seed) {
  std::vector<std::unique_ptr<Layer>> layers;
  const auto add = [&layers](auto made) -> Status {
    if (!made) return made.status();
    layers.push_back(std::move(made).value());
    return Status::ok();
  };
  const auto shape = [&layers] { return layers.back()->outputShape(); };
  POSEIDON_RETURN_IF_ERROR(
      add(Conv2d::create("conv", batch, kFashionImage, {.out_channels = 8, .kernel = 5, .pad = 2})));
  layers.push_back(std::make_unique<Relu>("relu1", batch, shape()));
  POSEIDON_RETURN_IF_ERROR(add(MaxPool2d::create("pool", batch, shape())));
  POSEIDON_RETURN_IF_ERROR(add(FullyConnected::create("fc1", batch, shape(), 32)));
  layers.push_back(std::make_unique<Relu>("relu2", batch, shape()));
  POSEIDON_RETURN_IF_ERROR(add(FullyConnected::create("fc2", batch, shape(), kFashionClasses)));
  auto network = Network::create("tiny-cnn", batch, kFashionImage, std::move(layers), kFashionClasses);
  if (!network) return network.status();
  POSEIDON_RETURN_IF_ERROR(network->initialize(seed));
  return network;
}

}  // namespace poseidon::testing
