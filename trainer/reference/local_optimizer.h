// LocalOptimizer: the optimizer step of training without the library (the single-machine
// baseline, and the "same loop without the library" of the overhead benchmark).
//
// Each parametric layer's params are updated from its grads by kernels::chunkUpdate, the fused
// kernel the library's servers and replicas run, with OptimizerConfig::stepFor(t) as they use it:
// given the same summed gradient the step gives the library's bits. It runs where the network's
// memory says (FloatMemory::place()): on the CPU, or enqueued on a GPU twin's stream, with the
// optimizer's state kept in that memory too.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "common/status.h"
#include "kernels/optimizer_config.h"
#include "trainer/reference/float_memory.h"
#include "trainer/reference/network.h"

namespace poseidon::trainer::reference {

class LocalOptimizer {
 public:
  // Fails, naming the field, on an invalid configuration (OptimizerConfig::validate) or a
  // summation-only one ("sum" keeps no model to update), or when the state cannot be allocated.
  static Result<LocalOptimizer> create(const Network& network, kernels::OptimizerConfig config);

  // One step on every parametric layer, then the step count advances. Fails, naming the layer,
  // when its size changed since create() or it is in factors-only mode (its weight gradient was
  // never formed).
  Status step(Network& network);

  uint64_t steps() const { return steps_; }
  const kernels::OptimizerConfig& config() const { return config_; }

 private:
  explicit LocalOptimizer(kernels::OptimizerConfig config) : config_(std::move(config)) {}
  Status allocateState(const Network& network);

  kernels::OptimizerConfig config_;
  std::vector<FloatBlock> state0_;
  std::vector<FloatBlock> state1_;
  uint64_t steps_ = 0;
};

}  // namespace poseidon::trainer::reference
