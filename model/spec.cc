#include "model/spec.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <optional>
#include <set>
#include <vector>

#include "common/text.h"
#include "model/zoo.h"

namespace poseidon::model {

namespace {

constexpr const char* kCustomName = "custom";
// The most layers a uniform: section may take a model to. A spec is a command line, and each
// layer takes some hundreds of bytes: a cap on each uniform: section alone let a line of repeated
// sections ask for any amount of memory before the duplicate names were seen. (The other
// sections make one layer per item written, so the line's length bounds them.)
constexpr uint64_t kMaxLayers = 1000000;
constexpr std::string_view kBiasMarker = "+bias";

const char* const kFcForm = "<name>=<M>x<N>[+bias]";
const char* const kConvForm = "<name>=<out>x<in>x<kh>x<kw>[/<groups>][s<stride>]@<H>x<W>[+bias]";
const char* const kOtherForm = "<name>=<floats>, <name>=<weight>+<bias> or <name>=<tensor>:<floats>+...";

// Removes and returns the text up to the first `separator` of `rest` (all of it if none).
std::string_view takeItem(std::string_view& rest, char separator) {
  const size_t at = rest.find(separator);
  const std::string_view item = rest.substr(0, at);
  rest = at == std::string_view::npos ? std::string_view() : rest.substr(at + 1);
  return item;
}

// The parser of one spec: every error names the spec.
class Parser {
 public:
  explicit Parser(std::string_view spec) : spec_(spec) {}

  template <typename... Args>
  Status error(fmt::format_string<Args...> format, Args&&... args) const {
    return makeStatus(StatusCode::kInvalidArgument, "model '{}': {}", spec_,
                      fmt::format(format, std::forward<Args>(args)...));
  }

  Result<uint64_t> positive(std::string_view text) const {
    uint64_t value = 0;
    const auto [end, failure] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || failure != std::errc() || end != text.data() + text.size() || value == 0) {
      return error("'{}' is not a positive integer", text);
    }
    return value;
  }

  // "<a>x<b>x...": exactly `count` positive integers.
  Result<std::vector<uint64_t>> dimensions(std::string_view text, size_t count, std::string_view item,
                                           const char* form) const {
    const std::vector<std::string_view> parts = splitList(text, 'x');
    if (parts.size() != count) return error("'{}' is not {}", item, form);
    std::vector<uint64_t> values;
    for (std::string_view part : parts) {
      auto value = positive(part);
      if (!value) return value.status();
      values.push_back(*value);
    }
    return values;
  }

  // Applies "batch=K" or "input=CxHxW"; false when `section` is neither.
  Result<bool> option(std::string_view section, Model& model) const {
    if (section.starts_with("batch=")) {
      auto batch = positive(section.substr(6));
      if (!batch) return batch.status();
      model = model.withBatch(*batch);
      return true;
    }
    if (section.starts_with("input=")) {
      auto input = dimensions(section.substr(6), 3, section, "input=<C>x<H>x<W>");
      if (!input) return input.status();
      model = Model(model.name(), model.layers(), model.batch(), InputShape{(*input)[0], (*input)[1], (*input)[2]});
      return true;
    }
    return false;
  }

  Result<Layer> fc(std::string_view item, std::string name, std::string_view value) const {
    const bool bias = value.ends_with(kBiasMarker);
    if (bias) value.remove_suffix(kBiasMarker.size());
    auto shape = dimensions(value, 2, item, kFcForm);
    if (!shape) return shape.status();
    return Layer::fullyConnected(std::move(name), (*shape)[0], (*shape)[1], bias);
  }

