// PairArgumentChecks: the checks a backend's Pair applies to a caller's arguments before anything
// reaches the wire, kept in one place so both backends refuse the same calls with the same words.
//
// A range must lie inside its registered region, and a remote descriptor must belong to this
// backend and cover the range written. A backend that can only use regions it registered itself
// (verbs needs their lkey/rkey) passes `owns`; its messages then add "or not a <backend> region",
// since the caller cannot tell from the bounds alone which of the two was wrong.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "transport/memory.h"
#include "transport/pair.h"
#include "transport/request.h"

namespace poseidon::transport {

class PairArgumentChecks {
 public:
  // True when `region` was registered with this backend.
  using OwnsRegion = bool (*)(const MemoryRegion& region);

  explicit PairArgumentChecks(BackendTag backend, OwnsRegion owns = nullptr);

  // Each returns OK or kInvalidArgument prefixed by request.what().
  Status send(const Request& request, std::span<const Slice> slices) const;
  Status recv(const Request& request, const MemoryRegion& region, uint64_t offset, uint64_t length) const;
  Status write(const Request& request, const MemoryRegion& local, uint64_t local_offset, const RemoteDescriptor& remote,
               uint64_t remote_offset, uint64_t length) const;

 private:
  bool usable(const MemoryRegion& region, uint64_t offset, uint64_t length) const;

  BackendTag backend_;
  OwnsRegion owns_;
  std::string or_not_ours_;  // "" or " or not a verbs region"
};

}  // namespace poseidon::transport
