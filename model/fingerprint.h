// Fingerprint: what a rank contributes to the start-up agreement of a job's ranks.
//
// An ordered list of (item, value) pairs, each value as text. The model contributes every
// layer's kind and shape and every tensor's float count; other modules append their own items
// (chunk layout, P1 / P2, optimizer, consistency). At start-up every rank publishes its list
// through the store and compares it with rank 0's, so a rank started with another model stops
// naming the first difference ("rank 1 has fc3.weight = 170 floats, rank 0 has 160 floats")
// instead of exchanging mismatched buffers.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "model/model.h"

namespace poseidon::model {

struct FingerprintItem {
  std::string name;
  std::string value;

  bool operator==(const FingerprintItem&) const = default;
};

class Fingerprint {
 public:
  void add(std::string name, std::string value) { items_.push_back({std::move(name), std::move(value)}); }
  void append(const Fingerprint& other) { items_.insert(items_.end(), other.items_.begin(), other.items_.end()); }
  const std::vector<FingerprintItem>& items() const { return items_; }

  // For the store: "<length>:<name><length>:<value>" per item, so names and values may hold
  // any byte. decode() is its inverse and fails, naming the offset, on anything else.
  std::string encode() const;
  static Result<Fingerprint> decode(std::string_view text);

  bool operator==(const Fingerprint&) const = default;

 private:
  std::vector<FingerprintItem> items_;
};

// The model's items, in model order: "model.batch" = "32", then per layer each of its tensors,
// "<tensor>" = "<floats> floats", followed by "layer <name>" = its spec item
// ("fc:fc6=4096x25088+bias").
Fingerprint modelFingerprint(const Model& model);

// The first item where `theirs` (of rank `their_label`) differs from `mine`, in words:
//   "rank 1 has fc3.weight = 170 floats, rank 0 has 160 floats"          (same item, new value)
//   "item 7: rank 1 has fc4.weight = 10 floats, rank 0 has fc3.bias = 4 floats"  (other items)
//   "rank 1 has fc4.weight = 10 floats, rank 0 ends after 6 items"        (one list is longer)
// nullopt when the lists are equal.
std::optional<std::string> firstDifference(const Fingerprint& mine, std::string_view my_label,
                                           const Fingerprint& theirs, std::string_view their_label);

}  // namespace poseidon::model
