#include "trainer/reference/cuda/layer_kit_cuda.h"

#include <memory>
#include <utility>

#include "trainer/reference/cuda/conv2d_cuda.h"
#include "trainer/reference/cuda/fully_connected_cuda.h"
#include "trainer/reference/cuda/max_pool_cuda.h"
#include "trainer/reference/cuda/relu_cuda.h"
#include "trainer/reference/cuda/softmax_cross_entropy_cuda.h"

namespace poseidon::trainer::reference {

LayerKit cudaKit(GpuContext& context) {
  GpuContext* c = &context;
  LayerKit kit;
  kit.conv = [c](std::string name, size_t batch, SampleShape input, Conv2dOptions options) {
    return asLayer(Conv2dCuda::create(*c, std::move(name), batch, input, options));
  };
  kit.relu = [c](std::string name, size_t batch, SampleShape shape) -> LayerKit::Made {
    return std::unique_ptr<Layer>(std::make_unique<ReluCuda>(*c, std::move(name), batch, shape));
  };
  kit.pool = [c](std::string name, size_t batch, SampleShape input, size_t window) {
    return asLayer(MaxPool2dCuda::create(*c, std::move(name), batch, input, window));
  };
  kit.fc = [c](std::string name, size_t batch, SampleShape input, size_t outputs) {
    return asLayer(FullyConnectedCuda::create(*c, std::move(name), batch, input, outputs));
  };
  kit.loss = [c](size_t batch, size_t classes) -> Result<std::unique_ptr<ClassifierLoss>> {
    Result<std::unique_ptr<SoftmaxCrossEntropyCuda>> loss = SoftmaxCrossEntropyCuda::create(*c, batch, classes);
    if (!loss.isOk()) return loss.status();
    return std::unique_ptr<ClassifierLoss>(std::move(loss).value());
  };
  kit.memory = &context.memory();
  return kit;
}

}  // namespace poseidon::trainer::reference