  Result<Layer> conv(std::string_view item, std::string name, std::string_view value) const {
    ConvShape shape;
    shape.bias = value.ends_with(kBiasMarker);
    if (shape.bias) value.remove_suffix(kBiasMarker.size());
    const size_t at = value.find('@');
    if (at == std::string_view::npos) return error("'{}' is not {}", item, kConvForm);
    auto output = dimensions(value.substr(at + 1), 2, item, kConvForm);
    if (!output) return output.status();
    std::string_view weight = value.substr(0, at);
    if (const size_t s = weight.find('s'); s != std::string_view::npos) {
      auto stride = positive(weight.substr(s + 1));
      if (!stride) return stride.status();
      shape.stride = *stride;
      weight = weight.substr(0, s);
    }
    if (const size_t slash = weight.find('/'); slash != std::string_view::npos) {
      auto groups = positive(weight.substr(slash + 1));
      if (!groups) return groups.status();
      shape.groups = *groups;
      weight = weight.substr(0, slash);
    }
    auto dims = dimensions(weight, 4, item, kConvForm);
    if (!dims) return dims.status();
    shape.out_channels = (*dims)[0];
    shape.in_channels = (*dims)[1];
    shape.kernel_h = (*dims)[2];
    shape.kernel_w = (*dims)[3];
    shape.out_h = (*output)[0];
    shape.out_w = (*output)[1];
    return Layer::convolution(std::move(name), shape);
  }

  Result<Layer> other(std::string_view item, std::string name, std::string_view value) const {
    const std::vector<std::string_view> parts = splitList(value, '+');
    std::vector<NamedCount> named;
    std::vector<uint64_t> plain;
    for (std::string_view part : parts) {
      const size_t colon = part.find(':');
      auto floats = positive(colon == std::string_view::npos ? part : part.substr(colon + 1));
      if (!floats) return floats.status();
      if (colon == std::string_view::npos) {
        plain.push_back(*floats);
      } else {
        named.push_back({std::string(part.substr(0, colon)), *floats});
      }
    }
    if (named.empty() && plain.size() == 1) return Layer::other(std::move(name), plain[0]);
    if (named.empty() && plain.size() == 2) return Layer::other(std::move(name), plain[0], plain[1]);
    if (plain.empty()) return Layer::other(std::move(name), named);
    return error("'{}' is not {}", item, kOtherForm);
  }

  // One "<name>=<value>" of a section of `kind`.
  Result<Layer> layer(std::string_view kind, std::string_view item) const {
    const size_t equals = item.find('=');
    const char* form = kind == "fc" ? kFcForm : kind == "conv" ? kConvForm : kOtherForm;
    if (equals == std::string_view::npos || equals == 0) return error("'{}' is not {}", item, form);
    std::string name(item.substr(0, equals));
    const std::string_view value = item.substr(equals + 1);
    if (kind == "fc") return fc(item, std::move(name), value);
    if (kind == "conv") return conv(item, std::move(name), value);
    return other(item, std::move(name), value);
  }

  Status uniform(std::string_view section, std::string_view rest, std::vector<Layer>& layers) const {
    const size_t x = rest.find('x');
    if (x == std::string_view::npos) return error("'{}' is not uniform:<tensors>x<floats>", section);
    auto count = positive(rest.substr(0, x));
    if (!count) return count.status();
    auto floats = positive(rest.substr(x + 1));
    if (!floats) return floats.status();
    if (*count > kMaxLayers) return error("'{}' has over 10^6 tensors", section);
    if (layers.size() + *count > kMaxLayers) {
      return error("'{}' takes the model over 10^6 layers ({} before it)", section, layers.size());
    }
    for (uint64_t i = 0; i < *count; ++i) layers.push_back(Layer::other(fmt::format("t{}", i), *floats));
    return Status::ok();
  }

  Status section(std::string_view section, std::vector<Layer>& layers) const {
    const size_t colon = section.find(':');
    const std::string_view kind = section.substr(0, colon);
    const std::string_view rest = colon == std::string_view::npos ? std::string_view() : section.substr(colon + 1);
    if (colon == std::string_view::npos ||
        (kind != "uniform" && kind != "tensors" && kind != "other" && kind != "fc" && kind != "conv")) {
      return error(
          "section '{}' is not a zoo name ({}), batch=K, input=CxHxW or uniform:, tensors:, other:, fc:, "
          "conv: followed by layers",
          section, fmt::join(zooNames(), ", "));
    }
    if (kind == "uniform") return uniform(section, rest, layers);
    if (rest.empty()) return error("section '{}' lists no layers", section);
    std::string_view items = rest;
    while (!items.empty()) {
      auto parsed = layer(kind, takeItem(items, ','));
      if (!parsed) return parsed.status();
      layers.push_back(std::move(*parsed));
    }
    return Status::ok();
  }

