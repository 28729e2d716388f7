// The job's exit: every rank's last call, a barrier of every rank after which worker 0 (which
// serves the store) waits until each has seen it, so its store outlives everyone's last request.
//
// Under async the PS servers go on without a worker whose connection broke (ps/server.h), and
// that worker never reaches the exit. A server that finished without it arrives in its place, so
// the others' finish() completes rather than waiting for it until the deadline. Each rank's
// arrival is claimed once ("claim/<rank>"): by the rank itself or by one server for it,
// whichever comes first, so the barrier counts every rank once however many servers saw it go.
#pragma once

#include <span>

#include "common/deadline.h"
#include "common/status.h"
#include "transport/bootstrap/store_view.h"

namespace poseidon::trainer {

// `exit`: the job's exit key space; `size`: every rank of the job; `lost_ranks`: the ranks this
// rank arrives for (a server's workers left out; empty otherwise). A rank a server already
// arrived for fails, saying so: the job went on without it.
Status leaveJob(transport::bootstrap::StoreView& exit, int rank, int size, std::span<const int> lost_ranks,
                Deadline deadline);

}  // namespace poseidon::trainer
