// Model: a network's layers in forward order, the per-worker batch it trains at, and its input.
//
// Every user reads the same description: the chunk layout takes tensors() in model order, the
// parameter server groups them by layerStarts(), the cost model and SFB take the FC layers'
// M, N and the batch K (the rank of a worker's FC gradient).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "model/layer.h"
#include "model/tensor.h"

namespace poseidon::model {

// One sample's input, channels x height x width (3 x 224 x 224 for the ImageNet networks).
struct InputShape {
  uint64_t channels = 0;
  uint64_t height = 0;
  uint64_t width = 0;

  bool operator==(const InputShape&) const = default;
};

class Model {
 public:
  Model() = default;
  Model(std::string name, std::vector<Layer> layers, uint64_t batch = 1,
        std::optional<InputShape> input = std::nullopt);

  const std::string& name() const { return name_; }
  const std::vector<Layer>& layers() const { return layers_; }
  // K: samples per worker per iteration.
  uint64_t batch() const { return batch_; }
  const std::optional<InputShape>& input() const { return input_; }

  Model withBatch(uint64_t batch) const;
  Model withName(std::string name) const;

  // Every layer's tensors, layer after layer: the order the chunk layout packs them in.
  std::vector<Tensor> tensors() const;
  // Index into tensors() of each layer's first tensor: layer l holds tensors
  // [starts[l], starts[l + 1]) (the last up to tensors().size()). HybComm starts a chunk at each.
  std::vector<size_t> layerStarts() const;
  // Indices into layers() of the fully-connected layers, in forward order.
  std::vector<size_t> fcLayers() const;
  // The layer of that name, or null.
  const Layer* findLayer(const std::string& name) const;
  uint64_t totalParams() const;
  // Forward FLOPs of one sample over all layers (see Layer::forwardFlops).
  double forwardFlops() const;

  // Fails, naming the model, the layer or tensor and the value: an empty model name, no layers,
  // a batch of 0, an invalid layer (Layer::validate), two layers or two tensors of one name, or
  // more than 2^53 floats in all.
  Status validate() const;

  bool operator==(const Model&) const = default;

 private:
  std::string name_;
  std::vector<Layer> layers_;
  uint64_t batch_ = 1;
  std::optional<InputShape> input_;
};

// What Model::validate checks of the layers, in messages that name the layer or tensor (the
// caller adds which model): Layer::validate for each, no two layers or two tensors of one name,
// at most 2^53 floats in all.
Status validateLayers(const std::vector<Layer>& layers);

}  // namespace poseidon::model
