#include "tests/trainer/api/tiny_cnn.h"

#include "trainer/reference/conv2d.h"
#include "trainer/reference/fashion_cnn.h"
#include "trainer/reference/fully_connected.h"
#include "trainer/reference/max_pool.h"
#include "trainer/reference/relu.h"

namespace poseidon::testing {

using namespace trainer::reference;

namespace {

Result<Network> buildTinyCnn(size_t batch, uint64_t seed, int convolutions) {
  std::vector<std::unique_ptr<Layer>> layers;
  const auto add = [&layers](auto made) -> Status {
    if (!made) return made.status();
    layers.push_back(std::move(made).value());
    return Status::ok();
  };
  const auto shape = [&layers] { return layers.back()->outputShape(); };
  for (int c = 1; c <= convolutions; ++c) {
    // The first keeps the historical names ("conv", "relu1", "pool") the single-conv tests use.
    const bool first = c == 1;
    const std::string suffix = convolutions == 1 ? "" : std::to_string(c);
    const SampleShape in = first ? kFashionImage : shape();
    POSEIDON_RETURN_IF_ERROR(
        add(Conv2d::create("conv" + suffix, batch, in, {.out_channels = 8, .kernel = 5, .pad = 2})));
    layers.push_back(std::make_unique<Relu>(convolutions == 1 ? "relu1" : "relu_conv" + suffix, batch, shape()));
    POSEIDON_RETURN_IF_ERROR(add(MaxPool2d::create("pool" + suffix, batch, shape())));
  }
  POSEIDON_RETURN_IF_ERROR(add(FullyConnected::create("fc1", batch, shape(), 32)));
  layers.push_back(std::make_unique<Relu>("relu2", batch, shape()));
  POSEIDON_RETURN_IF_ERROR(add(FullyConnected::create("fc2", batch, shape(), kFashionClasses)));
  auto network = Network::create("tiny-cnn", batch, kFashionImage, std::move(layers), kFashionClasses);
  if (!network) return network.status();
  POSEIDON_RETURN_IF_ERROR(network->initialize(seed));
  return network;
}

}  // namespace

Result<Network> tinyCnn(size_t batch, uint64_t seed) { return buildTinyCnn(batch, seed, 1); }

Result<Network> tinyCnnTwoConvs(size_t batch, uint64_t seed) { return buildTinyCnn(batch, seed, 2); }

}  // namespace poseidon::testing
