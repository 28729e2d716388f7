#include "tests/kernels/reference.h"

#include <cfloat>
#include <cmath>

namespace poseidon::kernels {

ExpectedElement reference(ElementRule rule, const OptimizerStep& step, double sum, double sum_abs, double w, double s0,
                          double s1) {
  const double lr = step.lr, m = step.momentum, eps = step.eps;
  const double d = sum * step.grad_scale + step.weight_decay * w;
  const double d_abs = sum_abs * step.grad_scale + step.weight_decay * std::abs(w);
  ExpectedElement e;
  switch (rule) {
    case ElementRule::kSgd: e.w = {w - lr * d, std::abs(w) + lr * d_abs}; break;
    case ElementRule::kSgdMomentum:
    case ElementRule::kSgdNesterov: {
      e.state0 = {m * s0 + d, m * std::abs(s0) + d_abs};
      if (rule == ElementRule::kSgdMomentum) {
        e.w = {w - lr * e.state0.value, std::abs(w) + lr * e.state0.scale};
      } else {
        e.w = {w - lr * (d + m * e.state0.value), std::abs(w) + lr * (d_abs + m * e.state0.scale)};
      }
      break;
    }
    case ElementRule::kAdagrad: {
      e.state0 = {s0 + d * d, s0 + d_abs * d_abs};
      const double denominator = std::sqrt(e.state0.value) + eps;
      // The accumulator's relative error reaches w through the square root and the division.
      const double relative_acc = e.state0.scale / e.state0.value;
      e.w = {w - lr * d / denominator, std::abs(w) + lr * (d_abs + std::abs(d) * relative_acc) / denominator};
      break;
    }
    case ElementRule::kAdam: {
      const double b1 = step.beta1, b2 = step.beta2, bc1 = step.bias_correction1, bc2 = step.bias_correction2;
      e.state0 = {b1 * s0 + (1 - b1) * d, b1 * std::abs(s0) + (1 - b1) * d_abs};
      e.state1 = {b2 * s1 + (1 - b2) * d * d, b2 * s1 + (1 - b2) * d_abs * d_abs};
      const double denominator = std::sqrt(e.state1.value / bc2) + eps;
      const double relative_v = e.state1.scale / e.state1.value;
      e.w = {w - lr * (e.state0.value / bc1) / denominator,
             std::abs(w) + lr * (e.state0.scale / bc1 + std::abs(e.state0.value / bc1) * relative_v) / denominator};
      break;
    }
  }
  return e;
}

double updateTolerance(size_t terms) { return (static_cast<double>(terms) + 16.0) * FLT_EPSILON; }

void OutputCheck::check(size_t i, float got, const Expected& want) {
  const double error = std::abs(static_cast<double>(got) - want.value);
  if (error <= tolerance_ * want.scale) return;
  if (failures_++ == 0) {
    first_ = (::testing::Message() << name_ << "[" << i << "] = " << got << ", reference " << want.value << ", error "
                                   << error << " > " << tolerance_ * want.scale)
                 .GetString();
  }
}

::testing::AssertionResult OutputCheck::result() const {
  if (failures_ == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << failures_ << " element(s) off; first " << first_;
}

void expectMatchesReference(ElementRule rule, const OptimizerStep& step, size_t count, size_t terms,
                            const ExactSums& sums, UpdateBuffers before, UpdateBuffers after,
                            const std::string& context) {
  const int words = stateWords(step.kind, step.momentum);
  const double tolerance = updateTolerance(terms);
  OutputCheck params("params", tolerance), state0("state0", tolerance), state1("state1", tolerance);
  for (size_t i = 0; i < count; ++i) {
    const auto [sum, sum_abs] = sums(i);
    const double s0 = words >= 1 ? before.state0[i] : 0.0, s1 = words >= 2 ? before.state1[i] : 0.0;
    const ExpectedElement e = reference(rule, step, sum, sum_abs, before.params[i], s0, s1);
    params.check(i, after.params[i], e.w);
    if (words >= 1) state0.check(i, after.state0[i], e.state0);
    if (words >= 2) state1.check(i, after.state1[i], e.state1);
  }
  EXPECT_TRUE(params.result()) << context;
  EXPECT_TRUE(state0.result()) << context;
  EXPECT_TRUE(state1.result()) << context;
}

}  // namespace poseidon::kernels
