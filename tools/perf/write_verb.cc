// The write verb (ib_write_bw, ib_write_lat): one-sided writes into the peer's registered
// region; the peer learns of each one through its immediate (recvImm), in posted order.
#include "tools/perf/verb.h"

namespace poseidon::perf {
namespace {

class WriteVerb final : public Verb {
 public:
  WriteVerb(transport::Pair& pair, transport::MemoryRegion& local, const transport::RemoteDescriptor& remote)
      : pair_(pair), local_(local), remote_(remote) {}

  transport::RequestPtr post(uint64_t local_offset, uint64_t remote_offset, uint64_t length, uint32_t imm) override {
    return pair_.write(local_, local_offset, remote_, remote_offset, length, imm);
  }
  transport::RequestPtr expect(uint64_t /*offset*/, uint64_t /*length*/) override { return pair_.recvImm(); }
  bool isMarker(const transport::Request& done) const override { return (done.imm() & kMarkerImm) != 0; }

 private:
  transport::Pair& pair_;
  transport::MemoryRegion& local_;
  transport::RemoteDescriptor remote_;
};

}  // namespace

std::unique_ptr<Verb> makeWriteVerb(transport::Pair& pair, transport::MemoryRegion& local,
                                    const transport::RemoteDescriptor& remote) {
  return std::make_unique<WriteVerb>(pair, local, remote);
}

}  // namespace poseidon::perf
