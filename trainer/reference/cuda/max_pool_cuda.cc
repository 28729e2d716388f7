#include "trainer/reference/cuda/max_pool_cuda.h"

#include <cstdint>
#include <utility>

#include "trainer/reference/cuda/cuda_status.h"
#include "trainer/reference/max_pool.h"

namespace poseidon::trainer::reference {

Result<std::unique_ptr<MaxPool2dCuda>> MaxPool2dCuda::create(GpuContext& context, std::string name, size_t batch,
                                                             SampleShape input, size_t window) {
  POSEIDON_RETURN_IF_ERROR(checkMaxPool(name, batch, input, window));
  std::unique_ptr<MaxPool2dCuda> layer(new MaxPool2dCuda(context, std::move(name), batch, input, window));
  Result<DeviceBytes> argmax =
      DeviceBytes::allocate(layer->outputSize() * sizeof(uint32_t), "the argmax of max-pool layer " + layer->name());
  if (!argmax.isOk()) return argmax.status();
  layer->argmax_ = std::move(argmax).value();
  return layer;
}

MaxPool2dCuda::MaxPool2dCuda(GpuContext& context, std::string name, size_t batch, SampleShape input, size_t window)
    : Layer(std::move(name), batch, input, pooledShape(input, window), context.memory()),
      context_(context),
      shape_{.planes = batch * static_cast<size_t>(input.channels),
             .height = static_cast<size_t>(input.height),
             .width = static_cast<size_t>(input.width),
             .window = window,
             .out_h = static_cast<size_t>(input.height) / window,
             .out_w = static_cast<size_t>(input.width) / window} {}

Status MaxPool2dCuda::forward(std::span<const float> x, std::span<float> y) {
  POSEIDON_RETURN_IF_ERROR(checkForward(x, y));
  return cudaCheck(maxPoolForwardCuda(shape_, x.data(), y.data(), argmax_.as<uint32_t>(), context_.stream()),
                   "max-pool layer " + name() + ": forward kernel");
}

Status MaxPool2dCuda::backward(std::span<const float> x, std::span<const float> y, std::span<const float> dy,
                               std::span<float> dx) {
  POSEIDON_RETURN_IF_ERROR(checkBackward(x, y, dy, dx));
  if (dx.empty()) return Status::ok();
  return cudaCheck(maxPoolBackwardCuda(shape_, argmax_.as<uint32_t>(), dy.data(), dx.data(), context_.stream()),
                   "max-pool layer " + name() + ": backward kernel");
}

}  // namespace poseidon::trainer::reference
