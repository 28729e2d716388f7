// The job's exit: every rank's last call. Every rank waits until each has arrived, then worker 0
// (which serves the store) waits until each has said its last word, so its store outlives
// everyone's last request.
//
// Under async the PS servers go on without a worker whose connection broke (ps/server.h), and
// that worker never reaches the exit. A server that finished without it arrives in its place, so
// the others' finish() completes rather than waiting for it until the deadline. A rank's arrival
// is its key "arrived/<rank>", an add() whose first caller is the one that arrived: the rank
// itself, or one server for it, however many servers saw it go. So arriving is one request: a
// rank that crashes right after it has still arrived, though worker 0 then waits for its last
// word until the deadline. Never read "arrived/<rank>" with add(key, 0): that creates the key,
// which is an arrival.
//
// A server whose own end failed (ps::Server::waitUntilDone: a dead server, every worker lost)
// does not arrive: the others then fail at the deadline, naming its rank.
//
// Worker 0 is never arrived for: it serves the store, so without it nobody can end the job. A
// worker that a server took for lost but that lives on (its connection broke before the server
// read its goodbye) finds its arrival taken and fails, saying so; the others end the job without
// it.
#pragma once

#include <span>

#include "common/deadline.h"
#include "common/status.h"
#include "transport/bootstrap/store_view.h"

namespace poseidon::trainer {

// `exit`: the job's exit key space; `size`: every rank of the job; `lost_ranks`: the ranks this
// rank arrives for (a server's workers left out; empty otherwise; rank 0 is skipped).
Status leaveJob(transport::bootstrap::StoreView& exit, int rank, int size, std::span<const int> lost_ranks,
                Deadline deadline);

}  // namespace poseidon::trainer
