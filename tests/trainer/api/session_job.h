// An in-process training job for the Session tests: every rank (workers, PS servers, Adam
// servers) a thread with its own Session, rendezvousing through a FileStore in a fresh directory.
#pragma once

#include <functional>
#include <vector>

#include "trainer/api/session.h"

namespace poseidon::testing {

// A worker's part after join(): register, start, train, finish.
using WorkerBody = std::function<Status(trainer::Session& session, int worker)>;

// Each rank's status: join()'s failure, or the worker body's / serve()'s outcome. `per_rank`, when
// set, adjusts a rank's copy of the options (its own timeline callback, say).
std::vector<Status> runSessionJob(const trainer::SessionOptions& options, const WorkerBody& worker,
                                  const std::function<void(int rank, trainer::SessionOptions&)>& per_rank = {});

// "" when every status is OK, else one line per failed rank.
std::string failures(const std::vector<Status>& statuses);

}  // namespace poseidon::testing
