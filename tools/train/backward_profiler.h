// The per-layer backward times a planned merge needs ([MG-WFBP] Algorithm 1 takes them from "the
// first several iterations"): before joining the job, a worker runs a few local forward and
// backward passes of its network on its first batches, records when each parametric layer's
// gradient is ready (the hook the Session's gradientReady sits in), and takes the median per layer
// (trainer/wfbp/backward_profile.h). Only worker 0's profile plans the merge; the others' time
// the plan they are given.
#pragma once

#include <vector>

#include "common/status.h"
#include "tools/train/batch_reader.h"
#include "trainer/reference/network.h"

namespace poseidon::tools {

// Seconds per parametric layer, output layer first. The first pass is a warm-up, not counted;
// `passes` >= 2. The network's parameters are left as they were (nothing is updated) and its
// hooks cleared.
Result<std::vector<double>> profileBackwardPasses(trainer::reference::Network& network, BatchReader& reader,
                                                  int passes);

}  // namespace poseidon::tools
