// A mesh of three ranks for bad-peer tests on the TCP backend: ranks 0 and 1 are real devices,
// rank 2 is the test itself on raw sockets, which completes the handshake with both (so it holds
// the connections' frame keys too) and then sends whatever bytes a test wants.
#pragma once

#include <vector>

#include "tests/support/mesh.h"
#include "transport/common/fd.h"
#include "transport/device.h"
#include "transport/wire/handshake.h"

namespace poseidon::transport::badpeer {

inline constexpr const char* kBadPeerSecret = "bad-peer-secret";
inline constexpr const char* kBadPeerContext = "badpeer";

struct BadPeerMesh {
  poseidon::testing::Mesh mesh;
  Fd to_rank0;
  Fd to_rank1;
  wire::FrameKeys keys0;  // of the connection to rank 0 (rank 2 is its client)
  wire::FrameKeys keys1;
  // With options.streams > 1: streams 1.. of each connection (to_rank0 and to_rank1 are stream 0).
  std::vector<Fd> more_to_rank0;
  std::vector<Fd> more_to_rank1;
};

// `options` for the real ranks (the secret is set here; options.streams streams a pair); rank 2's
// hello announces `features`. Throws StatusError when the mesh cannot be made.
BadPeerMesh makeBadPeerMesh(DeviceOptions options = {}, uint16_t features = 0);

// Rank 2's handshake with `rank` alone, for tests of the handshake's outcome.
struct FakePeerConnection {
  Fd fd;
  wire::FrameKeys keys;
};
Result<FakePeerConnection> handshakeAsRank2(const std::string& store_dir, int rank, uint16_t features,
                                            uint32_t stream = 0, uint32_t streams = 1);

void sendRaw(int fd, const std::vector<uint8_t>& bytes);

}  // namespace poseidon::transport::badpeer
