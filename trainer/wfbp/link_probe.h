// LinkProbe: a short ping-pong between two workers over the job's transport, fitted to the time
// of one message T(M) = a + bM on their link ([MG-WFBP] takes a and b "measured in the
// environment"; section IV-B). Run at start-up when a merge plan is to be made and no cost was
// given: the cost of a scheme's sync follows from the link by syncMessageCost (cost_fit.h).
//
// The initiator sends M bytes, the responder sends M bytes back; half the round trip is one
// message of M bytes. Each size is timed `repetitions` times after one untimed warm-up exchange,
// and the fastest half of the repetitions is kept (the machine's other tenants only ever add
// time), so the fit sees the link, not the noise.
#pragma once

#include <cstdint>
#include <vector>

#include "common/deadline.h"
#include "common/status.h"
#include "trainer/wfbp/cost_fit.h"
#include "transport/context.h"

namespace poseidon::trainer {

struct LinkProbeOptions {
  // Payload sizes; the default spans latency-bound to rate-bound messages of a small layer.
  std::vector<uint64_t> sizes = {64, 4096, 16384, 65536, 262144};
  int repetitions = 8;
};

// Both ends call it, `initiator` on one of them (with `peer` each other's rank in `context`).
// The initiator returns the samples; the responder returns an empty list. Fails naming the peer
// and the size on a transport failure or the deadline; fails for an empty size list or
// repetitions < 1 naming the value.
Result<std::vector<ProbeSample>> probeLink(transport::Context& context, int peer, bool initiator,
                                           const LinkProbeOptions& options, Deadline deadline);

}  // namespace poseidon::trainer
