// A Pair that only names the peer, for the backend-independent pieces (rendezvous, imm queue,
// argument checks) that take one just to name it in their errors; they never call anything else.
#pragma once

#include <string>

#include "transport/pair.h"

namespace poseidon::testing {

class NamedPeer final : public transport::Pair {
 public:
  int peerRank() const override { return 1; }
  std::string peerName() const override { return "rank 1 (peer:1)"; }
  Status status() const override { return Status::ok(); }
  transport::PairTraffic traffic() const override { return {}; }
  transport::RequestPtr sendv(uint32_t, std::span<const transport::Slice>) override { return nullptr; }
  transport::RequestPtr recv(uint32_t, transport::MemoryRegion&, uint64_t, uint64_t) override { return nullptr; }
  transport::RequestPtr write(const transport::MemoryRegion&, uint64_t, const transport::RemoteDescriptor&, uint64_t,
                              uint64_t, uint32_t) override {
    return nullptr;
  }
  transport::RequestPtr recvImm() override { return nullptr; }
};

}  // namespace poseidon::testing
