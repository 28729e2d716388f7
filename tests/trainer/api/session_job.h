// An in-process training job for the Session tests: every rank (workers, PS servers, Adam
// servers) a thread with its own Session, rendezvousing through a FileStore in a fresh directory.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tools/train/batch_reader.h"
#include "trainer/api/session.h"
#include "trainer/reference/network.h"

namespace poseidon::testing {

// A worker's part after join(): register, start, train, finish.
using WorkerBody = std::function<Status(trainer::Session& session, int worker)>;

// Each rank's status: join()'s failure, or the worker body's / serve()'s outcome. `per_rank`, when
// set, adjusts a rank's copy of the options (its own timeline callback, say).
std::vector<Status> runSessionJob(const trainer::SessionOptions& options, const WorkerBody& worker,
                                  const std::function<void(int rank, trainer::SessionOptions&)>& per_rank = {});

// One training step of a worker through the session: reads the batch at `position`, runs forward
// and backward (the network's hooks report and wait), ends the iteration and moves `position` on.
Status trainStep(trainer::reference::Network& network, trainer::Session& session, tools::BatchReader& reader,
                 trainer::data::Position& position);

// Fashion-MNIST's training set, loaded once per process (on failure: empty, the cause on stderr).
const trainer::data::ImageSet& fashionTrainSet();

// A small job whose every layer goes through the PS (HybComm fixed to it, as SSP and async need):
// `workers` workers and 2 servers, SGD with lr 0.25 (a power of two: exact steps), 4 KiB chunks,
// 20 s deadlines.
trainer::SessionOptions psSessionOptions(const std::string& job, int workers, const ps::Consistency& consistency);

// join()'s failure for rank 0 of a job of `options`, "OK" when it joins (the options' checks).
std::string joinError(const trainer::SessionOptions& options);

// "" when every status is OK, else one line per failed rank.
std::string failures(const std::vector<Status>& statuses);

}  // namespace poseidon::testing
