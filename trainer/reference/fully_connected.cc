#include "trainer/reference/fully_connected.h"

#include <algorithm>

#include "trainer/reference/batch_sums.h"
#include "trainer/reference/blas.h"

namespace poseidon::trainer::reference {

Status checkFullyConnected(const std::string& name, size_t batch, SampleShape input, size_t outputs) {
  if (batch == 0 || sampleSize(input) == 0 || outputs == 0) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "fc layer {}: batch {}, input {} x {} x {}, {} outputs: expected every size >= 1", name, batch,
                      input.channels, input.height, input.width, outputs);
  }
  return Status::ok();
}

Result<std::unique_ptr<FullyConnected>> FullyConnected::create(std::string name, size_t batch, SampleShape input,
                                                               size_t outputs) {
  POSEIDON_RETURN_IF_ERROR(checkFullyConnected(name, batch, input, outputs));
  std::unique_ptr<FullyConnected> layer(new FullyConnected(std::move(name), batch, input, outputs));
  POSEIDON_RETURN_IF_ERROR(layer->allocateParameters());
  return layer;
}

FullyConnected::FullyConnected(std::string name, size_t batch, SampleShape input, size_t outputs)
    : ParametricLayer(std::move(name), batch, input, SampleShape{outputs, 1, 1}, outputs * sampleSize(input), outputs,
                      sampleSize(input)),
      inputs_(sampleSize(input)),
      outputs_(outputs),
      saved_input_(batch * sampleSize(input), 0.0f) {}

std::optional<model::Layer> FullyConnected::describe() const {
  return model::Layer::fullyConnected(name(), outputs_, inputs_, /*bias=*/true);
}

Status FullyConnected::forward(std::span<const float> x, std::span<float> y) {
  POSEIDON_RETURN_IF_ERROR(checkForward(x, y));
  std::copy(x.begin(), x.end(), saved_input_.begin());
  // Each row of y starts as the bias; the product is added onto it (beta = 1).
  const std::span<const float> b = bias();
  for (size_t k = 0; k < batch(); ++k) std::copy(b.begin(), b.end(), y.begin() + static_cast<ptrdiff_t>(k * outputs_));
  // y (K x M) += x (K x N) . W^T (N x M)
  gemm(batch(), outputs_, inputs_, {x.data(), inputs_}, {weight().data(), inputs_, true}, 1.0f, y.data(), outputs_);
  return Status::ok();
}

Status FullyConnected::backward(std::span<const float> x, std::span<const float> y, std::span<const float> dy,
                                std::span<float> dx) {
  POSEIDON_RETURN_IF_ERROR(checkBackward(x, y, dy, dx));
  output_gradient_ = dy;
  if (!dx.empty()) {
    // dX (K x N) = dY (K x M) . W (M x N)
    gemm(batch(), inputs_, outputs_, {dy.data(), outputs_}, {weight().data(), inputs_}, 0.0f, dx.data(), inputs_);
  }
  if (form_weight_gradient_) {
    // dW (M x N) = dY^T (M x K) . X (K x N), from the saved copy of X.
    gemm(outputs_, inputs_, batch(), {dy.data(), outputs_, true}, {saved_input_.data(), inputs_}, 0.0f,
         weightGrad().data(), inputs_);
  }
  sumOverBatch(dy, batch(), outputs_, 1, biasGrad());
  return Status::ok();
}

}  // namespace poseidon::trainer::reference
