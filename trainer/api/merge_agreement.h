// How the workers come to one merge plan ([MG-WFBP]) at start().
//
// Off and fixed plans are the same on every worker by construction (the start-up agreements
// compare the unit model the plan gives). A planned merge depends on measured times, which differ
// from worker to worker, so worker 0 plans and publishes the groups; the others take them as a
// fixed plan. Worker 0's message cost is the option's when given; otherwise it probes the link to
// worker 1 (link_probe.h) and prices a sync of the scheme the merged layers go to from it
// (syncMessageCost: the PS, or the ring when HybComm is fixed to it).
#pragma once

#include "common/deadline.h"
#include "common/status.h"
#include "model/model.h"
#include "trainer/api/job_connection.h"
#include "trainer/api/session.h"
#include "trainer/wfbp/merge_options.h"

namespace poseidon::trainer {

// The units every worker syncs, with this worker's view of the plan. Worker 0 first publishes how
// it merges, and a worker given other merge options fails at once naming both. Collective among
// the workers when the mode is planned and no cost is given (the probe's context). Fails naming
// the option for a plan that cannot be made (one worker and no cost: nothing to probe); when
// worker 0 cannot probe or plan, every worker fails with its cause.
Result<MergeSetup> agreeOnMergeUnits(JobConnection& job, const model::Model& layers, const SessionOptions& options,
                                     Deadline deadline);

}  // namespace poseidon::trainer
