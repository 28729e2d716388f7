#include "trainer/reference/cuda/softmax_cross_entropy_cuda.h"

#include <string>
#include <utility>

#include "trainer/reference/cuda/cuda_status.h"
#include "trainer/reference/cuda/layer_kernels.h"

namespace poseidon::trainer::reference {

Result<std::unique_ptr<SoftmaxCrossEntropyCuda>> SoftmaxCrossEntropyCuda::create(GpuContext& context, size_t batch,
                                                                                 size_t classes) {
  std::unique_ptr<SoftmaxCrossEntropyCuda> loss(new SoftmaxCrossEntropyCuda(context, batch, classes));
  Result<FloatBlock> probabilities = context.memory().allocate(batch * classes);
  if (!probabilities.isOk()) return probabilities.status().withContext("softmax cross-entropy");
  loss->probabilities_ = std::move(probabilities).value();
  for (auto [block, bytes, what] : {std::tuple{&loss->labels_, sizeof(int32_t), "labels"},
                                    std::tuple{&loss->loss_, sizeof(double), "per-sample losses"},
                                    std::tuple{&loss->correct_, sizeof(int32_t), "per-sample hits"}}) {
    Result<DeviceBytes> allocated = DeviceBytes::allocate(batch * bytes, std::string("softmax cross-entropy ") + what);
    if (!allocated.isOk()) return allocated.status();
    *block = std::move(allocated).value();
  }
  return loss;
}

SoftmaxCrossEntropyCuda::SoftmaxCrossEntropyCuda(GpuContext& context, size_t batch, size_t classes)
    : context_(context), batch_(batch), classes_(classes), host_loss_(batch), host_correct_(batch) {}

Result<LossResult> SoftmaxCrossEntropyCuda::forward(std::span<const float> logits, std::span<const int32_t> labels) {
  have_forward_ = false;
  POSEIDON_RETURN_IF_ERROR(checkForward(logits.size(), labels));
  const cudaStream_t stream = context_.stream();
  const auto check = [](cudaError_t error, const char* what) {
    return cudaCheck(error, std::string("softmax cross-entropy: ") + what);
  };
  POSEIDON_RETURN_IF_ERROR(
      check(cudaMemcpyAsync(labels_.as<int32_t>(), labels.data(), labels.size_bytes(), cudaMemcpyHostToDevice, stream),
            "uploading the labels"));
  POSEIDON_RETURN_IF_ERROR(
      check(softmaxForwardCuda(logits.data(), labels_.as<int32_t>(), batch_, classes_, probabilities_.span().data(),
                               loss_.as<double>(), correct_.as<int32_t>(), stream),
            "forward kernel"));
  POSEIDON_RETURN_IF_ERROR(check(
      cudaMemcpyAsync(host_loss_.data(), loss_.as<double>(), batch_ * sizeof(double), cudaMemcpyDeviceToHost, stream),
      "downloading the losses"));
  POSEIDON_RETURN_IF_ERROR(check(cudaMemcpyAsync(host_correct_.data(), correct_.as<int32_t>(), batch_ * sizeof(int32_t),
                                                 cudaMemcpyDeviceToHost, stream),
                                 "downloading the hits"));
  POSEIDON_RETURN_IF_ERROR(check(cudaStreamSynchronize(stream), "waiting for the loss"));
  LossResult result;
  double total = 0.0;
  for (size_t k = 0; k < batch_; ++k) {
    total += host_loss_[k];
    result.correct += host_correct_[k] != 0 ? 1 : 0;
  }
  result.loss = total / static_cast<double>(batch_);
  have_forward_ = true;
  return result;
}

Status SoftmaxCrossEntropyCuda::backward(std::span<float> dlogits) const {
  POSEIDON_RETURN_IF_ERROR(checkBackward(have_forward_, dlogits.size()));
  return cudaCheck(softmaxBackwardCuda(probabilities_.span().data(), labels_.as<int32_t>(), batch_, classes_,
                                       dlogits.data(), context_.stream()),
                   "softmax cross-entropy: backward kernel");
}

}  // namespace poseidon::trainer::reference
