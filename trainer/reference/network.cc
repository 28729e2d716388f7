#include "trainer/reference/network.h"

#include <utility>

#include "trainer/reference/factor_source.h"
#include "trainer/reference/seeded_init.h"
#include "trainer/reference/softmax_cross_entropy.h"

namespace poseidon::trainer::reference {

namespace {

Status checkChain(const std::string& name, size_t batch, SampleShape input,
                  const std::vector<std::unique_ptr<Layer>>& layers, size_t classes, const FloatMemory& memory) {
  if (layers.empty()) return makeStatus(StatusCode::kInvalidArgument, "network {} has no layers", name);
  for (size_t i = 0; i < layers.size(); ++i) {
    const Layer& layer = *layers[i];
    if (&layer.memory() != &memory) {
      return makeStatus(StatusCode::kInvalidArgument,
                        "network {}: layer {} ({}) lives in {} memory, the network in {} memory", name, i, layer.name(),
                        layer.memory().name(), memory.name());
    }
    const SampleShape& in = layer.inputShape();
    if (layer.batch() != batch || !(in == input)) {
      return makeStatus(
          StatusCode::kInvalidArgument,
          "network {}: layer {} ({}) takes batch {} of {} x {} x {}, but receives batch {} of {} x {} x {}", name, i,
          layer.name(), layer.batch(), in.channels, in.height, in.width, batch, input.channels, input.height,
          input.width);
    }
    input = layer.outputShape();
  }
  if (!(input == SampleShape{classes, 1, 1})) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "network {}: the last layer ({}) gives {} x {} x {} per sample, expected {} logits x 1 x 1", name,
                      layers.back()->name(), input.channels, input.height, input.width, classes);
  }
  return Status::ok();
}

}  // namespace

Result<Network> Network::create(std::string name, size_t batch, SampleShape input,
                                std::vector<std::unique_ptr<Layer>> layers, size_t classes) {
  return create(std::move(name), batch, input, std::move(layers), std::make_unique<SoftmaxCrossEntropy>(batch, classes),
                hostMemory());
}

Result<Network> Network::create(std::string name, size_t batch, SampleShape input,
                                std::vector<std::unique_ptr<Layer>> layers, std::unique_ptr<ClassifierLoss> loss,
                                const FloatMemory& memory) {
  POSEIDON_RETURN_IF_ERROR(checkChain(name, batch, input, layers, loss->classes(), memory));
  if (loss->batch() != batch) {
    return makeStatus(StatusCode::kInvalidArgument, "network {}: the loss takes batch {}, the network batch {}", name,
                      loss->batch(), batch);
  }
  Network network(std::move(name), batch, input, std::move(layers), std::move(loss), memory);
  POSEIDON_RETURN_IF_ERROR(network.allocateBuffers());
  return network;
}

Network::Network(std::string name, size_t batch, SampleShape input, std::vector<std::unique_ptr<Layer>> layers,
                 std::unique_ptr<ClassifierLoss> loss, const FloatMemory& memory)
    : name_(std::move(name)),
      batch_(batch),
      input_(input),
      layers_(std::move(layers)),
      loss_(std::move(loss)),
      memory_(&memory) {
  for (size_t i = 0; i < layers_.size(); ++i) {
    if (auto* parametric = dynamic_cast<ParametricLayer*>(layers_[i].get())) {
      parametric_.push_back(parametric);
      parametric_position_.push_back(i);
    }
  }
}

Status Network::allocateBuffers() {
  const auto allocate = [this](size_t n) -> Result<FloatBlock> {
    Result<FloatBlock> block = memory_->allocate(n);
    if (!block.isOk()) return block.status().withContext("network " + name_);
    return block;
  };
  Result<FloatBlock> input = allocate(batch_ * sampleSize(input_));
  if (!input.isOk()) return input.status();
  input_copy_ = std::move(input).value();
  for (const std::unique_ptr<Layer>& layer : layers_) {
    for (std::vector<FloatBlock>* buffers : {&activations_, &gradients_}) {
      Result<FloatBlock> block = allocate(layer->outputSize());
      if (!block.isOk()) return block.status();
      buffers->push_back(std::move(block).value());
    }
  }
  return Status::ok();
}

model::Model Network::describe() const {
  std::vector<model::Layer> described;
  for (const ParametricLayer* layer : parametric_) described.push_back(*layer->describe());
  return model::Model(name_, std::move(described), batch_, input_);
}

