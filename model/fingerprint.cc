#include "model/fingerprint.h"

#include <fmt/format.h>

#include <charconv>

#include "model/spec.h"

namespace poseidon::model {

namespace {

void encodeField(std::string& out, const std::string& field) {
  out += std::to_string(field.size());
  out += ':';
  out += field;
}

Result<std::string> decodeField(std::string_view text, size_t& offset) {
  const size_t colon = text.find(':', offset);
  size_t length = 0;
  const char* begin = text.data() + offset;
  const char* end = colon == std::string_view::npos ? text.data() + text.size() : text.data() + colon;
  const auto [stop, failure] = std::from_chars(begin, end, length);
  if (colon == std::string_view::npos || begin == end || failure != std::errc() || stop != end ||
      length > text.size() - colon - 1) {
    return makeStatus(StatusCode::kProtocolError,
                      "fingerprint of {} bytes: at offset {}, expected <length>:<text> within the data", text.size(),
                      offset);
  }
  offset = colon + 1 + length;
  return std::string(text.substr(colon + 1, length));
}

std::string describe(const FingerprintItem& item) { return fmt::format("{} = {}", item.name, item.value); }

}  // namespace

std::string Fingerprint::encode() const {
  std::string out;
  for (const FingerprintItem& item : items_) {
    encodeField(out, item.name);
    encodeField(out, item.value);
  }
  return out;
}

Result<Fingerprint> Fingerprint::decode(std::string_view text) {
  Fingerprint fingerprint;
  size_t offset = 0;
  while (offset < text.size()) {
    auto name = decodeField(text, offset);
    if (!name) return name.status();
    if (offset >= text.size()) {
      return makeStatus(StatusCode::kProtocolError, "fingerprint of {} bytes: item '{}' has no value", text.size(),
                        *name);
    }
    auto value = decodeField(text, offset);
    if (!value) return value.status();
    fingerprint.add(std::move(*name), std::move(*value));
  }
  return fingerprint;
}

Fingerprint modelFingerprint(const Model& model) {
  Fingerprint fingerprint;
  fingerprint.add("model.batch", std::to_string(model.batch()));
  for (const Layer& layer : model.layers()) {
    // Tensors first: a size difference is then named by the tensor ("fc3.weight = 170 floats"),
    // and the layer's own item still catches another kind or shape with the same sizes.
    for (const Tensor& tensor : layer.tensors()) fingerprint.add(tensor.name, fmt::format("{} floats", tensor.floats));
    fingerprint.add("layer " + layer.name(), layerSpecItem(layer));
  }
  return fingerprint;
}

std::optional<std::string> firstDifference(const Fingerprint& mine, std::string_view my_label,
                                           const Fingerprint& theirs, std::string_view their_label) {
  const auto& a = mine.items();
  const auto& b = theirs.items();
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    if (a[i] == b[i]) continue;
    if (a[i].name == b[i].name) {
      return fmt::format("{} has {}, {} has {}", their_label, describe(b[i]), my_label, a[i].value);
    }
    return fmt::format("item {}: {} has {}, {} has {}", i, their_label, describe(b[i]), my_label, describe(a[i]));
  }
  if (a.size() == b.size()) return std::nullopt;
  if (b.size() > a.size()) {
    return fmt::format("{} has {}, {} ends after {} items", their_label, describe(b[a.size()]), my_label, a.size());
  }
  return fmt::format("{} ends after {} items, {} has {}", their_label, b.size(), my_label, describe(a[b.size()]));
}

}  // namespace poseidon::model
