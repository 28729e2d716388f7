#include "kernels/optimizer_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>

namespace poseidon::kernels {

namespace {

// Range checks of validate(): each names the field, its value and the accepted range.
Status atLeast(const char* field, double value, double min) {
  if (std::isfinite(value) && value >= min) return Status::ok();
  return makeStatus(StatusCode::kInvalidArgument, "optimizer {} {:.9g} is not a finite value >= {:.9g}", field, value,
                    min);
}

Status positive(const char* field, double value) {
  if (std::isfinite(value) && value > 0) return Status::ok();
  return makeStatus(StatusCode::kInvalidArgument, "optimizer {} {:.9g} is not a finite value > 0", field, value);
}

// [0, 1): a decay rate (momentum, Adam's betas).
Status unitInterval(const char* field, double value) {
  if (value >= 0 && value < 1) return Status::ok();
  return makeStatus(StatusCode::kInvalidArgument, "optimizer {} {:.9g} is not in [0, 1)", field, value);
}

Status validateSchedule(const LrSchedule& s) {
  POSEIDON_RETURN_IF_ERROR(atLeast("lr", s.base_lr, 0));
  switch (s.kind) {
    case LrSchedule::Kind::kConstant: return Status::ok();
    case LrSchedule::Kind::kStep:
      if (s.step_size == 0) {
        return makeStatus(StatusCode::kInvalidArgument, "optimizer step_size 0 is not > 0 (needed by schedule=step)");
      }
      if (!(s.gamma > 0 && s.gamma <= 1)) {
        return makeStatus(StatusCode::kInvalidArgument, "optimizer gamma {:.9g} is not in (0, 1]", s.gamma);
      }
      return Status::ok();
    case LrSchedule::Kind::kPoly:
    case LrSchedule::Kind::kCosine:
      if (s.max_steps == 0) {
        return makeStatus(StatusCode::kInvalidArgument, "optimizer max_steps 0 is not > 0 (needed by schedule={})",
                          scheduleName(s.kind));
      }
      if (s.kind == LrSchedule::Kind::kPoly) return positive("power", s.power);
      if (!(s.min_lr >= 0 && s.min_lr <= s.base_lr)) {
        return makeStatus(StatusCode::kInvalidArgument, "optimizer min_lr {:.9g} is not in [0, lr = {:.9g}]", s.min_lr,
                          s.base_lr);
      }
      return Status::ok();
  }
  return makeStatus(StatusCode::kInvalidArgument,
                    "optimizer schedule {} is not constant (0), step (1), poly (2) or "
                    "cosine (3)",
                    static_cast<int>(s.kind));
}

}  // namespace

double LrSchedule::at(uint64_t t) const {
  switch (kind) {
    case Kind::kConstant: return base_lr;
    case Kind::kStep:
      if (step_size == 0) return base_lr;
      return base_lr * std::pow(gamma, static_cast<double>(t / step_size));
    case Kind::kPoly:
    case Kind::kCosine: {
      if (max_steps == 0) return base_lr;
      // Past max_steps the schedule holds its final value.
      const double progress = static_cast<double>(std::min(t, max_steps)) / static_cast<double>(max_steps);
      if (kind == Kind::kPoly) return base_lr * std::pow(1.0 - progress, power);
      return min_lr + (base_lr - min_lr) * (1.0 + std::cos(std::numbers::pi * progress)) / 2.0;
    }
  }
  return base_lr;
}

Status OptimizerConfig::validate() const {
  if (kernels::kindName(kind) == nullptr) {
    return makeStatus(StatusCode::kInvalidArgument, "optimizer kind {} is not sgd (1), adagrad (2) or adam (3)",
                      static_cast<int>(kind));
  }
  POSEIDON_RETURN_IF_ERROR(validateSchedule(lr));
  if (sum_only && (kind != OptimizerKind::kSgd || momentum != 0.0f || weight_decay != 0.0f || nesterov ||
                   lr.kind != LrSchedule::Kind::kConstant)) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "optimizer sum takes no optimizer settings (got {} momentum {:.9g} wd {:.9g} schedule {}): "
                      "the workers run the optimizer",
                      optimizerName(kind), momentum, weight_decay, scheduleName(lr.kind));
  }
  POSEIDON_RETURN_IF_ERROR(positive("grad_scale", grad_scale));
  POSEIDON_RETURN_IF_ERROR(atLeast("wd", weight_decay, 0));
  POSEIDON_RETURN_IF_ERROR(unitInterval("momentum", momentum));
  if (nesterov && (kind != OptimizerKind::kSgd || momentum == 0.0f)) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "optimizer nesterov needs sgd with momentum in (0, 1), not {} with momentum {:.9g}",
                      optimizerName(kind), momentum);
  }
  POSEIDON_RETURN_IF_ERROR(positive("eps", eps));
  POSEIDON_RETURN_IF_ERROR(unitInterval("beta1", beta1));
  POSEIDON_RETURN_IF_ERROR(unitInterval("beta2", beta2));
  POSEIDON_RETURN_IF_ERROR(atLeast("init", initial_accumulator, 0));
  return Status::ok();
}

