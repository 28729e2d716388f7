// Completions gathered under a backend's lock and delivered after it is released, so a waiter
// woken by Request::complete never contends with the progress engine for that lock.
#pragma once

#include <boost/container/small_vector.hpp>
#include <optional>

#include "transport/request.h"

namespace poseidon::transport {

struct Completion {
  RequestPtr request;
  Status status;
  uint64_t bytes = 0;
  uint32_t imm = 0;
  std::optional<uint32_t> payload_crc;  // a write notification's (Request::payloadCrc)
};
// Inline room for the few completions one call usually makes: no heap allocation per operation.
using Completions = boost::container::small_vector<Completion, 4>;

// Fails `request` with `cause`, prefixed by what the request was, so the status names both the
// operation and why it failed ("recv tag 7 from rank 1 (...): rank 1 (...) closed the connection").
inline void failRequest(Completions& completions, const RequestPtr& request, const Status& cause) {
  completions.push_back({request, cause.withContext(request->what())});
}

inline void completeAll(Completions& completions) {
  for (auto& c : completions) c.request->complete(std::move(c.status), c.bytes, c.imm, c.payload_crc);
  completions.clear();
}

}  // namespace poseidon::transport
