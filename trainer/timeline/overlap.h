// The overlap that wait-free backpropagation is for ([Poseidon 2015] Algorithm 2, [Poseidon
// ATC'17]): layer L's sync runs while the backward pass of the layers below L (L-1 .. 1) computes.
// This query says, from a recorded timeline, how far each sync interval did.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "trainer/timeline/interval.h"

namespace poseidon::trainer::timeline {

struct SyncOverlap {
  Interval sync;                   // a sync interval of layer L
  std::vector<Interval> backward;  // the backward intervals of layers below L that overlap it in time
  int64_t overlapped_ns = 0;       // how much of the sync interval some of them cover (their union)
};

// One entry per sync interval of `trace`, in the trace's order. `layers` names the layers from
// the input to the output; a layer is below L when it comes before L there. A sync or backward
// interval naming a layer not in `layers` is an error naming it.
Result<std::vector<SyncOverlap>> syncOverlapsWithBackwardBelow(const Trace& trace,
                                                               const std::vector<std::string>& layers);

}  // namespace poseidon::trainer::timeline
