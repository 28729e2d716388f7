// The start-up check of a PS job: before any region is published, every worker and server
// compares what it built with every other rank (scheme/start_agreement.h), so a rank started with
// another model, layout, worker or server count or consistency model fails the whole job at once,
// naming the ranks and the first differing item, instead of training silently wrong parameters.
//
// Items of every rank: the model's (model/fingerprint.h: each layer's kind and shape, each
// tensor's float count, in model order), the chunk size, the chunk count and the bytes per
// server, P1, P2 and the consistency model. The servers also compare the
// optimizer and whether they average, which only they hold.
#pragma once

#include <string>

#include "common/deadline.h"
#include "common/status.h"
#include "kernels/optimizer_config.h"
#include "model/model.h"
#include "ps/chunk_layout.h"
#include "ps/consistency.h"
#include "ps/job.h"
#include "transport/bootstrap/store.h"

namespace poseidon::ps {

// What a server alone contributes.
struct ServerSetUp {
  const kernels::OptimizerConfig* optimizer = nullptr;
  bool average = true;
  // "off", or the schedule and keep ("every 10, keep 2"): servers that checkpoint differently
  // never share a clock to resume from (ps/checkpoint/checkpointer.h), so they are refused at start.
  std::string checkpoints = "off";
};

// `server` is null on a worker.
Status agreeOnPsJob(transport::bootstrap::Store& store, const PsJob& job, int rank, const model::Model& model,
                    const ChunkLayout& layout, const Consistency& consistency, const ServerSetUp* server,
                    Deadline deadline);

}  // namespace poseidon::ps
