#include "trainer/reference/layer_kit.h"

#include "trainer/reference/fully_connected.h"
#include "trainer/reference/max_pool.h"
#include "trainer/reference/relu.h"
#include "trainer/reference/softmax_cross_entropy.h"

namespace poseidon::trainer::reference {

LayerKit referenceKit() {
  LayerKit kit;
  kit.conv = [](std::string name, size_t batch, SampleShape input, Conv2dOptions options) {
    return asLayer(Conv2d::create(std::move(name), batch, input, options));
  };
  kit.relu = [](std::string name, size_t batch, SampleShape shape) -> LayerKit::Made {
    return std::unique_ptr<Layer>(std::make_unique<Relu>(std::move(name), batch, shape));
  };
  kit.pool = [](std::string name, size_t batch, SampleShape input, size_t window) {
    return asLayer(MaxPool2d::create(std::move(name), batch, input, window));
  };
  kit.fc = [](std::string name, size_t batch, SampleShape input, size_t outputs) {
    return asLayer(FullyConnected::create(std::move(name), batch, input, outputs));
  };
  kit.loss = [](size_t batch, size_t classes) -> Result<std::unique_ptr<ClassifierLoss>> {
    return std::unique_ptr<ClassifierLoss>(std::make_unique<SoftmaxCrossEntropy>(batch, classes));
  };
  kit.memory = &hostMemory();
  return kit;
}

}  // namespace poseidon::trainer::reference
