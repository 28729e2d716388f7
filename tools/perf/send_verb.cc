// The send verb (ib_send_bw, ib_send_lat): two-sided messages into receives posted ahead.
#include "tools/perf/verb.h"

namespace poseidon::perf {
namespace {

class SendVerb final : public Verb {
 public:
  SendVerb(transport::Pair& pair, transport::MemoryRegion& local) : pair_(pair), local_(local) {}

  transport::RequestPtr post(uint64_t local_offset, uint64_t /*remote_offset*/, uint64_t length,
                             uint32_t /*imm*/) override {
    return pair_.send(kDataTag, local_, local_offset, length);
  }
  transport::RequestPtr expect(uint64_t offset, uint64_t length) override {
    return pair_.recv(kDataTag, local_, offset, length);
  }
  // Every real message has at least one byte.
  bool isMarker(const transport::Request& done) const override { return done.bytes() == 0; }

 private:
  transport::Pair& pair_;
  transport::MemoryRegion& local_;
};

}  // namespace

std::unique_ptr<Verb> makeSendVerb(transport::Pair& pair, transport::MemoryRegion& local) {
  return std::make_unique<SendVerb>(pair, local);
}

}  // namespace poseidon::perf
