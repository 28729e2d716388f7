// Queue pairs with a source GID the user chose (DeviceOptions::gid_index, perftest's -x).
//
// rdma_cm puts the GID of the netdev that carries the address into the QP when it drives the QP
// itself (rdma_create_qp), and offers no way to pick another. So with an explicit index the
// pair creates a plain QP (ibv_create_qp, which rdma_cm does not know about) and moves it
// through INIT, RTR and RTS here, with the attributes rdma_cm computes (rdma_init_qp_attr) and
// only the source GID index (and, when the peer chose its own too, the destination GID)
// replaced. rdma_cm still carries the connection handshake: the QP number travels in
// rdma_conn_param, the active side completes with rdma_establish().
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "common/status.h"

namespace poseidon::transport::verbs {

// OK when `index` names a usable GID of `port` for connections from `local` (the address
// rdma_cm binds to): inside the port's table, not empty (an all-zero entry, or one the kernel
// reports as unset), and on RoCE of the address's IP family, since the kernel routes a RoCE
// packet by the IP addresses in its source and destination GIDs (an IPv6 GID cannot reach the
// IPv4-mapped GID rdma_cm resolves for an IPv4 peer). Else the status names the index, the
// device, the port and the table size or the GID found there.
Status checkGidIndex(ibv_context* verbs, uint8_t port, int index, const sockaddr* local);

// RESET -> INIT with rdma_cm's attributes for `id`.
Status moveToInit(rdma_cm_id* id, ibv_qp* qp, const std::string& peer);

// -> RTR -> RTS. `sgid_index` >= 0 replaces the source GID rdma_cm chose; `peer_gid`, when the
// peer announced the GID its QP sends from (connect_data.h), replaces the destination GID
// rdma_cm resolved from the peer's address. Choosing a source GID other than rdma_cm's while
// the peer did not announce one fails: that peer's QP addresses the GID of our address, not
// ours. Returns the GID this QP sends from, for the peer. Passive side: after the connect
// request, before rdma_accept. Active side: after RDMA_CM_EVENT_CONNECT_RESPONSE, before
// rdma_establish.
Result<ibv_gid> moveToRts(rdma_cm_id* id, ibv_qp* qp, int sgid_index, const ibv_gid* peer_gid, const std::string& peer);

}  // namespace poseidon::transport::verbs
