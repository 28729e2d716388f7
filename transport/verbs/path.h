// The path a connected queue pair uses, as rdma_cm chose it: which GID of the local port (on
// RoCE, the entry of the netdev that carries the address, RoCE v2 where the port has it) and
// which MTU (the smaller of the two ports' active MTUs). Read back from the QP, for logs and for
// tests that check nothing was guessed.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>

#include "common/status.h"

namespace poseidon::transport::verbs {

struct QueuePairPath {
  uint8_t port = 0;
  uint32_t sgid_index = 0;
  std::string gid_type;  // "IB", "RoCE v1", "RoCE v2"
  std::string gid;       // "::ffff:10.0.2.15" for an IPv4-mapped GID
  uint32_t mtu_bytes = 0;
  std::string toString() const;
};

Result<QueuePairPath> queryPath(ibv_qp* qp, ibv_context* verbs);
uint32_t mtuBytes(ibv_mtu mtu);

}  // namespace poseidon::transport::verbs
