// FactorSource: what a fully-connected layer offers a library that syncs it by sufficient
// factors ([Poseidon 2015] section 3.2, [Poseidon ATC'17] section 3.2): a mode in which backward
// skips dW, and where the factors are. FullyConnected and its GPU twin both implement it, so a
// Network finds the factors of either the same way.
#pragma once

#include <span>

namespace poseidon::trainer::reference {

class FactorSource {
 public:
  // false: backward leaves the weight's gradient untouched (factors-only mode).
  virtual void setFormWeightGradient(bool form) = 0;
  virtual bool formsWeightGradient() const = 0;
  // The last forward's input X, K x N row-major (V^T), in the layer's own memory: the span is
  // the same for the layer's life, and the layer below may overwrite its own output meanwhile.
  virtual std::span<const float> savedInput() const = 0;

 protected:
  ~FactorSource() = default;
};

}  // namespace poseidon::trainer::reference
