// OptimizerConfig: which optimizer a server applies to its chunks, or a worker to its replica,
// with its learning-rate schedule; stepFor() turns it and a step count into the kernel's
// per-step scalars.
//
// Every server of a job holds the same configuration; a checkpoint records canonical() of it and
// refuses to load under a different one.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "kernels/optimizer_step.h"

namespace poseidon::kernels {

struct LrSchedule {
  enum class Kind : uint8_t { kConstant = 0, kStep = 1, kPoly = 2, kCosine = 3 };
  Kind kind = Kind::kConstant;
  double base_lr = 0.01;
  // step: lr = base * gamma^floor(t / step_size)
  uint64_t step_size = 0;
  double gamma = 0.1;
  // poly: lr = base * (1 - t / max_steps)^power; cosine: min_lr + (base - min_lr) (1 + cos(pi t / max_steps)) / 2;
  // both hold their final value once t >= max_steps.
  uint64_t max_steps = 0;
  double power = 1.0;
  double min_lr = 0.0;

  // Learning rate at step t (0-based), in double.
  double at(uint64_t t) const;
};

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kSgd;
  // "sum": the server keeps no model, only this clock's rank-order sum of the workers' gradients
  // (times grad_scale), which the workers pull and feed to an optimizer they run themselves —
  // BytePS's summation service. HybComm needs it: a layer can then move between PS, SFB and ring
  // from one iteration to the next, since every scheme yields the same thing (the aggregate) and
  // the weights and optimizer state never leave the workers. BSP only (validated by the server).
  bool sum_only = false;
  LrSchedule lr;
  float grad_scale = 1.0f;  // the server sets 1/P1 when it averages
  float weight_decay = 0.0f;
  float momentum = 0.0f;             // SGD
  bool nesterov = false;             // SGD, needs momentum > 0
  float eps = 1e-8f;                 // Adagrad, Adam
  float beta1 = 0.9f;                // Adam
  float beta2 = 0.999f;              // Adam
  float initial_accumulator = 0.0f;  // Adagrad's starting sum of squares (Downpour uses 0.1)

  // OK, or kInvalidArgument naming the field, its value and the accepted range.
  Status validate() const;
  // Kernel scalars for the chunk's step t (0-based: the first update is t = 0; Adam's bias
  // corrections use t + 1).
  kernels::OptimizerStep stepFor(uint64_t t) const;
  // State words per parameter (kernels::stateWords) and their initial value.
  int stateWords() const { return kernels::stateWords(kind, momentum); }
  float stateInitialValue(int word) const;
  // One line, every field, fixed formatting: logs and the checkpoint's compatibility check.
  std::string canonical() const;
};

// Parses "sgd", "sgd:lr=0.1,momentum=0.9,wd=5e-4,nesterov=1", "adagrad:lr=0.01,init=0.1",
// "adam:lr=0.001,beta1=0.9,beta2=0.999,eps=1e-8", with schedule keys
// "schedule=step,step_size=30,gamma=0.1" | "schedule=poly,max_steps=1000,power=0.9" |
// "schedule=cosine,max_steps=1000,min_lr=0", or "sum" (no options). Unknown keys and bad numbers are errors naming
// them.
Result<OptimizerConfig> parseOptimizer(std::string_view spec);

const char* optimizerName(OptimizerKind kind);
// "constant", "step", "poly" or "cosine": the spelling parseOptimizer() accepts.
const char* scheduleName(LrSchedule::Kind kind);

}  // namespace poseidon::kernels
