#include "trainer/reference/cuda/fully_connected_cuda.h"

#include <utility>
#include <vector>

#include "trainer/reference/cuda/gemm_cuda.h"
#include "trainer/reference/fully_connected.h"

namespace poseidon::trainer::reference {

Result<std::unique_ptr<FullyConnectedCuda>> FullyConnectedCuda::create(GpuContext& context, std::string name,
                                                                       size_t batch, SampleShape input,
                                                                       size_t outputs) {
  POSEIDON_RETURN_IF_ERROR(checkFullyConnected(name, batch, input, outputs));
  std::unique_ptr<FullyConnectedCuda> layer(new FullyConnectedCuda(context, std::move(name), batch, input, outputs));
  POSEIDON_RETURN_IF_ERROR(layer->allocateParameters());
  POSEIDON_RETURN_IF_ERROR(layer->allocateBuffers());
  return layer;
}

FullyConnectedCuda::FullyConnectedCuda(GpuContext& context, std::string name, size_t batch, SampleShape input,
                                       size_t outputs)
    : ParametricLayer(std::move(name), batch, input, SampleShape{outputs, 1, 1}, outputs * sampleSize(input), outputs,
                      sampleSize(input), context.memory()),
      context_(context),
      inputs_(sampleSize(input)),
      outputs_(outputs) {}

Status FullyConnectedCuda::allocateBuffers() {
  Result<FloatBlock> saved = memory().allocate(batch() * inputs_);
  if (!saved.isOk()) return saved.status().withContext("fc layer " + name());
  saved_input_ = std::move(saved).value();
  Result<FloatBlock> ones = memory().allocate(batch());
  if (!ones.isOk()) return ones.status().withContext("fc layer " + name());
  ones_ = std::move(ones).value();
  return memory().upload(std::vector<float>(batch(), 1.0f), ones_.span()).withContext("fc layer " + name());
}

std::optional<model::Layer> FullyConnectedCuda::describe() const {
  return model::Layer::fullyConnected(name(), outputs_, inputs_, /*bias=*/true);
}

Status FullyConnectedCuda::forward(std::span<const float> x, std::span<float> y) {
  POSEIDON_RETURN_IF_ERROR(checkForward(x, y));
  POSEIDON_RETURN_IF_ERROR(memory().copy(x, saved_input_.span()).withContext("fc layer " + name()));
  cublasHandle_t h = context_.cublas();
  // y (K x M) = ones (K x 1) . b (1 x M): each row starts as the bias, as on the CPU.
  POSEIDON_RETURN_IF_ERROR(gemmCuda(h, batch(), outputs_, 1, {ones_.span().data(), 1}, {bias().data(), outputs_}, 0.0f,
                                    y.data(), outputs_, "fc forward: bias"));
  // y (K x M) += x (K x N) . W^T (N x M)
  return gemmCuda(h, batch(), outputs_, inputs_, {x.data(), inputs_}, {weight().data(), inputs_, true}, 1.0f, y.data(),
                  outputs_, "fc forward: x W^T");
}

Status FullyConnectedCuda::backward(std::span<const float> x, std::span<const float> y, std::span<const float> dy,
                                    std::span<float> dx) {
  POSEIDON_RETURN_IF_ERROR(checkBackward(x, y, dy, dx));
  output_gradient_ = dy;
  cublasHandle_t h = context_.cublas();
  if (!dx.empty()) {
    // dX (K x N) = dY (K x M) . W (M x N)
    POSEIDON_RETURN_IF_ERROR(gemmCuda(h, batch(), inputs_, outputs_, {dy.data(), outputs_}, {weight().data(), inputs_},
                                      0.0f, dx.data(), inputs_, "fc backward: dY W"));
  }
  if (form_weight_gradient_) {
    // dW (M x N) = dY^T (M x K) . X (K x N), from the saved copy of X.
    POSEIDON_RETURN_IF_ERROR(gemmCuda(h, outputs_, inputs_, batch(), {dy.data(), outputs_, true},
                                      {saved_input_.span().data(), inputs_}, 0.0f, weightGrad().data(), inputs_,
                                      "fc backward: dY^T X"));
  }
  // db (M x 1) = dY^T (M x K) . ones (K x 1)
  return gemmCuda(h, outputs_, 1, batch(), {dy.data(), outputs_, true}, {ones_.span().data(), 1}, 0.0f,
                  biasGrad().data(), 1, "fc backward: bias sums");
}

}  // namespace poseidon::trainer::reference
