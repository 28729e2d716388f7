// Server: one parameter-server shard.
//
// It holds its chunks of the model, the optimizer state and one gradient slot per worker, the
// parameters and the slots in memory registered with the transport: a worker pushes a chunk's
// gradient by a one-sided write straight into its slot, and the server answers a pull by writing
// the chunk straight into the worker's registered parameter buffer. Every event is the immediate
// of such a write (ps/imm_code.h), so the server runs one thread per worker, each waiting on that
// worker's ordered stream of immediates; no thread polls.
//
// BSP: the push that completes clock t of a chunk (P1 pushes in the slots) sums them in rank order
// and applies the optimizer in one fused pass (kernels::chunkUpdateCpu), so the result never
// depends on arrival order; the chunk's version becomes t + 1, every worker is acknowledged (its
// slot is free again) and waiting pulls are answered. SSP and async apply each push as it arrives
// (see ps/consistency.h). Checkpoints snapshot each chunk as it reaches the checkpoint's clock and
// a background thread writes the file (ps/checkpointer.h).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kernels/optimizer_config.h"
#include "model/model.h"
#include "ps/checkpoint/checkpoint.h"
#include "ps/chunk_layout.h"
#include "ps/consistency.h"
#include "ps/job.h"
#include "transport/bootstrap/store.h"
#include "transport/context.h"

namespace poseidon::ps {

struct ServerOptions {
  kernels::OptimizerConfig optimizer;
  Consistency consistency;
  // Scale the summed gradient by 1/P1 (the mean, as data-parallel SGD expects); off: the sum.
  bool average = true;
  std::string checkpoint_dir;     // empty: no checkpoints
  uint64_t checkpoint_every = 0;  // clocks; 0: only on request
  // The newest checkpoints every server has written that this server keeps, and at most as many
  // later ones that wait for the other servers (ps/checkpoint/checkpointer.h); 1..kMaxCheckpointKeep.
  int checkpoint_keep = 2;
  // Load the newest checkpoint every server of the job has (see ps/resume.h).
  bool resume = false;
  // Writes the checkpoint files (empty: writeCheckpoint into checkpoint_dir); a test's slow disk.
  WriteCheckpointFunction checkpoint_writer;
};

struct ServerStats {
  uint64_t bytes_pushed = 0;  // gradient bytes workers wrote into the slots
  uint64_t bytes_pulled = 0;  // parameter bytes written to workers
  uint64_t updates = 0;       // chunk optimizer steps
};

class Server {
 public:
  // Registers memory, publishes this shard's descriptors in the store, agrees on the resume
  // clock and starts the worker threads. `layout` must have been built from model.tensors()
  // (checkpoints record their modelFingerprint). `context` must be connected and outlive the server.
  static Result<std::unique_ptr<Server>> start(transport::Context& context, transport::bootstrap::Store& store,
                                               const model::Model& model, const ChunkLayout& layout, const PsJob& job,
                                               const ServerOptions& options, Deadline deadline);
  virtual ~Server() = default;

  // Blocks until every worker said goodbye; returns the first failure (a worker that vanished
  // under BSP/SSP names it), or kTimeout naming the workers still connected. Async goes on without
  // lost workers, and fails when every worker left unfinished or when none finished after one left
  // naming a lost server (a dead server, as far as this one can tell), naming the first to go.
  virtual Status waitUntilDone(Deadline deadline) = 0;
  // Async: the workers this server went on without (a connection broke before they said goodbye,
  // they lost another server, or they broke the protocol), by worker index. Under BSP / SSP such
  // a loss fails waitUntilDone instead.
  virtual std::vector<int> lostWorkers() const = 0;
  // The clock this server resumed from (0 for a fresh start).
  virtual uint64_t resumedClock() const = 0;
  // Lowest version over this server's chunks.
  virtual uint64_t version() const = 0;
  // This shard's parameters (tests compare them; read only while no worker is active).
  virtual std::span<const float> parameters() const = 0;
  virtual ServerStats stats() const = 0;
};

}  // namespace poseidon::ps
