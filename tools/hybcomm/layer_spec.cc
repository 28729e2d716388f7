#include "tools/hybcomm/layer_spec.h"

#include <fmt/format.h>

#include <charconv>
#include <set>

#include "ps/spec_text.h"

namespace poseidon::tools {


namespace {

Result<int64_t> parsePositive(std::string_view spec, std::string_view item, std::string_view text) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < 1) {
    return makeStatus(StatusCode::kInvalidArgument, "layers '{}': in '{}', '{}' is not a positive integer", spec, item,
                      text);
  }
  return value;
}

Result<trainer::LayerShape> parseLayer(std::string_view spec, std::string_view kind, std::string_view item) {
  const size_t equals = item.find('=');
  const bool fc = kind == "fc";
  const char* expected = fc ? "<name>=<M>x<N>" : "<name>=<parameters>";
  if (equals == std::string_view::npos || equals == 0) {
    return makeStatus(StatusCode::kInvalidArgument, "layers '{}': '{}' is not {}", spec, item, expected);
  }
  const std::string name(item.substr(0, equals));
  const std::string_view value = item.substr(equals + 1);
  trainer::LayerShape layer;
  if (fc) {
    const size_t x = value.find('x');
    if (x == std::string_view::npos) {
      return makeStatus(StatusCode::kInvalidArgument, "layers '{}': '{}' is not {}", spec, item, expected);
    }
    auto m = parsePositive(spec, item, value.substr(0, x));
    if (!m) return m.status();
    auto n = parsePositive(spec, item, value.substr(x + 1));
    if (!n) return n.status();
    layer = trainer::LayerShape::fullyConnected(name, *m, *n);
  } else {
    auto params = parsePositive(spec, item, value);
    if (!params) return params.status();
    layer = trainer::LayerShape::other(name, *params);
  }
  if (auto valid = trainer::validateLayer(layer); !valid.isOk()) {
    return makeStatus(StatusCode::kInvalidArgument, "layers '{}': {}", spec, valid.message());
  }
  return layer;
}

}  // namespace

Result<std::vector<trainer::LayerShape>> parseLayerSpec(std::string_view spec) {
  std::vector<trainer::LayerShape> layers;
  std::set<std::string> names;
  std::string_view sections = spec;
  while (!sections.empty()) {
    const std::string_view section = ps::takeItem(sections, ';');
    const size_t colon = section.find(':');
    const std::string_view kind = section.substr(0, colon);
    if (colon == std::string_view::npos || (kind != "fc" && kind != "other")) {
      return makeStatus(StatusCode::kInvalidArgument,
                        "layers '{}': section '{}' is not fc:<name>=<M>x<N>,... or other:<name>=<parameters>,...", spec,
                        section);
    }
    std::string_view items = section.substr(colon + 1);
    if (items.empty()) {
      return makeStatus(StatusCode::kInvalidArgument, "layers '{}': section '{}' lists no layers", spec, section);
    }
    while (!items.empty()) {
      auto layer = parseLayer(spec, kind, ps::takeItem(items));
      if (!layer) return layer.status();
      if (!names.insert(layer->name).second) {
        return makeStatus(StatusCode::kInvalidArgument, "layers '{}': layer '{}' is named twice", spec, layer->name);
      }
      layers.push_back(std::move(*layer));
    }
  }
  if (layers.empty()) return makeStatus(StatusCode::kInvalidArgument, "layers '{}' names no layer", spec);
  return layers;
}

std::string describeLayer(const trainer::LayerShape& layer) {
  if (layer.isFullyConnected()) return fmt::format("{} {}x{}", layer.name, layer.m, layer.n);
  return fmt::format("{} ({} parameters)", layer.name, layer.params);
}

}  // namespace poseidon::tools
