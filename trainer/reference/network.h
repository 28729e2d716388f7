// Network: a sequence of layers with a softmax cross-entropy on top, run forward and backward
// over one batch, with the two hooks through which a trainer overlaps communication with compute
// (wait-free backpropagation: [Poseidon ATC'17] section 3.1, [Poseidon 2015] Algorithm 2).
//
// Parametric layers are numbered 0, 1, ... in forward order, as model::Model numbers the layers
// of describe(). Every activation and every activation gradient has its own buffer, allocated
// once: a fully-connected layer's dY (its factor U^T) stays intact while the layers below run
// their backward and until the next iteration's backward reaches it again, so a library may send
// it straight from there.
//
// The buffers live in the network's FloatMemory, the one its layers and its loss were built on:
// host memory for the reference layers, device memory for their GPU twins (cuda/), where every
// span the network hands out (params, grads, factors, logits) points into device memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "model/model.h"
#include "trainer/reference/classifier_loss.h"
#include "trainer/reference/float_memory.h"
#include "trainer/reference/layer.h"
#include "trainer/reference/parametric_layer.h"

namespace poseidon::trainer::reference {

struct NetworkHooks {
  // Called before parametric layer l's forward: return once layer l's parameters for this
  // iteration are in place (its sync of the last iteration finished). A failure stops forward().
  std::function<Status(size_t layer)> before_forward;
  // Called once parametric layer l's backward has produced its gradient (or, for a
  // fully-connected layer in factors-only mode, its factors and bias gradient): start its sync
  // here. Layer l's parameters are not read again until the next forward's before_forward(l).
  // A failure stops backward().
  std::function<Status(size_t layer)> gradient_ready;
};

// A fully-connected layer's sufficient factors after backward, row-major.
struct Factors {
  std::span<const float> input;            // X, K x N: V^T
  std::span<const float> output_gradient;  // dY, K x M: U^T
};

class Network {
 public:
  // Checks that each layer's input shape and batch are the last one's output shape and batch
  // (the first's: `input`, `batch`) and that the last layer's output is `classes` x 1 x 1;
  // fails naming the layer and the shapes. Parameters start at zero: call initialize().
  // Host memory, a SoftmaxCrossEntropy on top.
  static Result<Network> create(std::string name, size_t batch, SampleShape input,
                                std::vector<std::unique_ptr<Layer>> layers, size_t classes);
  // The same on `memory` (which must outlive the network) with `loss` on top: also fails, naming
  // the layer, when a layer lives in another memory, or when the loss's batch differs.
  static Result<Network> create(std::string name, size_t batch, SampleShape input,
                                std::vector<std::unique_ptr<Layer>> layers, std::unique_ptr<ClassifierLoss> loss,
                                const FloatMemory& memory);

  const std::string& name() const { return name_; }
  size_t batch() const { return batch_; }
  const SampleShape& inputShape() const { return input_; }
  size_t classes() const { return loss_->classes(); }
  const FloatMemory& memory() const { return *memory_; }

  // Every parametric layer described, in forward order, with the batch and the input shape: what
  // the library is set up from.
  model::Model describe() const;

  size_t layerCount() const { return layers_.size(); }
  Layer& layer(size_t i) { return *layers_[i]; }
  size_t parametricCount() const { return parametric_.size(); }
  ParametricLayer& parametric(size_t l) { return *parametric_[l]; }
  const ParametricLayer& parametric(size_t l) const { return *parametric_[l]; }
  std::span<float> params(size_t l) { return parametric_[l]->params(); }
  std::span<float> grads(size_t l) { return parametric_[l]->grads(); }
  // Moves layer l's parameters and gradients into the caller's memory (ParametricLayer::bind).
  Status bind(size_t l, std::span<float> params, std::span<float> grads);

  // Each parametric layer l from std::mt19937_64(layerSeed(seed, l)) (ParametricLayer::initialize).
  Status initialize(uint64_t seed);

  // Factors-only mode of parametric layer l (see FullyConnected); fails unless it is fully connected.
  Status setFactorsOnly(size_t l, bool factors_only);
  bool factorsOnly(size_t l) const;
  // Where layer l's factors are; the same memory for the network's life. Fails unless it is fully
  // connected. Valid to read after backward has called gradient_ready(l).
  Result<Factors> factors(size_t l) const;

  void setHooks(NetworkHooks hooks) { hooks_ = std::move(hooks); }

  // One batch: input K x C x H x W on the host (copied in), labels K in [0, classes) on the host.
  // Fails on sizes, labels out of range or a failing hook, naming which.
  Result<LossResult> forward(std::span<const float> input, std::span<const int32_t> labels);
  // Backward through every layer from the last forward's loss, top to bottom; the gradients of
  // the parameters are overwritten. Fails without a forward before it, or on a failing hook.
  Status backward();

  // Parametric layer l's input and the gradient of its output from the last forward / backward
  // (any kind; for bounds on its gradient's rounding, say), in the network's memory. Empty for an
  // unknown layer.
  std::span<const float> parametricInput(size_t l) const;
  std::span<const float> parametricOutputGradient(size_t l) const;
  // The last forward's logits, K x classes, in the network's memory.
  std::span<const float> logits() const { return activations_.back().span(); }

 private:
  Network(std::string name, size_t batch, SampleShape input, std::vector<std::unique_ptr<Layer>> layers,
          std::unique_ptr<ClassifierLoss> loss, const FloatMemory& memory);
  Status allocateBuffers();

  std::span<const float> layerInput(size_t i) const;

  std::string name_;
  size_t batch_;
  SampleShape input_;
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<ParametricLayer*> parametric_;
  std::vector<size_t> parametric_position_;  // index into layers_ of parametric layer l
  std::unique_ptr<ClassifierLoss> loss_;
  const FloatMemory* memory_;
  FloatBlock input_copy_;
  std::vector<FloatBlock> activations_;  // [i]: layer i's output
  std::vector<FloatBlock> gradients_;    // [i]: dL / d(layer i's output)
  NetworkHooks hooks_;
  bool have_forward_ = false;
};

}  // namespace poseidon::trainer::reference
