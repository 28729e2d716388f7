// How the ranks of a Context become a full mesh, the same in every backend.
//
// Each rank publishes the address it accepts connections on in the store, connects to every
// lower rank and is connected to by every higher one: one direction per pair of ranks, so two
// ranks never race to connect each other. What a connection is (sockets and a handshake, an
// rdma_cm queue pair) and how a rank knows its inbound connections are complete stay in the
// backend.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/deadline.h"
#include "common/status.h"
#include "transport/context.h"

namespace poseidon::transport {

namespace bootstrap {
class Store;
}

// Publishes `own_address` under "poseidon/transport/<context>/<address_kind>/<rank>", then, for
// each lower rank in order, reads its address (waiting until the deadline) and calls
// `connect_to(peer, address)`. Errors name the context and, where it applies, the peer.
Status connectToLowerRanks(bootstrap::Store& store, const Context& context, const std::string& address_kind,
                           const std::string& own_address, Deadline deadline,
                           const std::function<Status(int peer, const std::string& address)>& connect_to);

// Context::pair(peer) over a table of pairs indexed by rank (null for this rank): throws
// kInvalidArgument unless `peer` is another rank of the context.
template <typename PairType>
PairType& pairOfPeer(const std::vector<std::unique_ptr<PairType>>& pairs, const Context& context, int peer) {
  if (peer < 0 || peer >= context.size() || peer == context.rank() || !pairs[static_cast<size_t>(peer)]) {
    throw StatusError(makeStatus(StatusCode::kInvalidArgument,
                                 "pair({}): expected a peer rank in [0, {}) other than {}", peer, context.size(),
                                 context.rank()));
  }
  return *pairs[static_cast<size_t>(peer)];
}

}  // namespace poseidon::transport
