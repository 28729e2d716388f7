// ClassifierLoss: the loss on top of a Network, over its logits. SoftmaxCrossEntropy computes it
// on the host; its GPU twin reads device logits and returns the same LossResult on the host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "common/status.h"

namespace poseidon::trainer::reference {

struct LossResult {
  double loss = 0.0;   // mean over the batch
  size_t correct = 0;  // samples whose largest logit (the first, on a tie) is their label
};

class ClassifierLoss {
 public:
  virtual ~ClassifierLoss() = default;

  virtual size_t batch() const = 0;
  virtual size_t classes() const = 0;

  // logits: K x classes, in the loss's memory; labels: K values in [0, classes), on the host.
  // Fails, naming the sample and the value, on a label out of range, or on sizes that do not match.
  virtual Result<LossResult> forward(std::span<const float> logits, std::span<const int32_t> labels) = 0;
  // dL/dlogits of the last forward, K x classes, in the loss's memory.
  virtual Status backward(std::span<float> dlogits) const = 0;

 protected:
  // forward's checks: the sizes, then each label (on the host), naming the sample and the value.
  Status checkForward(size_t logits, std::span<const int32_t> labels) const;
  // backward's: a forward came first and dlogits has K x classes floats.
  Status checkBackward(bool have_forward, size_t dlogits) const;
};

}  // namespace poseidon::trainer::reference
