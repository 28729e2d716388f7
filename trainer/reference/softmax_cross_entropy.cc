#include "trainer/reference/softmax_cross_entropy.h"

#include <algorithm>
#include <cmath>

namespace poseidon::trainer::reference {

SoftmaxCrossEntropy::SoftmaxCrossEntropy(size_t batch, size_t classes)
    : batch_(batch), classes_(classes), probabilities_(batch * classes, 0.0f), labels_(batch, 0) {}

Result<LossResult> SoftmaxCrossEntropy::forward(std::span<const float> logits, std::span<const int32_t> labels) {
  POSEIDON_RETURN_IF_ERROR(checkForward(logits.size(), labels));
  // In double: the loss is reported, and exp / log of a double are as reproducible as of a float.
  LossResult result;
  double total = 0.0;
  for (size_t k = 0; k < batch_; ++k) {
    const float* z = logits.data() + k * classes_;
    const size_t top = static_cast<size_t>(std::max_element(z, z + classes_) - z);
    const auto max = static_cast<double>(z[top]);
    double sum = 0.0;
    for (size_t c = 0; c < classes_; ++c) sum += std::exp(static_cast<double>(z[c]) - max);
    const auto label = static_cast<size_t>(labels[k]);
    total += std::log(sum) - (static_cast<double>(z[label]) - max);
    for (size_t c = 0; c < classes_; ++c) {
      probabilities_[k * classes_ + c] = static_cast<float>(std::exp(static_cast<double>(z[c]) - max) / sum);
    }
    if (top == label) ++result.correct;
  }
  result.loss = total / static_cast<double>(batch_);
  std::copy(labels.begin(), labels.end(), labels_.begin());
  have_forward_ = true;
  return result;
}

Status SoftmaxCrossEntropy::backward(std::span<float> dlogits) const {
  POSEIDON_RETURN_IF_ERROR(checkBackward(have_forward_, dlogits.size()));
  const float scale = 1.0f / static_cast<float>(batch_);
  for (size_t k = 0; k < batch_; ++k) {
    for (size_t c = 0; c < classes_; ++c) {
      const size_t i = k * classes_ + c;
      const float hit = static_cast<size_t>(labels_[k]) == c ? 1.0f : 0.0f;
      dlogits[i] = (probabilities_[i] - hit) * scale;
    }
  }
  return Status::ok();
}

}  // namespace poseidon::trainer::reference
