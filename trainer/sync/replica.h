// Replica: one worker's copy of the model under HybridSync — each layer's weights and optimizer
// state, and this iteration's gradient (or, for a fully-connected layer, its sufficient factors).
//
// The weights and the optimizer state never leave the workers, so every syncer ends the same way:
// the summed gradient of a layer goes through the same optimizer step here, and a layer can change
// scheme from one iteration to the next at no cost. Each syncer touches only the layers it was
// started for, so syncs of different layers may run on different threads at once.
#pragma once

#include <span>
#include <vector>

#include "common/status.h"
#include "kernels/optimizer_config.h"
#include "model/model.h"

namespace poseidon::trainer {

class Replica {
 public:
  // `optimizer` runs on every worker; its grad_scale should already be 1/P1 (the mean). The
  // model's batch is K, the rank of every FC layer's factors. A layer's replica is its params(),
  // in the order of its tensors: an FC layer's M x N weight then its M biases, every parameter of
  // any other layer.
  Replica(model::Model model, kernels::OptimizerConfig optimizer);
  Replica(const Replica&) = delete;
  Replica& operator=(const Replica&) = delete;

  size_t layerCount() const { return model_.layers().size(); }
  const model::Model& model() const { return model_; }
  const model::Layer& layer(size_t l) const { return model_.layers()[l]; }
  bool isFc(size_t l) const { return layer(l).isFullyConnected(); }
  uint64_t batch() const { return model_.batch(); }
  const kernels::OptimizerConfig& optimizer() const { return optimizer_; }

  std::span<float> params(size_t l) { return params_[l]; }
  float* state0(size_t l) { return state0_[l].empty() ? nullptr : state0_[l].data(); }
  float* state1(size_t l) { return state1_[l].empty() ? nullptr : state1_[l].data(); }
  // FC layers: this iteration's factors U (M x K) and V (N x K), row-major; empty otherwise.
  std::span<float> u(size_t l) { return u_[l]; }
  std::span<float> v(size_t l) { return v_[l]; }
  // Other layers: this iteration's gradient; empty for FC layers.
  std::span<float> gradient(size_t l) { return gradients_[l]; }

  // Keeps the layer's parameters in `params` from now on (a trainer's own memory, so the updates
  // land where its forward pass reads them; their current values are the replica's); the size
  // must be that of params(l).
  Status bindParams(size_t l, std::span<float> params);
  // Keeps the FC layer's factors in `u` and `v` instead (a scheme's registered buffers, so they
  // travel without a copy); their sizes must be those of u(l) and v(l).
  Status bindFactors(size_t l, std::span<float> u, std::span<float> v);

  // This worker's full gradient of the layer into `target` (params() floats): FC layers form U V^T
  // in the exact order of the SF kernel and the bias gradient as U's row sums
  // (kernels/sf_bias.h), so a scheme that sums full gradients sums the same floats SFB
  // reconstructs.
  Status loadGradient(size_t l, std::span<float> target) const;
  // The optimizer step of `iteration` on params(l) from the gradient summed over the workers.
  Status applyStep(size_t l, const float* summed, uint64_t iteration);

 private:
  model::Model model_;
  kernels::OptimizerConfig optimizer_;
  std::vector<std::vector<float>> params_storage_, state0_, state1_, gradients_;
  std::vector<std::span<float>> params_;
  std::vector<std::vector<float>> u_storage_, v_storage_;
  std::vector<std::span<float>> u_, v_;
};

}  // namespace poseidon::trainer
