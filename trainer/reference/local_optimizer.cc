#include "trainer/reference/local_optimizer.h"

#include <utility>
#include <vector>

#include "kernels/dispatch.h"

namespace poseidon::trainer::reference {

Result<LocalOptimizer> LocalOptimizer::create(const Network& network, kernels::OptimizerConfig config) {
  POSEIDON_RETURN_IF_ERROR(config.validate());
  if (config.sum_only) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "local optimizer: \"sum\" only adds gradients; a local step needs sgd, adagrad or adam");
  }
  LocalOptimizer optimizer(std::move(config));
  POSEIDON_RETURN_IF_ERROR(optimizer.allocateState(network));
  return optimizer;
}

Status LocalOptimizer::allocateState(const Network& network) {
  const FloatMemory& memory = network.memory();
  const int words = config_.stateWords();
  for (size_t l = 0; l < network.parametricCount(); ++l) {
    const size_t floats = network.parametric(l).parameterCount();
    for (int word = 0; word < 2; ++word) {
      const size_t size = words > word ? floats : 0;
      Result<FloatBlock> block = memory.allocate(size);
      if (!block.isOk()) return block.status().withContext("local optimizer");
      const std::vector<float> initial(size, config_.stateInitialValue(word));
      POSEIDON_RETURN_IF_ERROR(memory.upload(initial, block->span()).withContext("local optimizer"));
      (word == 0 ? state0_ : state1_).push_back(std::move(block).value());
    }
  }
  return Status::ok();
}

Status LocalOptimizer::step(Network& network) {
  if (network.parametricCount() != state0_.size()) {
    return makeStatus(StatusCode::kInvalidArgument, "local optimizer: network {} has {} parametric layers, expected {}",
                      network.name(), network.parametricCount(), state0_.size());
  }
  const kernels::OptimizerStep step = config_.stepFor(steps_);
  for (size_t l = 0; l < state0_.size(); ++l) {
    ParametricLayer& layer = network.parametric(l);
    const size_t floats = layer.parameterCount();
    const bool sized = config_.stateWords() == 0 || state0_[l].size() == floats;
    if (!sized || network.factorsOnly(l)) {
      return makeStatus(StatusCode::kInvalidArgument, "local optimizer: layer {} {}", layer.name(),
                        sized ? "is in factors-only mode: its weight gradient was not formed"
                              : "changed size since the optimizer was created");
    }
    const float* gradient = layer.grads().data();
    kernels::ChunkUpdate update;
    update.params = layer.params().data();
    update.state0 = state0_[l].size() == 0 ? nullptr : state0_[l].span().data();
    update.state1 = state1_[l].size() == 0 ? nullptr : state1_[l].span().data();
    update.count = floats;
    update.gradients = std::span<const float* const>(&gradient, 1);
    update.step = step;
    const Status status = kernels::chunkUpdate(update, network.memory().place());
    if (!status.isOk()) return status.withContext("local optimizer on layer " + layer.name());
  }
  ++steps_;
  return Status::ok();
}

}  // namespace poseidon::trainer::reference
