// The private data carried by rdma_cm's connect request and accept: which context and ranks a
// queue pair is for, and the GID each side's QP sends from when that is not the one rdma_cm
// resolved (DeviceOptions::gid_index). A QP must address the peer QP's real source GID (rxe,
// for one, drops RC packets whose IP addresses differ from the QP's GIDs), and rdma_cm only
// knows the GIDs of the addresses, so sides that choose their GID tell each other here.
//
// Both are decoded from peer input: lengths and magic are checked, and rdma_cm pads private
// data with zeros, so an all-zero GID means "not announced" (also what an older peer sends).
#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace poseidon::transport::verbs {

struct ConnectRequest {
  static constexpr size_t kMinSize = 20;  // without the GID
  static constexpr size_t kSize = 36;
  uint64_t context_id = 0;
  uint32_t src_rank = 0;
  uint32_t dst_rank = 0;
  std::optional<ibv_gid> source_gid;  // the connecting QP's, when it chose its own
  std::array<uint8_t, kSize> encode() const;
  // Nothing when `data` is not a Poseidon connect request.
  static std::optional<ConnectRequest> decode(const void* data, size_t length);
};

struct AcceptReply {
  static constexpr size_t kSize = 20;
  std::optional<ibv_gid> source_gid;  // the accepting QP's, when it drives its own QP
  std::array<uint8_t, kSize> encode() const;
  // Nothing when `data` carries no reply (an older peer, or rdma_cm's own QP).
  static std::optional<AcceptReply> decode(const void* data, size_t length);
};

}  // namespace poseidon::transport::verbs
