// Element functions: one optimizer step of one parameter, given its summed gradient.
//
// The CPU twin (kernels/cpu/chunk_update.cc), the CUDA kernel (kernels/cuda/chunk_update.cu) and
// anyone who must reproduce a server's update (an SFB peer, a test) call these same functions, so
// they all evaluate the same float expressions in the same order. Identical bits then only need
// the compilers not to fuse a*b+c into an FMA (kernels/CMakeLists.txt turns contraction off) and
// IEEE division and square root on the GPU (nvcc's defaults without --use_fast_math).
//
// Each function reads the parameter and each state word once and writes each once; every
// quantity stays float.
#pragma once

#include <math.h>  // sqrtf: one name for host and device code

#include <cstddef>
#include <type_traits>

#include "kernels/optimizer_step.h"

#if defined(__CUDACC__)
#define POSEIDON_HD __host__ __device__
#else
#define POSEIDON_HD
#endif

namespace poseidon::kernels {

// The gradient the optimizer sees: the summed gradient scaled (1/P for the mean) plus L2 decay.
POSEIDON_HD inline float decayedGradient(float g, float w, const OptimizerStep& s) {
  return g * s.grad_scale + s.weight_decay * w;
}

// SGD without momentum: w -= lr * g; no state.
POSEIDON_HD inline void sgdElement(float g, float& w, const OptimizerStep& s) {
  const float w0 = w;
  const float d = decayedGradient(g, w0, s);
  w = w0 - s.lr * d;
}

// SGD with momentum: v = m v + g, then w -= lr v, or with Nesterov w -= lr (g + m v).
template <bool kNesterov>
POSEIDON_HD inline void sgdMomentumElement(float g, float& w, float& velocity, const OptimizerStep& s) {
  const float w0 = w;
  const float d = decayedGradient(g, w0, s);
  const float v = s.momentum * velocity + d;
  velocity = v;
  if constexpr (kNesterov) {
    w = w0 - s.lr * (d + s.momentum * v);
  } else {
    w = w0 - s.lr * v;
  }
}

// Adagrad: acc += g^2; w -= lr g / (sqrt(acc) + eps).
POSEIDON_HD inline void adagradElement(float g, float& w, float& accumulator, const OptimizerStep& s) {
  const float w0 = w;
  const float d = decayedGradient(g, w0, s);
  const float acc = accumulator + d * d;
  accumulator = acc;
  w = w0 - s.lr * d / (sqrtf(acc) + s.eps);
}

// Adam: m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2; w -= lr (m / bc1) / (sqrt(v / bc2) + eps).
POSEIDON_HD inline void adamElement(float g, float& w, float& moment1, float& moment2, const OptimizerStep& s) {
  const float w0 = w;
  const float d = decayedGradient(g, w0, s);
  const float m = s.beta1 * moment1 + (1.0f - s.beta1) * d;
  const float v = s.beta2 * moment2 + (1.0f - s.beta2) * d * d;
  moment1 = m;
  moment2 = v;
  w = w0 - s.lr * (m / s.bias_correction1) / (sqrtf(v / s.bias_correction2) + s.eps);
}

// Which element function a step uses. Chosen once per chunk so that the per-element loop has no
// branch on the optimizer (the CPU loop vectorises, the GPU warp never diverges).
enum class ElementRule : uint8_t { kSgd, kSgdMomentum, kSgdNesterov, kAdagrad, kAdam };

POSEIDON_HD inline ElementRule elementRule(const OptimizerStep& s) {
  switch (s.kind) {
    case OptimizerKind::kAdagrad: return ElementRule::kAdagrad;
    case OptimizerKind::kAdam: return ElementRule::kAdam;
    case OptimizerKind::kSgd: break;
  }
  // Momentum 0 has no velocity (stateWords() == 0), so Nesterov degenerates to plain SGD.
  if (s.momentum == 0.0f) return ElementRule::kSgd;
  return s.nesterov ? ElementRule::kSgdNesterov : ElementRule::kSgdMomentum;
}

// Element i of a chunk under rule R; state pointers the rule does not use may be null.
template <ElementRule R>
POSEIDON_HD inline void updateElementAt(float g, size_t i, float* w, float* state0, float* state1,
                                        const OptimizerStep& s) {
  if constexpr (R == ElementRule::kSgd) {
    sgdElement(g, w[i], s);
  } else if constexpr (R == ElementRule::kSgdMomentum) {
    sgdMomentumElement<false>(g, w[i], state0[i], s);
  } else if constexpr (R == ElementRule::kSgdNesterov) {
    sgdMomentumElement<true>(g, w[i], state0[i], s);
  } else if constexpr (R == ElementRule::kAdagrad) {
    adagradElement(g, w[i], state0[i], s);
  } else {
    adamElement(g, w[i], state0[i], state1[i], s);
  }
}

// Calls f(std::integral_constant<ElementRule, rule>{}) so a launcher can instantiate its loop or
// kernel for the rule chosen at run time: withElementRule(rule, [&](auto r) { run<decltype(r)::value>(); }).
template <typename F>
decltype(auto) withElementRule(ElementRule rule, F&& f) {
  switch (rule) {
    case ElementRule::kSgd: return f(std::integral_constant<ElementRule, ElementRule::kSgd>{});
    case ElementRule::kSgdMomentum: return f(std::integral_constant<ElementRule, ElementRule::kSgdMomentum>{});
    case ElementRule::kSgdNesterov: return f(std::integral_constant<ElementRule, ElementRule::kSgdNesterov>{});
    case ElementRule::kAdagrad: return f(std::integral_constant<ElementRule, ElementRule::kAdagrad>{});
    case ElementRule::kAdam: break;
  }
  return f(std::integral_constant<ElementRule, ElementRule::kAdam>{});
}

}  // namespace poseidon::kernels
