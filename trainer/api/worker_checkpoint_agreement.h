// Which of their own checkpoints the BSP workers restore: the newest iteration every worker has
// a file of. A crash while they wrote one leaves some with it and some without, so each worker
// publishes the iterations it holds and all take the newest in every list.
#pragma once

#include <cstdint>
#include <string>

#include "common/deadline.h"
#include "common/status.h"
#include "transport/bootstrap/store_view.h"

namespace poseidon::trainer {

// Collective among the `workers` workers; `resume` is the job's key space for it. A worker that
// cannot read `dir` still publishes (holding none), so every worker fails at once rather than at
// the deadline, and its own error says why. kInvalidArgument when no iteration is common.
Result<uint64_t> agreeOnWorkerCheckpoint(transport::bootstrap::StoreView& resume, const std::string& dir, int rank,
                                         int workers, Deadline deadline);

}  // namespace poseidon::trainer
