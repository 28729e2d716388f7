#include "ps/model_spec.h"

#include <charconv>
#include <fmt/format.h>

#include "ps/spec_text.h"

#include "ps/model_zoo.h"

namespace poseidon::ps {


namespace {

Result<uint64_t> parseCount(std::string_view spec, std::string_view text) {
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value == 0) {
    return makeStatus(StatusCode::kInvalidArgument, "model '{}': '{}' is not a positive integer", spec, text);
  }
  return value;
}

}  // namespace

Result<std::vector<TensorSpec>> parseModelSpec(std::string_view spec) {
  if (spec == "vgg19") return vgg19(1000);
  if (spec == "vgg19-22k") return vgg19(21841);
  const size_t colon = spec.find(':');
  const std::string_view kind = spec.substr(0, colon);
  const std::string_view rest = colon == std::string_view::npos ? std::string_view() : spec.substr(colon + 1);
  std::vector<TensorSpec> tensors;
  if (kind == "uniform") {
    const size_t x = rest.find('x');
    if (x == std::string_view::npos) {
      return makeStatus(StatusCode::kInvalidArgument, "model '{}': expected uniform:<tensors>x<elements>", spec);
    }
    auto count = parseCount(spec, rest.substr(0, x));
    if (!count) return count.status();
    auto elements = parseCount(spec, rest.substr(x + 1));
    if (!elements) return elements.status();
    if (*count > 1000000) return makeStatus(StatusCode::kInvalidArgument, "model '{}': over 10^6 tensors", spec);
    for (uint64_t i = 0; i < *count; ++i) tensors.push_back({fmt::format("t{}", i), *elements});
    return tensors;
  }
  if (kind == "tensors") {
    std::string_view items = rest;
    while (!items.empty()) {
      const std::string_view item = takeItem(items);
      const size_t equals = item.find('=');
      if (equals == std::string_view::npos || equals == 0) {
        return makeStatus(StatusCode::kInvalidArgument, "model '{}': item '{}' is not <name>=<elements>", spec, item);
      }
      auto elements = parseCount(spec, item.substr(equals + 1));
      if (!elements) return elements.status();
      tensors.push_back({std::string(item.substr(0, equals)), *elements});
    }
    if (tensors.empty()) return makeStatus(StatusCode::kInvalidArgument, "model '{}' lists no tensors", spec);
    return tensors;
  }
  return makeStatus(StatusCode::kInvalidArgument,
                    "model '{}' is not vgg19, vgg19-22k, uniform:<tensors>x<elements> or tensors:<name>=<n>,...",
                    spec);
}

std::string formatModelSpec(const std::vector<TensorSpec>& tensors) {
  std::string spec = "tensors:";
  for (size_t i = 0; i < tensors.size(); ++i) {
    spec += fmt::format("{}{}={}", i == 0 ? "" : ",", tensors[i].name, tensors[i].elements);
  }
  return spec;
}

}  // namespace poseidon::ps
