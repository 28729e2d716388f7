// SoftmaxCrossEntropy: the loss at the top of a classifier, PyTorch's nn.CrossEntropyLoss with
// its default mean over the batch.
//
// loss = (1/K) sum_k [log sum_c exp(z_kc) - z_k,label_k], computed with the row's maximum
// subtracted first so exp never overflows; dL/dz_kc = (softmax(z_k)_c - [c == label_k]) / K.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "common/status.h"
#include "trainer/reference/classifier_loss.h"

namespace poseidon::trainer::reference {

class SoftmaxCrossEntropy final : public ClassifierLoss {
 public:
  SoftmaxCrossEntropy(size_t batch, size_t classes);

  size_t batch() const override { return batch_; }
  size_t classes() const override { return classes_; }

  // logits: K x classes; labels: K values in [0, classes). Fails, naming the sample and the value,
  // on a label out of range, or on sizes that do not match.
  Result<LossResult> forward(std::span<const float> logits, std::span<const int32_t> labels) override;
  // dL/dlogits of the last forward, K x classes.
  Status backward(std::span<float> dlogits) const override;

 private:
  size_t batch_;
  size_t classes_;
  std::vector<float> probabilities_;
  std::vector<int32_t> labels_;
  bool have_forward_ = false;
};

}  // namespace poseidon::trainer::reference
