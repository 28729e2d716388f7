// Helpers for a message given as slices (Pair::sendv): its length, which both backends need to
// cut it into frames or work requests and to compare it with the room the receiver posted, and
// staging its device-memory slices before the wire reads them.
#pragma once

#include <cstdint>
#include <span>

#include "transport/pair.h"
#include "transport/request.h"

namespace poseidon::transport {

inline uint64_t totalLength(std::span<const Slice> slices) {
  uint64_t total = 0;
  for (const auto& s : slices) total += s.length;
  return total;
}

// Copies every slice of a staged region (memory.h) from the device into its host copy; call
// after the slices passed the argument checks. The failure names `request` and the copy.
inline Status stageOut(const Request& request, std::span<const Slice> slices) {
  for (const auto& s : slices) {
    if (Status st = s.region->stageOut(s.offset, s.length); !st.isOk()) return st.withContext(request.what());
  }
  return Status::ok();
}

}  // namespace poseidon::transport
