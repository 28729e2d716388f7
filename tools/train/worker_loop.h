// A worker of poseidon-train: the reference CNN (trainer/reference/fashion_cnn.h) registered with
// the Session, trained epoch by epoch over this worker's shard of Fashion-MNIST (each worker its
// own slice of every global batch: trainer/data/shard.h) with wait-free backpropagation through
// the Network's hooks.
//
// Worker 0 also keeps the books: metrics.csv each iteration, the progress line, the test set's
// accuracy after every epoch and at the end (epochs.csv; its replica is bit-identical to every
// other's, so its evaluation is the job's), summary.json, and timeline.json merged from every
// worker's timeline-worker<r>.json. While worker 0 evaluates, the others wait in their next
// iteration's syncs (bounded by --timeout).
#pragma once

#include "common/status.h"
#include "tools/train/run_outputs.h"
#include "tools/train/train_options.h"
#include "tools/train/train_timeline.h"
#include "trainer/api/session.h"
#include "trainer/data/image_set.h"

namespace poseidon::tools {

struct WorkerRun {
  const TrainCommandLine* c = nullptr;
  trainer::Session* session = nullptr;  // joined, a worker's
  TrainTimeline* timeline = nullptr;    // fed by the session's on_sync too
  const SchemeBytes* bytes = nullptr;   // likewise
  const trainer::data::ImageSet* train = nullptr;
  const trainer::data::ImageSet* test = nullptr;  // worker 0's; null on the others
};

// Trains, writes the outputs and finishes the session.
Status runWorker(const WorkerRun& run);

}  // namespace poseidon::tools
