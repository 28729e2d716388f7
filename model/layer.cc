#include "model/layer.h"

#include <string_view>
#include <utility>

namespace poseidon::model {

namespace {

// The model spec's separators: a name holding one could not be written back as a spec.
constexpr std::string_view kReservedCharacters = ",;=:+";

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// "99999999999 x 99999999999": a tensor's dimensions as a message names them.
std::string dimensionsText(const Tensor& tensor) {
  std::string text;
  for (uint64_t dimension : tensor.shape) text += (text.empty() ? "" : " x ") + std::to_string(dimension);
  return text;
}

Status validateConv(const Layer& layer) {
  const ConvShape& c = layer.conv();
  const std::pair<const char*, uint64_t> dimensions[] = {
      {"output channels", c.out_channels},
      {"input channels per group", c.in_channels},
      {"kernel height", c.kernel_h},
      {"kernel width", c.kernel_w},
      {"groups", c.groups},
      {"stride", c.stride},
      {"output height", c.out_h},
      {"output width", c.out_w},
  };
  for (const auto& [what, value] : dimensions) {
    if (value < 1) {
      return makeStatus(StatusCode::kInvalidArgument, "conv layer '{}' has {} {}, expected >= 1", layer.name(), what,
                        value);
    }
  }
  if (c.out_channels % c.groups != 0) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "conv layer '{}' has {} output channels in {} groups, expected a multiple of the groups",
                      layer.name(), c.out_channels, c.groups);
  }
  return Status::ok();
}

}  // namespace

const char* layerKindName(LayerKind kind) {
  switch (kind) {
    case LayerKind::kFullyConnected: return "fc";
    case LayerKind::kConvolution: return "conv";
    case LayerKind::kOther: return "other";
  }
  return "unknown";
}

Layer Layer::fullyConnected(std::string name, uint64_t rows, uint64_t cols, bool bias) {
  Layer layer;
  layer.kind_ = LayerKind::kFullyConnected;
  layer.fc_ = {rows, cols, bias};
  layer.tensors_.push_back(shapedTensor(name + ".weight", {rows, cols}));
  if (bias) layer.tensors_.push_back(shapedTensor(name + ".bias", {rows}));
  layer.name_ = std::move(name);
  return layer;
}

Layer Layer::convolution(std::string name, const ConvShape& shape) {
  Layer layer;
  layer.kind_ = LayerKind::kConvolution;
  layer.conv_ = shape;
  layer.tensors_.push_back(
      shapedTensor(name + ".weight", {shape.out_channels, shape.in_channels, shape.kernel_h, shape.kernel_w}));
  if (shape.bias) layer.tensors_.push_back(shapedTensor(name + ".bias", {shape.out_channels}));
  layer.name_ = std::move(name);
  return layer;
}

Layer Layer::other(std::string name, uint64_t floats) {
  Layer layer;
  layer.tensors_.push_back(shapedTensor(name, {floats}));
  layer.name_ = std::move(name);
  return layer;
}

Layer Layer::other(std::string name, uint64_t weight, uint64_t bias) {
  return other(name, std::vector<NamedCount>{{name + ".weight", weight}, {name + ".bias", bias}});
}

Layer Layer::other(std::string name, const std::vector<NamedCount>& tensors) {
  Layer layer;
  for (const NamedCount& tensor : tensors) layer.tensors_.push_back(shapedTensor(tensor.name, {tensor.floats}));
  layer.name_ = std::move(name);
  return layer;
}

uint64_t Layer::params() const {
  uint64_t total = 0;
  for (const Tensor& tensor : tensors_) total += tensor.floats;
  return total;
}

uint64_t Layer::denseFloats() const { return isFullyConnected() ? boundedProduct(fc_.rows, fc_.cols) : params(); }

double Layer::forwardFlops() const {
  if (isFullyConnected()) {
    const double rows = static_cast<double>(fc_.rows);
    return 2 * rows * static_cast<double>(fc_.cols) + (fc_.bias ? rows : 0);
  }
  if (isConvolution()) {
    const double outputs =
        static_cast<double>(conv_.out_channels) * static_cast<double>(conv_.out_h) * static_cast<double>(conv_.out_w);
    const double per_output = static_cast<double>(conv_.in_channels) * static_cast<double>(conv_.kernel_h) *
                              static_cast<double>(conv_.kernel_w);
    return 2 * outputs * per_output + (conv_.bias ? outputs : 0);
  }
  return 0;
}

Status validateName(const std::string& name, const char* what) {
  if (name.empty()) return makeStatus(StatusCode::kInvalidArgument, "{} has an empty name", what);
  for (char c : name) {
    if (kReservedCharacters.find(c) != std::string_view::npos || isSpace(c)) {
      return makeStatus(StatusCode::kInvalidArgument,
                        "{} '{}' has '{}' in its name, expected none of , ; = : + or white space", what, name, c);
    }
  }
  return Status::ok();
}

Status Layer::validate() const {
  POSEIDON_RETURN_IF_ERROR(validateName(name_, "layer"));
  if (isFullyConnected() && (fc_.rows < 1 || fc_.cols < 1)) {
    return makeStatus(StatusCode::kInvalidArgument, "fc layer '{}' is {} x {}, expected M >= 1 and N >= 1", name_,
                      fc_.rows, fc_.cols);
  }
  if (isConvolution()) POSEIDON_RETURN_IF_ERROR(validateConv(*this));
  if (tensors_.empty()) return makeStatus(StatusCode::kInvalidArgument, "layer '{}' has no tensors", name_);
  uint64_t total = 0;
  for (const Tensor& tensor : tensors_) {
    POSEIDON_RETURN_IF_ERROR(validateName(tensor.name, "tensor"));
    if (tensor.floats == 0) {
      return makeStatus(StatusCode::kInvalidArgument, "layer '{}': tensor '{}' has 0 floats, expected >= 1", name_,
                        tensor.name);
    }
    if (tensor.floats > kMaxFloats) {
      return makeStatus(StatusCode::kInvalidArgument, "{} layer '{}': tensor '{}' of {} exceeds 2^53 floats",
                        layerKindName(kind_), name_, tensor.name, dimensionsText(tensor));
    }
    total += tensor.floats;  // both <= 2^53: no wrap
    if (total > kMaxFloats) {
      return makeStatus(StatusCode::kInvalidArgument, "{} layer '{}' has {} floats in all, exceeds 2^53",
                        layerKindName(kind_), name_, total);
    }
  }
  return Status::ok();
}

}  // namespace poseidon::model