  Result<Model> parse() const {
    if (spec_.empty()) return error("names no layer");
    std::vector<std::string_view> sections = splitList(spec_, ';');
    Model model;
    size_t first_option = 0;
    if (auto zoo = zooModel(sections[0]); zoo.isOk()) {
      model = std::move(*zoo);
      first_option = 1;
    }
    std::vector<Layer> layers;
    for (size_t s = first_option; s < sections.size(); ++s) {
      auto applied = option(sections[s], model);
      if (!applied) return applied.status();
      if (*applied) continue;
      if (first_option == 1) {
        return error("after zoo model '{}', section '{}' is not batch=K or input=CxHxW", sections[0], sections[s]);
      }
      POSEIDON_RETURN_IF_ERROR(section(sections[s], layers));
    }
    if (first_option == 1) return model;
    if (layers.empty()) return error("names no layer");
    if (Status valid = validateLayers(layers); !valid.isOk()) return error("{}", valid.message());
    return Model(kCustomName, std::move(layers), model.batch(), model.input());
  }

 private:
  std::string_view spec_;
};

std::string layerValue(const Layer& layer) {
  const std::string bias = layer.tensors().size() > 1 ? std::string(kBiasMarker) : "";
  if (layer.isFullyConnected()) return fmt::format("{}x{}{}", layer.fc().rows, layer.fc().cols, bias);
  if (layer.isConvolution()) {
    const ConvShape& c = layer.conv();
    return fmt::format("{}x{}x{}x{}{}{}@{}x{}{}", c.out_channels, c.in_channels, c.kernel_h, c.kernel_w,
                       c.groups == 1 ? "" : fmt::format("/{}", c.groups),
                       c.stride == 1 ? "" : fmt::format("s{}", c.stride), c.out_h, c.out_w, bias);
  }
  const std::vector<Tensor>& tensors = layer.tensors();
  if (tensors.size() == 1 && tensors[0].name == layer.name()) return std::to_string(tensors[0].floats);
  if (tensors.size() == 2 && tensors[0].name == layer.name() + ".weight" && tensors[1].name == layer.name() + ".bias") {
    return fmt::format("{}+{}", tensors[0].floats, tensors[1].floats);
  }
  std::string value;
  for (const Tensor& tensor : tensors)
    value += fmt::format("{}{}:{}", value.empty() ? "" : "+", tensor.name, tensor.floats);
  return value;
}

std::string inputText(const InputShape& input) {
  return fmt::format("{}x{}x{}", input.channels, input.height, input.width);
}

// The zoo model `model` is, batch and input aside; or none.
std::optional<Model> zooOrigin(const Model& model) {
  auto zoo = zooModel(model.name());
  if (!zoo || zoo->layers() != model.layers()) return std::nullopt;
  if (zoo->input().has_value() && !model.input().has_value()) return std::nullopt;  // "no input" has no words
  return std::move(*zoo);
}

}  // namespace

Result<Model> parseModelSpec(std::string_view spec) { return Parser(spec).parse(); }

std::string layerSpecItem(const Layer& layer) {
  return fmt::format("{}:{}={}", layerKindName(layer.kind()), layer.name(), layerValue(layer));
}

std::string formatModelSpec(const Model& model) {
  std::string spec;
  const std::optional<Model> zoo = zooOrigin(model);
  if (zoo.has_value()) {
    spec = model.name();
  } else {
    const char* kind = nullptr;  // of the open section
    for (const Layer& layer : model.layers()) {
      const char* layer_kind = layerKindName(layer.kind());
      const bool same = kind != nullptr && std::string_view(kind) == layer_kind;
      spec += fmt::format("{}{}={}", same ? "," : fmt::format("{}{}:", spec.empty() ? "" : ";", layer_kind),
                          layer.name(), layerValue(layer));
      kind = layer_kind;
    }
  }
  if (zoo.has_value() ? model.batch() != zoo->batch() : model.batch() != 1)
    spec += fmt::format(";batch={}", model.batch());
  if (model.input().has_value() && (!zoo.has_value() || model.input() != zoo->input())) {
    spec += ";input=" + inputText(*model.input());
  }
  return spec;
}

}  // namespace poseidon::model
