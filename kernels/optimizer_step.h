// OptimizerStep: the scalars of one fused optimizer step over a chunk.
//
// The caller (the parameter server, or an SFB peer) turns its optimizer configuration and the
// chunk's step count into these numbers once per chunk update; the element functions then read
// each parameter, state word and gradient once and write each parameter and state word once.
#pragma once

#include <cstdint>

namespace poseidon::kernels {

enum class OptimizerKind : uint8_t { kSgd = 1, kAdagrad = 2, kAdam = 3 };

struct OptimizerStep {
  OptimizerKind kind = OptimizerKind::kSgd;
  float lr = 0.01f;           // this step's learning rate (after the schedule)
  float grad_scale = 1.0f;    // multiplies the summed gradient (1/P for the mean)
  float weight_decay = 0.0f;  // L2: g += weight_decay * w, before the optimizer
  // SGD
  float momentum = 0.0f;  // 0: plain SGD, no state
  bool nesterov = false;
  // Adagrad and Adam
  float eps = 1e-8f;
  // Adam: bias corrections 1 - beta^t for this step t (>= 1), computed by the caller in double.
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float bias_correction1 = 1.0f;
  float bias_correction2 = 1.0f;
};

// State words each parameter needs: SGD with momentum 1 (velocity), plain SGD 0, Adagrad 1
// (sum of squares), Adam 2 (first and second moment).
constexpr int stateWords(OptimizerKind kind, float momentum) {
  switch (kind) {
    case OptimizerKind::kSgd: return momentum != 0.0f ? 1 : 0;
    case OptimizerKind::kAdagrad: return 1;
    case OptimizerKind::kAdam: return 2;
  }
  return 0;
}

// "sgd", "adagrad" or "adam"; nullptr for a value outside the enum (a corrupt step).
constexpr const char* kindName(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kSgd: return "sgd";
    case OptimizerKind::kAdagrad: return "adagrad";
    case OptimizerKind::kAdam: return "adam";
  }
  return nullptr;
}

}  // namespace poseidon::kernels
