// LocalOptimizer: the optimizer step of training without the library (the single-machine
// baseline, and the "same loop without the library" of the overhead benchmark).
//
// Each parametric layer's params are updated from its grads by kernels::chunkUpdate on the CPU,
// the fused kernel the library's servers and replicas run, with OptimizerConfig::stepFor(t) as
// they use it: given the same summed gradient the step gives the library's bits.
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "kernels/optimizer_config.h"
#include "trainer/reference/network.h"

namespace poseidon::trainer::reference {

class LocalOptimizer {
 public:
  // Fails, naming the field, on an invalid configuration (OptimizerConfig::validate) or a
  // summation-only one ("sum" keeps no model to update).
  static Result<LocalOptimizer> create(const Network& network, kernels::OptimizerConfig config);

  // One step on every parametric layer, then the step count advances. Fails, naming the layer,
  // when its size changed since create() or it is in factors-only mode (its weight gradient was
  // never formed).
  Status step(Network& network);

  uint64_t steps() const { return steps_; }
  const kernels::OptimizerConfig& config() const { return config_; }

 private:
  explicit LocalOptimizer(const Network& network, kernels::OptimizerConfig config);

  kernels::OptimizerConfig config_;
  std::vector<std::vector<float>> state0_;
  std::vector<std::vector<float>> state1_;
  uint64_t steps_ = 0;
};

}  // namespace poseidon::trainer::reference
