// One chunk update's host buffers filled with random values, for the kernel suites.
//
// Every buffer starts one float past an allocation, so the kernels see pointers that are not
// 16-byte aligned. Values stay in ranges that keep each optimizer well conditioned (Adagrad's
// and Adam's denominators away from 0), so a tolerance can be stated from float epsilon.
#pragma once

#include <cstdint>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "kernels/chunk_update.h"
#include "kernels/optimizer_element.h"

namespace poseidon::kernels {

class UnalignedBuffer {
 public:
  explicit UnalignedBuffer(size_t count) : storage_(count + 1) {}
  float* data() { return storage_.data() + 1; }
  const float* data() const { return storage_.data() + 1; }
  size_t size() const { return storage_.size() - 1; }
  float& operator[](size_t i) { return data()[i]; }
  float operator[](size_t i) const { return data()[i]; }

 private:
  std::vector<float> storage_;
};

inline constexpr ElementRule kAllRules[] = {ElementRule::kSgd, ElementRule::kSgdMomentum, ElementRule::kSgdNesterov,
                                            ElementRule::kAdagrad, ElementRule::kAdam};

// The step a rule is tested with at step t: lr 0.05, weight decay 0.01, the mean of `gradients`
// workers, momentum 0.9, eps 1e-3, Adam's usual betas and bias corrections for t + 1.
OptimizerStep testStep(ElementRule rule, int gradients, uint64_t t);

// "sgd", "momentum", "nesterov", "adagrad", "adam": for test names.
std::string ruleName(ElementRule rule);
// "adam_3grads": a parameterised test's name.
std::string caseName(ElementRule rule, int gradients);
// GoogleTest prints parameters with it (found by argument-dependent lookup).
inline void PrintTo(ElementRule rule, std::ostream* out) { *out << ruleName(rule); }

struct UpdateCase {
  UpdateCase(ElementRule rule, size_t count, int gradients, uint32_t seed);
  UpdateCase(const UpdateCase&) = delete;  // gradient_pointers point into this object's buffers
  UpdateCase& operator=(const UpdateCase&) = delete;

  // New gradients for the next step, as each step of training brings.
  void newGradients();
  // The update of step t over these buffers.
  ChunkUpdate update(uint64_t t);

  ElementRule rule;
  size_t count;
  UnalignedBuffer params;
  UnalignedBuffer state0;
  UnalignedBuffer state1;
  std::vector<UnalignedBuffer> gradients;
  std::vector<const float*> gradient_pointers;
  std::mt19937 random;
};

}  // namespace poseidon::kernels
