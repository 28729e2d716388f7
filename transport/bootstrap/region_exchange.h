// RegionExchange: how ranks learn each other's registered memory through the bootstrap store.
//
// Each rank publishes the RemoteDescriptors of its registered regions (in an order both sides
// agree on) under "<view>/<rank>", with a fingerprint of what it was configured with (its
// layers, worker count, ...) and, optionally, extra bytes of the caller's own (a ring's layer
// list). A rank fetches another's and checks it against what it needs: the same fingerprint,
// as many descriptors, each at least as long as it will write into. Every failure names the
// member (e.g. "rank 2", "server 1") and the full store key:
//   missing by the deadline  kTimeout (from the store), with "<what> of <member>" prepended
//   malformed or short value kProtocolError: what is wrong and at which byte
//   other fingerprint        kInvalidArgument: both fingerprints and what the fingerprint covers, or
//                            what differs, when the caller can read that from the extra bytes
//   a region too small       kProtocolError: which region, its length and the length needed
//
// Value (little-endian): magic "PSRX" u32, fingerprint u32, descriptor count u32, extra length
// u32, the descriptors (RemoteDescriptor::kEncodedSize each), then the extra bytes.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "common/deadline.h"
#include "common/status.h"
#include "transport/bootstrap/store_view.h"
#include "transport/memory.h"

namespace poseidon::transport::bootstrap {

// What one fetch expects of a member's value.
struct RegionNeeds {
  uint32_t fingerprint = 0;
  // One entry per descriptor expected: the fewest bytes that region must have.
  std::vector<uint64_t> min_bytes;
  // Optional, for callers whose extra bytes describe what the fingerprint covers (a ring's
  // layers): given a member's extra bytes when its fingerprint differs, says what differs, since
  // the fingerprint alone only says that something does. An error replaces the generic one,
  // keeping its code (kProtocolError for extra bytes it cannot read); OK keeps the generic one.
  std::function<Status(std::span<const uint8_t> extra)> explain_mismatch;
};

// What a member published.
struct PublishedRegions {
  std::vector<RemoteDescriptor> descriptors;
  std::vector<uint8_t> extra;
};

struct RegionExchangeNames {
  std::string what = "regions";  // what a value holds, e.g. "SFB receive buffer"
  std::string member = "rank";   // what the number under the view counts: "rank", "server", "worker"
  std::string fingerprint_covers = "configuration";  // e.g. "SFB layers and worker count"
};

class RegionExchange {
 public:
  RegionExchange(StoreView view, RegionExchangeNames names);

  // The key `member` publishes under: "<view>/<member>".
  std::string key(int member) const;

  Status publish(int member, uint32_t fingerprint, std::span<const RemoteDescriptor> descriptors,
                 std::span<const uint8_t> extra = {});
  Result<PublishedRegions> fetch(int member, const RegionNeeds& needs, Deadline deadline);
  // Every member in `members`, in that order; the first failure is returned.
  Result<std::vector<PublishedRegions>> fetchAll(std::span<const int> members,
                                                 const std::function<RegionNeeds(int member)>& needs,
                                                 Deadline deadline);

  // The checks of fetch() on a value already read; exposed for tests and for callers that read
  // the value themselves.
  Result<PublishedRegions> parse(int member, const std::vector<uint8_t>& value, const RegionNeeds& needs) const;

 private:
  std::string who(int member) const;

  StoreView view_;
  RegionExchangeNames names_;
};

// The value publish() stores; for tests that corrupt one.
std::vector<uint8_t> encodeRegions(uint32_t fingerprint, std::span<const RemoteDescriptor> descriptors,
                                   std::span<const uint8_t> extra = {});

}  // namespace poseidon::transport::bootstrap
