#include "tests/kernels/update_case.h"

#include <cmath>

#include "tests/kernels/random_values.h"

namespace poseidon::kernels {
namespace {

void fill(UnalignedBuffer& buffer, std::mt19937& random, float low, float high) {
  for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = uniformFloat(random, low, high);
}

}  // namespace

OptimizerStep testStep(ElementRule rule, int gradients, uint64_t t) {
  OptimizerStep step;
  step.lr = 0.05f;
  step.grad_scale = 1.0f / static_cast<float>(gradients);
  step.weight_decay = 0.01f;
  step.eps = 1e-3f;  // large enough that where eps sits in a formula shows in the result
  switch (rule) {
    case ElementRule::kSgd: step.kind = OptimizerKind::kSgd; break;
    case ElementRule::kSgdMomentum:
    case ElementRule::kSgdNesterov:
      step.kind = OptimizerKind::kSgd;
      step.momentum = 0.9f;
      step.nesterov = rule == ElementRule::kSgdNesterov;
      break;
    case ElementRule::kAdagrad: step.kind = OptimizerKind::kAdagrad; break;
    case ElementRule::kAdam:
      step.kind = OptimizerKind::kAdam;
      step.bias_correction1 = static_cast<float>(1.0 - std::pow(static_cast<double>(step.beta1), t + 1.0));
      step.bias_correction2 = static_cast<float>(1.0 - std::pow(static_cast<double>(step.beta2), t + 1.0));
      break;
  }
  return step;
}

std::string ruleName(ElementRule rule) {
  switch (rule) {
    case ElementRule::kSgd: return "sgd";
    case ElementRule::kSgdMomentum: return "momentum";
    case ElementRule::kSgdNesterov: return "nesterov";
    case ElementRule::kAdagrad: return "adagrad";
    case ElementRule::kAdam: return "adam";
  }
  return "unknown";
}

std::string caseName(ElementRule rule, int gradients) {
  return ruleName(rule) + "_" + std::to_string(gradients) + "grads";
}

UpdateCase::UpdateCase(ElementRule rule_, size_t count_, int gradient_count, uint32_t seed)
    : rule(rule_), count(count_), params(count_), state0(count_), state1(count_), random(seed) {
  fill(params, random, -1.0f, 1.0f);
  switch (rule) {
    case ElementRule::kSgd: break;
    case ElementRule::kSgdMomentum:
    case ElementRule::kSgdNesterov: fill(state0, random, -1.0f, 1.0f); break;
    case ElementRule::kAdagrad: fill(state0, random, 0.1f, 2.0f); break;
    case ElementRule::kAdam:
      fill(state0, random, -0.5f, 0.5f);
      fill(state1, random, 0.01f, 1.0f);
      break;
  }
  for (int k = 0; k < gradient_count; ++k) {
    gradients.emplace_back(count);
    gradient_pointers.push_back(gradients.back().data());
  }
  newGradients();
}

void UpdateCase::newGradients() {
  for (UnalignedBuffer& g : gradients) fill(g, random, -1.0f, 1.0f);
}

ChunkUpdate UpdateCase::update(uint64_t t) {
  ChunkUpdate u;
  u.params = params.data();
  u.state0 = state0.data();
  u.state1 = state1.data();
  u.count = count;
  u.gradients = gradient_pointers;
  u.step = testStep(rule, static_cast<int>(gradients.size()), t);
  return u;
}

}  // namespace poseidon::kernels
