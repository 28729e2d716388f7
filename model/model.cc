#include "model/model.h"

#include <map>
#include <utility>

namespace poseidon::model {

Model::Model(std::string name, std::vector<Layer> layers, uint64_t batch, std::optional<InputShape> input)
    : name_(std::move(name)), layers_(std::move(layers)), batch_(batch), input_(input) {}

Model Model::withBatch(uint64_t batch) const {
  Model copy = *this;
  copy.batch_ = batch;
  return copy;
}

Model Model::withName(std::string name) const {
  Model copy = *this;
  copy.name_ = std::move(name);
  return copy;
}

std::vector<Tensor> Model::tensors() const {
  std::vector<Tensor> all;
  for (const Layer& layer : layers_) all.insert(all.end(), layer.tensors().begin(), layer.tensors().end());
  return all;
}

std::vector<size_t> Model::layerStarts() const {
  std::vector<size_t> starts;
  size_t next = 0;
  for (const Layer& layer : layers_) {
    starts.push_back(next);
    next += layer.tensors().size();
  }
  return starts;
}

std::vector<size_t> Model::fcLayers() const {
  std::vector<size_t> indices;
  for (size_t l = 0; l < layers_.size(); ++l) {
    if (layers_[l].isFullyConnected()) indices.push_back(l);
  }
  return indices;
}

const Layer* Model::findLayer(const std::string& name) const {
  for (const Layer& layer : layers_) {
    if (layer.name() == name) return &layer;
  }
  return nullptr;
}

uint64_t Model::totalParams() const {
  uint64_t total = 0;
  for (const Layer& layer : layers_) total += layer.params();
  return total;
}

double Model::forwardFlops() const {
  double total = 0;
  for (const Layer& layer : layers_) total += layer.forwardFlops();
  return total;
}

Status validateLayers(const std::vector<Layer>& layers) {
  std::map<std::string, std::string> tensor_owner;  // tensor name -> its layer
  std::map<std::string, size_t> layer_index;
  uint64_t total = 0;
  for (size_t l = 0; l < layers.size(); ++l) {
    const Layer& layer = layers[l];
    POSEIDON_RETURN_IF_ERROR(layer.validate());
    if (auto [at, inserted] = layer_index.emplace(layer.name(), l); !inserted) {
      return makeStatus(StatusCode::kInvalidArgument, "layer '{}' is named twice (layers {} and {})", layer.name(),
                        at->second, l);
    }
    for (const Tensor& tensor : layer.tensors()) {
      if (auto [at, inserted] = tensor_owner.emplace(tensor.name, layer.name()); !inserted) {
        return makeStatus(StatusCode::kInvalidArgument, "tensor '{}' of layer '{}' is named as one of layer '{}'",
                          tensor.name, layer.name(), at->second);
      }
    }
    total += layer.params();  // each <= 2^53 after validate(): no wrap before the check
    if (total > kMaxFloats) {
      return makeStatus(StatusCode::kInvalidArgument, "{} floats up to layer '{}' exceed 2^53", total, layer.name());
    }
  }
  return Status::ok();
}

Status Model::validate() const {
  if (name_.empty()) return makeStatus(StatusCode::kInvalidArgument, "a model has an empty name");
  if (layers_.empty()) return makeStatus(StatusCode::kInvalidArgument, "model '{}' has no layers", name_);
  if (batch_ < 1) {
    return makeStatus(StatusCode::kInvalidArgument, "model '{}' has batch K = {}, expected >= 1", name_, batch_);
  }
  return validateLayers(layers_).withContext(fmt::format("model '{}'", name_));
}

}  // namespace poseidon::model
