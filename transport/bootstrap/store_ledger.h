// StoreLedger: the values the TCP store holds, and what they cost in memory really held (key,
// value and the container's own bytes per entry), against a limit for the whole store and one per
// connection. A set is reserved when its header arrives, before any byte of its body is kept, so
// announced sizes count at once and a refused set costs nothing.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"

namespace poseidon::transport::bootstrap {

struct StoreLimits {
  size_t max_total_bytes = size_t{1} << 30;
  size_t max_client_bytes = size_t{256} << 20;
};

class StoreLedger {
 public:
  // What an entry costs beyond its key and value: the hash node, the string and vector headers,
  // the bucket and the allocator's headers (1.25M empty entries measured 131 bytes each).
  static constexpr size_t kEntryOverheadBytes = 160;
  static size_t entryCost(size_t key_bytes, size_t value_bytes) {
    return key_bytes + value_bytes + kEntryOverheadBytes;
  }

  explicit StoreLedger(StoreLimits limits) : limits_(limits) {}

  // Room for `owner`'s set of this size while its body arrives; kInvalidArgument naming the limit
  // it would pass. One reservation per owner at a time (a connection has one request in flight).
  Status reserve(uint64_t owner, size_t key_bytes, size_t value_bytes);
  void unreserve(uint64_t owner);

  // Stores the value (its reservation, if any, is released first), charged to owner.
  void set(uint64_t owner, const std::string& key, std::vector<uint8_t> value);
  // Adds to a counter (absent = 0); a new counter must fit the limits like a set.
  Result<int64_t> add(uint64_t owner, const std::string& key, int64_t delta);
  const std::vector<uint8_t>* find(const std::string& key) const;

  // The owner's connection closed: its reservation goes, its entries stay but count for nobody.
  void forgetOwner(uint64_t owner);

  size_t heldBytes() const { return held_; }
  size_t reservedBytes() const { return reserved_total_; }
  size_t ownerBytes(uint64_t owner) const;

 private:
  struct Entry {
    std::vector<uint8_t> value;
    uint64_t owner = 0;
  };
  struct Charge {
    size_t held = 0;
    size_t reserved = 0;
  };
  Status checkRoom(uint64_t owner, size_t cost) const;
  void charge(uint64_t owner, size_t cost);
  void uncharge(uint64_t owner, size_t cost);

  const StoreLimits limits_;
  std::unordered_map<std::string, Entry> values_;
  std::unordered_map<uint64_t, Charge> owners_;  // live connections only
  size_t held_ = 0;
  size_t reserved_total_ = 0;
};

}  // namespace poseidon::transport::bootstrap