kernels::OptimizerStep OptimizerConfig::stepFor(uint64_t t) const {
  kernels::OptimizerStep step;
  if (sum_only) {
    // Plain SGD with lr = -1 onto a zeroed chunk: 0 - (-1 * g) is g exactly (both operations
    // are exact in IEEE arithmetic), so the chunk ends up holding the rank-order sum the kernel
    // formed, bit for bit. The server zeroes the chunk first (Server's applyLocked).
    step.kind = OptimizerKind::kSgd;
    step.lr = -1.0f;
    step.grad_scale = grad_scale;
    return step;
  }
  step.kind = kind;
  step.lr = static_cast<float>(lr.at(t));
  step.grad_scale = grad_scale;
  step.weight_decay = weight_decay;
  step.momentum = momentum;
  step.nesterov = nesterov;
  step.eps = eps;
  step.beta1 = beta1;
  step.beta2 = beta2;
  if (kind == OptimizerKind::kAdam) {
    // Bias corrections in double: in float, 1 - beta2^t loses most of its digits for small t.
    const double power = static_cast<double>(t) + 1.0;
    step.bias_correction1 = static_cast<float>(1.0 - std::pow(static_cast<double>(beta1), power));
    step.bias_correction2 = static_cast<float>(1.0 - std::pow(static_cast<double>(beta2), power));
  }
  return step;
}

float OptimizerConfig::stateInitialValue(int word) const {
  return kind == OptimizerKind::kAdagrad && word == 0 ? initial_accumulator : 0.0f;
}

// Floats with 9 significant digits and doubles with 17: enough to tell any two values apart, and
// printf-style %g so the text never changes with the formatting library's version (a checkpoint
// compares it as a string).
std::string OptimizerConfig::canonical() const {
  if (sum_only) return fmt::format("optimizer=sum grad_scale={:.9g}", grad_scale);
  return fmt::format(
      "optimizer={} lr={:.17g} schedule={} step_size={} gamma={:.17g} max_steps={} power={:.17g} min_lr={:.17g} "
      "grad_scale={:.9g} wd={:.9g} momentum={:.9g} nesterov={} eps={:.9g} beta1={:.9g} beta2={:.9g} init={:.9g}",
      optimizerName(kind), lr.base_lr, scheduleName(lr.kind), lr.step_size, lr.gamma, lr.max_steps, lr.power, lr.min_lr,
      grad_scale, weight_decay, momentum, nesterov ? 1 : 0, eps, beta1, beta2, initial_accumulator);
}

const char* scheduleName(LrSchedule::Kind kind) {
  switch (kind) {
    case LrSchedule::Kind::kConstant: return "constant";
    case LrSchedule::Kind::kStep: return "step";
    case LrSchedule::Kind::kPoly: return "poly";
    case LrSchedule::Kind::kCosine: return "cosine";
  }
  return "unknown";
}

const char* optimizerName(OptimizerKind kind) {
  const char* name = kernels::kindName(kind);
  return name != nullptr ? name : "unknown";
}

}  // namespace poseidon::kernels
