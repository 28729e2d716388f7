#include "trainer/reference/local_optimizer.h"

#include <utility>

#include "kernels/dispatch.h"

namespace poseidon::trainer::reference {

Result<LocalOptimizer> LocalOptimizer::create(const Network& network, kernels::OptimizerConfig config) {
  POSEIDON_RETURN_IF_ERROR(config.validate());
  if (config.sum_only) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "local optimizer: \"sum\" only adds gradients; a local step needs sgd, adagrad or adam");
  }
  return LocalOptimizer(network, std::move(config));
}

LocalOptimizer::LocalOptimizer(const Network& network, kernels::OptimizerConfig config) : config_(std::move(config)) {
  const int words = config_.stateWords();
  for (size_t l = 0; l < network.parametricCount(); ++l) {
    const size_t floats = network.parametric(l).parameterCount();
    state0_.emplace_back(words >= 1 ? floats : 0, config_.stateInitialValue(0));
    state1_.emplace_back(words >= 2 ? floats : 0, config_.stateInitialValue(1));
  }
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
    update.state0 = state0_[l].empty() ? nullptr : state0_[l].data();
    update.state1 = state1_[l].empty() ? nullptr : state1_[l].data();
    update.count = floats;
    update.gradients = std::span<const float* const>(&gradient, 1);
    update.step = step;
    const Status status = kernels::chunkUpdate(update, kernels::Place::cpu());
    if (!status.isOk()) return status.withContext("local optimizer on layer " + layer.name());
  }
  ++steps_;
  return Status::ok();
}

}  // namespace poseidon::trainer::reference
