#include "trainer/reference/classifier_loss.h"

namespace poseidon::trainer::reference {

Status ClassifierLoss::checkForward(size_t logits, std::span<const int32_t> labels) const {
  if (logits != batch() * classes() || labels.size() != batch()) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "softmax cross-entropy: {} logits and {} labels, expected {} and {} (batch {} x {} classes)",
                      logits, labels.size(), batch() * classes(), batch(), batch(), classes());
  }
  for (size_t k = 0; k < batch(); ++k) {
    if (labels[k] < 0 || static_cast<size_t>(labels[k]) >= classes()) {
      return makeStatus(StatusCode::kInvalidArgument, "softmax cross-entropy: sample {} has label {}, expected 0..{}",
                        k, labels[k], classes() - 1);
    }
  }
  return Status::ok();
}

Status ClassifierLoss::checkBackward(bool have_forward, size_t dlogits) const {
  if (have_forward && dlogits == batch() * classes()) return Status::ok();
  return makeStatus(StatusCode::kInvalidArgument,
                    "softmax cross-entropy backward: {} floats for the gradient, expected {}{}", dlogits,
                    batch() * classes(), have_forward ? "" : ", and no forward came first");
}

}  // namespace poseidon::trainer::reference
