#include "trainer/hybcomm/layers_from_tensors.h"

#include <string_view>

namespace poseidon::trainer {


namespace {

struct Grouped {
  std::string name;
  int64_t weight = 0;
  int64_t bias = 0;
};

Result<LayerShape> toShape(const Grouped& layer) {
  if (!std::string_view(layer.name).starts_with("fc")) {
    LayerShape shape = LayerShape::other(layer.name, layer.weight + layer.bias);
    POSEIDON_RETURN_IF_ERROR(validateLayer(shape));
    return shape;
  }
  if (layer.bias == 0 || layer.weight % layer.bias != 0) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "FC layer '{}' has weight {} and bias {}, expected a bias of M outputs dividing the weight",
                      layer.name, layer.weight, layer.bias);
  }
  LayerShape shape = LayerShape::fullyConnected(layer.name, layer.bias, layer.weight / layer.bias, layer.bias);
  POSEIDON_RETURN_IF_ERROR(validateLayer(shape));
  return shape;
}

}  // namespace

Result<std::vector<LayerShape>> layersFromTensors(std::span<const ps::TensorSpec> tensors) {
  std::vector<Grouped> grouped;
  for (const ps::TensorSpec& tensor : tensors) {
    const size_t dot = tensor.name.rfind('.');
    const std::string_view suffix = dot == std::string::npos ? "" : std::string_view(tensor.name).substr(dot + 1);
    if (suffix != "weight" && suffix != "bias") {
      return makeStatus(StatusCode::kInvalidArgument, "tensor '{}' is not named '<layer>.weight' or '<layer>.bias'",
                        tensor.name);
    }
    if (tensor.elements == 0 || tensor.elements > static_cast<uint64_t>(kMaxLayerFloats)) {
      return makeStatus(StatusCode::kInvalidArgument, "tensor '{}' has {} elements, expected 1..2^53", tensor.name,
                        tensor.elements);
    }
    const std::string layer = tensor.name.substr(0, dot);
    if (grouped.empty() || grouped.back().name != layer) grouped.push_back({layer});
    int64_t& slot = suffix == "weight" ? grouped.back().weight : grouped.back().bias;
    if (slot != 0) return makeStatus(StatusCode::kInvalidArgument, "tensor '{}' appears twice", tensor.name);
    slot = static_cast<int64_t>(tensor.elements);
  }
  std::vector<LayerShape> layers;
  layers.reserve(grouped.size());
  for (const Grouped& layer : grouped) {
    auto shape = toShape(layer);
    if (!shape) return shape.status();
    layers.push_back(std::move(*shape));
  }
  return layers;
}

}  // namespace poseidon::trainer
