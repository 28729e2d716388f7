// What perftest's header says about the link a run goes over: the path MTU the queue pair got,
// the link type and the GID index (verbs), read back from the connected pair so the report
// shows what the transport chose rather than what was asked for.
#pragma once

#include <cstdint>
#include <string>

#include "transport/pair.h"

namespace poseidon::perf {

struct LinkInfo {
  uint32_t mtu_bytes = 0;  // 0: not known (tcp: the kernel segments)
  std::string link_type;   // "IP", "Ethernet", "IB"; empty when not known
  int gid_index = -1;      // verbs: the source GID index of the queue pair
  std::string gid;         // verbs: that GID, "::ffff:10.0.2.15"
};

// `transport` is the run's backend name; the pair is connected.
LinkInfo linkInfoOf(const std::string& transport, transport::Pair& pair);

}  // namespace poseidon::perf
