// How the Session's ranks agree on the way a job trains, and the SSP / async path's set-up.
//
// Worker 0 publishes the consistency, the optimizer and the server checkpoints next to the
// model; the servers read them (as they read the model), so a server learns whether it sums for
// HybComm (BSP: the workers run the optimizer) or runs the optimizer itself (SSP, async:
// trainer/sync/server_optimized_sync.h), and how it checkpoints.
// The workers compare theirs at start() (scheme/start_agreement.h), so a worker started with
// another consistency or optimizer fails start-up naming the item.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "common/deadline.h"
#include "common/status.h"
#include "kernels/optimizer_config.h"
#include "model/model.h"
#include "ps/consistency.h"
#include "ps/server.h"
#include "trainer/api/job_connection.h"
#include "trainer/api/session.h"
#include "trainer/sync/server_optimized_sync.h"

namespace poseidon::trainer {

// Whether the job's optimizer runs on the PS servers (SSP, async) rather than on the workers.
inline bool serverOptimized(const ps::Consistency& consistency) {
  return consistency.mode != ps::Consistency::Mode::kBsp;
}

// join()'s checks of the consistency and what it rules out: under SSP / async every layer goes
// through the PS (HybComm fixed to it), the optimizer is a real one, replicas are not compared.
Status validateConsistencyOptions(const SessionOptions& options);

// How worker 0 asks the servers to checkpoint: its server_checkpoints but the directory, which is
// each server's own.
struct CheckpointRequest {
  bool on = false;  // worker 0 has a server_checkpoints.dir
  uint64_t every = 0;
  int keep = 2;
  bool resume = false;
};

// What worker 0 publishes and the servers read.
struct TrainingSetup {
  ps::Consistency consistency;
  kernels::OptimizerConfig optimizer;
  CheckpointRequest checkpoints;
};
Status publishTrainingSetup(JobConnection& job, const SessionOptions& options);
Result<TrainingSetup> publishedTrainingSetup(JobConnection& job, Deadline deadline);

// Every worker compares its consistency, optimizer, priority and server checkpoints with every
// other worker's.
Status agreeOnTrainingSetup(JobConnection& job, const SessionOptions& options, Deadline deadline);

// A worker's side under SSP / async: joins the PS context and starts the sync over `model`,
// resuming from one of `resumable_clocks` (nullopt: any the servers have).
Result<std::unique_ptr<ServerOptimizedSync>> startServerOptimizedSync(
    JobConnection& job, const model::Model& model, const SessionOptions& options,
    const std::optional<std::vector<uint64_t>>& resumable_clocks, Deadline deadline);

// A PS server rank: the summation server of HybComm under BSP, else one that runs `setup`'s
// optimizer (on the mean of the workers' gradients) under its consistency.
Result<std::unique_ptr<ps::Server>> startPsServer(JobConnection& job, std::span<const model::Layer> layers,
                                                  const SessionOptions& options, const TrainingSetup& setup,
                                                  Deadline deadline);

}  // namespace poseidon::trainer
