#include "trainer/reference/network.h"

#include <algorithm>
#include <utility>

#include "trainer/reference/fully_connected.h"
#include "trainer/reference/seeded_init.h"

namespace poseidon::trainer::reference {

namespace {

Status checkChain(const std::string& name, size_t batch, SampleShape input,
                  const std::vector<std::unique_ptr<Layer>>& layers, size_t classes) {
  if (layers.empty()) return makeStatus(StatusCode::kInvalidArgument, "network {} has no layers", name);
  for (size_t i = 0; i < layers.size(); ++i) {
    const Layer& layer = *layers[i];
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
  POSEIDON_RETURN_IF_ERROR(checkChain(name, batch, input, layers, classes));
  return Network(std::move(name), batch, input, std::move(layers), classes);
}

Network::Network(std::string name, size_t batch, SampleShape input, std::vector<std::unique_ptr<Layer>> layers,
                 size_t classes)
    : name_(std::move(name)),
      batch_(batch),
      input_(input),
      layers_(std::move(layers)),
      loss_(batch, classes),
      input_copy_(batch * sampleSize(input), 0.0f) {
  for (size_t i = 0; i < layers_.size(); ++i) {
    if (auto* parametric = dynamic_cast<ParametricLayer*>(layers_[i].get())) {
      parametric_.push_back(parametric);
      parametric_position_.push_back(i);
    }
    activations_.emplace_back(layers_[i]->outputSize(), 0.0f);
    gradients_.emplace_back(layers_[i]->outputSize(), 0.0f);
  }
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

void Network::initialize(uint64_t seed) {
  for (size_t l = 0; l < parametric_.size(); ++l) parametric_[l]->initialize(layerSeed(seed, l));
}

namespace {

FullyConnected* asFullyConnected(ParametricLayer* layer) { return dynamic_cast<FullyConnected*>(layer); }

}  // namespace

Status Network::setFactorsOnly(size_t l, bool factors_only) {
  FullyConnected* fc = l < parametric_.size() ? asFullyConnected(parametric_[l]) : nullptr;
  if (fc == nullptr) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "network {}: parametric layer {} is not fully connected, so it has no factors-only mode", name_,
                      l);
  }
  fc->setFormWeightGradient(!factors_only);
  return Status::ok();
}

bool Network::factorsOnly(size_t l) const {
  const FullyConnected* fc = l < parametric_.size() ? asFullyConnected(parametric_[l]) : nullptr;
  return fc != nullptr && !fc->formsWeightGradient();
}

Result<Factors> Network::factors(size_t l) const {
  const FullyConnected* fc = l < parametric_.size() ? asFullyConnected(parametric_[l]) : nullptr;
  if (fc == nullptr) {
    return makeStatus(StatusCode::kInvalidArgument, "network {}: parametric layer {} is not fully connected", name_, l);
  }
  return Factors{.input = fc->savedInput(), .output_gradient = gradients_[parametric_position_[l]]};
}

std::span<const float> Network::parametricInput(size_t l) const {
  return l < parametric_.size() ? layerInput(parametric_position_[l]) : std::span<const float>();
}

std::span<const float> Network::parametricOutputGradient(size_t l) const {
  return l < parametric_.size() ? std::span<const float>(gradients_[parametric_position_[l]])
                                : std::span<const float>();
}

std::span<const float> Network::layerInput(size_t i) const {
  return i == 0 ? std::span<const float>(input_copy_) : std::span<const float>(activations_[i - 1]);
}

Result<LossResult> Network::forward(std::span<const float> input, std::span<const int32_t> labels) {
  have_forward_ = false;
  if (input.size() != input_copy_.size()) {
    return makeStatus(StatusCode::kInvalidArgument, "network {}: the input has {} floats, expected {} (batch {})",
                      name_, input.size(), input_copy_.size(), batch_);
  }
  std::copy(input.begin(), input.end(), input_copy_.begin());
  size_t next_parametric = 0;
  for (size_t i = 0; i < layers_.size(); ++i) {
    const bool parametric = next_parametric < parametric_position_.size() && parametric_position_[next_parametric] == i;
    if (parametric && hooks_.before_forward) {
      POSEIDON_RETURN_IF_ERROR(hooks_.before_forward(next_parametric));
    }
    if (parametric) ++next_parametric;
    POSEIDON_RETURN_IF_ERROR(layers_[i]->forward(layerInput(i), activations_[i]));
  }
  Result<LossResult> loss = loss_.forward(activations_.back(), labels);
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
  POSEIDON_RETURN_IF_ERROR(loss_.backward(gradients_.back()));
  size_t next_parametric = parametric_.size();
  for (size_t i = layers_.size(); i-- > 0;) {
    const std::span<float> dx = i == 0 ? std::span<float>() : std::span<float>(gradients_[i - 1]);
    POSEIDON_RETURN_IF_ERROR(layers_[i]->backward(layerInput(i), activations_[i], gradients_[i], dx));
    if (next_parametric > 0 && parametric_position_[next_parametric - 1] == i) {
      --next_parametric;
      if (hooks_.gradient_ready) POSEIDON_RETURN_IF_ERROR(hooks_.gradient_ready(next_parametric));
    }
  }
  return Status::ok();
}

}  // namespace poseidon::trainer::reference