Status Network::bind(size_t l, std::span<float> params, std::span<float> grads) {
  if (l >= parametric_.size()) {
    return makeStatus(StatusCode::kInvalidArgument, "network {}: no parametric layer {} (it has {})", name_, l,
                      parametric_.size());
  }
  return parametric_[l]->bind(params, grads);
}

Status Network::initialize(uint64_t seed) {
  for (size_t l = 0; l < parametric_.size(); ++l) {
    POSEIDON_RETURN_IF_ERROR(parametric_[l]->initialize(layerSeed(seed, l)));
  }
  return Status::ok();
}

namespace {

FactorSource* asFactorSource(ParametricLayer* layer) { return dynamic_cast<FactorSource*>(layer); }

}  // namespace

Status Network::setFactorsOnly(size_t l, bool factors_only) {
  FactorSource* fc = l < parametric_.size() ? asFactorSource(parametric_[l]) : nullptr;
  if (fc == nullptr) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "network {}: parametric layer {} is not fully connected, so it has no factors-only mode", name_,
                      l);
  }
  fc->setFormWeightGradient(!factors_only);
  return Status::ok();
}

bool Network::factorsOnly(size_t l) const {
  const FactorSource* fc = l < parametric_.size() ? asFactorSource(parametric_[l]) : nullptr;
  return fc != nullptr && !fc->formsWeightGradient();
}

Result<Factors> Network::factors(size_t l) const {
  const FactorSource* fc = l < parametric_.size() ? asFactorSource(parametric_[l]) : nullptr;
  if (fc == nullptr) {
    return makeStatus(StatusCode::kInvalidArgument, "network {}: parametric layer {} is not fully connected", name_, l);
  }
  return Factors{.input = fc->savedInput(), .output_gradient = gradients_[parametric_position_[l]].span()};
}

std::span<const float> Network::parametricInput(size_t l) const {
  return l < parametric_.size() ? layerInput(parametric_position_[l]) : std::span<const float>();
}

std::span<const float> Network::parametricOutputGradient(size_t l) const {
  return l < parametric_.size() ? gradients_[parametric_position_[l]].span() : std::span<const float>();
}

std::span<const float> Network::layerInput(size_t i) const {
  return i == 0 ? input_copy_.span() : activations_[i - 1].span();
}

Result<LossResult> Network::forward(std::span<const float> input, std::span<const int32_t> labels) {
  have_forward_ = false;
  if (input.size() != input_copy_.size()) {
    return makeStatus(StatusCode::kInvalidArgument, "network {}: the input has {} floats, expected {} (batch {})",
                      name_, input.size(), input_copy_.size(), batch_);
  }
  POSEIDON_RETURN_IF_ERROR(memory_->upload(input, input_copy_.span()).withContext("network " + name_));
  size_t next_parametric = 0;
  for (size_t i = 0; i < layers_.size(); ++i) {
    const bool parametric = next_parametric < parametric_position_.size() && parametric_position_[next_parametric] == i;
    if (parametric && hooks_.before_forward) {
      POSEIDON_RETURN_IF_ERROR(hooks_.before_forward(next_parametric));
    }
    if (parametric) ++next_parametric;
    POSEIDON_RETURN_IF_ERROR(layers_[i]->forward(layerInput(i), activations_[i].span()));
  }
  Result<LossResult> loss = loss_->forward(activations_.back().span(), labels);
  if (!loss.isOk()) return loss.status().withContext("network " + name_);
  have_forward_ = true;
  return loss;
}

Status Network::backward() {
  if (!have_forward_) {
    return makeStatus(StatusCode::kInvalidArgument, "network {}: backward without a successful forward before it",
                      name_);
  }
  have_forward_ = false;
  POSEIDON_RETURN_IF_ERROR(loss_->backward(gradients_.back().span()));
  size_t next_parametric = parametric_.size();
  for (size_t i = layers_.size(); i-- > 0;) {
    const std::span<float> dx = i == 0 ? std::span<float>() : gradients_[i - 1].span();
    POSEIDON_RETURN_IF_ERROR(layers_[i]->backward(layerInput(i), activations_[i].span(), gradients_[i].span(), dx));
    if (next_parametric > 0 && parametric_position_[next_parametric - 1] == i) {
      --next_parametric;
      if (hooks_.gradient_ready) POSEIDON_RETURN_IF_ERROR(hooks_.gradient_ready(next_parametric));
    }
  }
  return Status::ok();
}

}  // namespace poseidon::trainer::reference
