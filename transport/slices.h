// The length of a message given as slices (Pair::sendv), which both backends need to cut it into
// frames or work requests and to compare it with the room the receiver posted.
#pragma once

#include <cstdint>
#include <span>

#include "transport/pair.h"

namespace poseidon::transport {

inline uint64_t totalLength(std::span<const Slice> slices) {
  uint64_t total = 0;
  for (const auto& s : slices) total += s.length;
  return total;
}

}  // namespace poseidon::transport
