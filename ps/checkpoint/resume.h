// Resume: which clock a restarted job continues from.
//
// A job is resumable at clock T only when every server has a complete checkpoint of T (a server
// killed while writing T + 1 still has T). Each server publishes the clocks it has; servers and
// workers alike take the newest clock common to all: 0 (start fresh) when no server has any, and
// kInvalidArgument naming what each has when some have checkpoints but no clock is common to
// all (a fresh start would quietly drop them).
#pragma once

#include <cstdint>
#include <vector>

#include "ps/job.h"
#include "transport/bootstrap/store.h"

namespace poseidon::ps {

Status publishCheckpointClocks(transport::bootstrap::Store& store, const PsJob& job, int server,
                               const std::vector<uint64_t>& clocks);

Result<uint64_t> agreeResumeClock(transport::bootstrap::Store& store, const PsJob& job, Deadline deadline);

}  // namespace poseidon::ps
