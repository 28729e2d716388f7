#include "trainer/api/layer_registration.h"

#include <fmt/format.h>

namespace poseidon::trainer {

model::Layer describeLayer(const LayerRegistration& layer) {
  switch (layer.kind) {
    case model::LayerKind::kFullyConnected:
      return model::Layer::fullyConnected(layer.name, layer.fc.rows, layer.fc.cols, layer.fc.bias);
    case model::LayerKind::kConvolution: return model::Layer::convolution(layer.name, layer.conv);
    case model::LayerKind::kOther: break;
  }
  return model::Layer::other(layer.name, layer.params.size());
}

Status validateRegistration(const LayerRegistration& layer, uint64_t batch) {
  const model::Layer described = describeLayer(layer);
  POSEIDON_RETURN_IF_ERROR(described.validate());
  const auto expect = [&](const char* buffer, size_t floats, uint64_t expected, const std::string& formula) {
    if (floats == expected) return Status::ok();
    return makeStatus(StatusCode::kInvalidArgument, "layer '{}': {} has {} floats, expected {} = {}", layer.name,
                      buffer, floats, formula, expected);
  };
  POSEIDON_RETURN_IF_ERROR(expect("params", layer.params.size(), described.params(), "its parameter count"));
  if (layer.kind == model::LayerKind::kFullyConnected) {
    const uint64_t m = layer.fc.rows, n = layer.fc.cols;
    POSEIDON_RETURN_IF_ERROR(expect("input", layer.input.size(), batch * n, fmt::format("K x N = {} x {}", batch, n)));
    POSEIDON_RETURN_IF_ERROR(
        expect("output_gradient", layer.output_gradient.size(), batch * m, fmt::format("K x M = {} x {}", batch, m)));
    if (!layer.gradient.empty()) {
      return makeStatus(StatusCode::kInvalidArgument,
                        "layer '{}' is fully connected: its gradient travels as its factors (input and "
                        "output_gradient); give no gradient buffer",
                        layer.name);
    }
    return Status::ok();
  }
  POSEIDON_RETURN_IF_ERROR(expect("gradient", layer.gradient.size(), described.params(), "its parameter count"));
  if (!layer.input.empty() || !layer.output_gradient.empty()) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "layer '{}' is {}: only fully-connected layers give factors (input, output_gradient)", layer.name,
                      model::layerKindName(layer.kind));
  }
  return Status::ok();
}

}  // namespace poseidon::trainer
