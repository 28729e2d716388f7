#include "trainer/reference/cuda/relu_cuda.h"

#include <utility>

#include "trainer/reference/cuda/cuda_status.h"
#include "trainer/reference/cuda/layer_kernels.h"

namespace poseidon::trainer::reference {

ReluCuda::ReluCuda(GpuContext& context, std::string name, size_t batch, SampleShape shape)
    : Layer(std::move(name), batch, shape, shape, context.memory()), context_(context) {}

Status ReluCuda::forward(std::span<const float> x, std::span<float> y) {
  POSEIDON_RETURN_IF_ERROR(checkForward(x, y));
  return cudaCheck(reluForwardCuda(x.data(), y.data(), x.size(), context_.stream()),
                   "relu layer " + name() + ": forward kernel");
}

Status ReluCuda::backward(std::span<const float> x, std::span<const float> y, std::span<const float> dy,
                          std::span<float> dx) {
  POSEIDON_RETURN_IF_ERROR(checkBackward(x, y, dy, dx));
  if (dx.empty()) return Status::ok();
  return cudaCheck(reluBackwardCuda(y.data(), dy.data(), dx.data(), dx.size(), context_.stream()),
                   "relu layer " + name() + ": backward kernel");
}

}  // namespace poseidon::trainer::reference
