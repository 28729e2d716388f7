// Traffic: what one worker's syncs of one layer moved, summed over iterations — the one record
// every scheme (PS, SFB, ring, Adam) reports, so a layer's bytes compare across schemes and
// against the cost model's per-node formulas (trainer/hybcomm/cost_model.h).
//
// Payload only: the bytes of gradients, factors or parameters that travelled, and the messages
// that carried them as the cost model counts them (one per write of a layer's payload to one
// peer). Control traffic a scheme needs besides (acks, credits, notices) is its own counters'.
#pragma once

#include <cstdint>

namespace poseidon::scheme {

struct Traffic {
  uint64_t syncs = 0;  // syncs of the layer that completed
  uint64_t sent_bytes = 0;
  uint64_t sent_messages = 0;
  uint64_t received_bytes = 0;
  uint64_t received_messages = 0;

  bool operator==(const Traffic&) const = default;
  Traffic& operator+=(const Traffic& other) {
    syncs += other.syncs;
    sent_bytes += other.sent_bytes;
    sent_messages += other.sent_messages;
    received_bytes += other.received_bytes;
    received_messages += other.received_messages;
    return *this;
  }
};

}  // namespace poseidon::scheme
