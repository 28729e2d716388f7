// Session: Poseidon inside a trainer of your own. Read this header first.
//
// A trainer that runs on one machine becomes data-parallel with a handful of calls, the way the
// papers' users embedded Poseidon in Caffe and TensorFlow ([Poseidon ATC'17] section 4.1). Every
// process of the job builds a Session from its launch environment (POSEIDON_RANK / _SIZE /
// _ROOT, OpenMPI's or Slurm's variables: transport/bootstrap/launch_env.h). The first ranks are
// workers, the next the parameter-server shards (and, when HybComm may pick it, the Adam-style
// scheme's servers: trainer/api/job_layout.h); a server rank only calls serve().
//
//   auto session = Session::join(options);                    // every rank
//   if (!session->isWorker()) return session->serve();        // a server, until the workers finish
//   for each layer, input to output: session->addLayer({...}); // its buffers (layer_registration.h)
//   session->start();                                         // worker 0's parameters to all
//   for each iteration:
//     for l = 0 .. L-1: session->waitForParameters(l); forward(l);
//     for l = L-1 .. 0: backward(l); session->gradientReady(l); // returns at once
//     session->endIteration();
//   session->finish();
//
// gradientReady(l) hands layer l's sync to the library right after its backward step and
// returns, so the sync runs while the backward pass goes on with the layers below (wait-free
// backpropagation, [Poseidon 2015] Algorithm 2); waitForParameters(l) waits for that layer only.
// HybComm picks each layer's scheme per iteration (PS, SFB for fully-connected layers, ring,
// Adam-style: trainer/hybcomm/hybcomm.h); every worker applies the same optimizer step to the
// mean gradient, so all replicas stay bit-identical and P workers of batch K train like one
// process of batch P*K. That is BSP, the default: a layer's sync needs every worker's gradient.
//
// SSP and asynchronous (Downpour) consistency (SessionOptions::consistency) send every layer
// through the parameter server, whose servers run the optimizer on the mean gradient
// (trainer/sync/server_optimized_sync.h): gradientReady(l) pushes the layer's gradient, and
// waitForParameters(l) returns once its parameters include every worker's updates up to the
// staleness bound (SSP(s): version >= iteration - s, so a fast worker runs at most s iterations
// ahead of the slowest) or, async, whatever the servers hold (fetched every n_fetch iterations).
// HybComm must then be fixed to the PS. Restart: the servers checkpoint the weights and the
// optimizer state every so many clocks, and saveCheckpoint adds each worker's own state
// (SessionOptions::server_checkpoints, trainer/api/server_checkpoint_options.h).
//
// Errors never abort: every call returns a Status naming the layer, the peer or the value. After
// a sync fails (a peer died, a deadline passed) every later call returns that first failure; the
// registered buffers stay the library's (a sync may still be running) until finish() returns or
// the session is destroyed. A start() that failed leaves the session to be destroyed.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "kernels/optimizer_config.h"
#include "model/model.h"
#include "ps/consistency.h"
#include "ps/push_schedule.h"
#include "trainer/api/job_layout.h"
#include "trainer/api/layer_registration.h"
#include "trainer/api/server_checkpoint_options.h"
#include "trainer/hybcomm/hybcomm.h"
#include "trainer/wfbp/copy_engine.h"
#include "trainer/wfbp/merge_options.h"
#include "trainer/wfbp/pipeline.h"
#include "transport/bootstrap/launch_env.h"
#include "transport/device.h"

namespace poseidon::trainer {

struct SessionOptions {
  // Names the job's store keys and transport contexts; every rank gives the same options.
  std::string job = "poseidon";
  JobLayout layout;                    // workers, PS servers, Adam servers: their sum is the job's size
  uint64_t batch = 1;                  // K: samples per worker per iteration
  kernels::OptimizerConfig optimizer;  // run on the workers' mean gradient (BSP: by every worker)
  HybCommOptions hybcomm;              // closed form by default; SSP / async: fixed PS only
  // BSP (HybComm, the optimizer on the workers), or SSP(s) / async (every layer through the PS, the
  // optimizer on its servers). Every rank gives the same; the servers take worker 0's.
  ps::Consistency consistency;
  uint64_t chunk_bytes = uint64_t{2} << 20;  // the PS's chunks
  // How syncs through the PS pace their pushes (a window per server) and order what the window holds
  // back (push.priority: the layers nearest the input first, a large layer overtaken between its
  // chunks); ps::PushSchedule. Every worker gives the same priority.
  ps::PushSchedule push;
  transport::DeviceOptions device;                   // backend, listen address, job secret, streams
  std::chrono::milliseconds startup_timeout{60000};  // joining, start(), finish()
  std::chrono::milliseconds sync_timeout{60000};     // each layer's sync, from its report
  // Servers wait this long for the workers' last goodbye; a worker that dies is noticed at once
  // (its connections break), one that hangs only by this.
  std::chrono::milliseconds serve_timeout{std::chrono::hours(24)};
  // Called once per completed sync, on the library's thread (a timeline records it).
  std::function<void(const SyncRecord&)> on_sync;
  // Every this many iterations the workers compare a hash of every replica (0: never; BSP only).
  uint64_t replica_check_every = 0;
  // GPU buffers (trainer/wfbp/device_staging.h): a layer registered with device pointers is synced
  // through pinned host staging, its copies on `copy_streams` streams of `copy_engine` (nullptr:
  // CUDA's where a device is present), ordered after the work the trainer queued on
  // `compute_stream` (its cudaStream_t; nullptr: the default stream).
  std::shared_ptr<CopyEngine> copy_engine;
  void* compute_stream = nullptr;
  size_t copy_streams = 2;
  // [MG-WFBP]: runs of small layers synced as one message (trainer/wfbp/merge_options.h); off by
  // default. Every worker gives the same.
  MergeOptions merge;
  // SSP / async only: the servers' checkpoints and resuming from them
  // (trainer/api/server_checkpoint_options.h). Every rank gives the same.
  ServerCheckpointOptions server_checkpoints;
};

class Session {
 public:
  // Joins the job as the launch environment says (transport/bootstrap/launch_env.h): opens the
  // store (worker 0 serves it) and this rank's transport device. Fails naming the value when the
  // options are invalid or the job's size is not the layout's.
  static Result<std::unique_ptr<Session>> join(const SessionOptions& options);
  static Result<std::unique_ptr<Session>> join(const SessionOptions& options,
                                               const transport::bootstrap::LaunchInfo& launch);
  virtual ~Session() = default;

  virtual int rank() const = 0;
  virtual JobRole role() const = 0;
  bool isWorker() const { return role() == JobRole::kWorker; }
  // "worker 1 (rank 1 of 7)"
  virtual std::string describe() const = 0;

  // A server rank: reads the model worker 0 publishes at start(), serves the workers until each
  // has finished, then leaves the job. Fails naming the worker when one breaks off.
  virtual Status serve() = 0;

  // --- workers ---
  // Registers the next layer (input to output); returns its index. Before start() only. Fails
  // naming the layer for a name used twice, or buffers that do not fit its shape and K.
  virtual Result<size_t> addLayer(const LayerRegistration& layer) = 0;
  // Sets up the schemes with the registered layers (every worker must register the same layers,
  // or every worker fails naming the first difference) and copies worker 0's parameters into
  // every worker's, as PyTorch DDP does.
  virtual Status start() = 0;
  // Layer l's gradient (or factors) of this iteration is in its buffers. Returns at once.
  virtual Status gradientReady(size_t layer) = 0;
  // Waits until layer l's parameters hold the update of its last reported sync (before its next
  // forward pass; SSP / async: the version the consistency asks, see above); returns at once when
  // none is outstanding (before the first report, or waited for already). Deadline: sync_timeout.
  // Before start() (no sync can have started) an error.
  virtual Status waitForParameters(size_t layer) = 0;
  // Every layer has reported this iteration's gradient.
  virtual Status endIteration() = 0;
  // Waits for the syncs still running, tells the servers this worker is done, leaves the job.
  virtual Status finish() = 0;

  // --- restart ---
  // BSP (HybComm mode keeps the weights and the optimizer state on the workers): exact restart.
  // Waits until every reported sync has completed, then writes this worker's replica (every
  // layer's parameters and optimizer state), the iteration count and `extra` (the trainer's own
  // state: its data position, its random state) to <dir>/worker-<rank>-<iteration>.ckpt: written
  // to a temporary file, checksummed, fsync'ed and renamed, so a crash leaves the old file or the
  // new one. Every worker calls it after the same endIteration(). A run's first save into a
  // directory it did not restore from is refused on every worker (kInvalidArgument, naming the
  // files) when the directory of any worker holds its checkpoints of an earlier run: a later
  // resume could take the old run's.
  // SSP / async: the servers hold the weights and write them every server_checkpoints.every
  // clocks themselves; this writes the iteration and `extra` alone, into server_checkpoints.dir
  // (`dir` must name it), after an iteration that is a multiple of `every` (others are refused,
  // naming both). Call it after each such iteration: the job resumes from the newest clock every
  // server and every worker has. It first waits for this worker's syncs of the iterations ended
  // (its pushes applied, its reads at the version the consistency asks: what its next forward
  // pass would wait for). start() already refused, on every worker, a directory holding an
  // earlier run's files when not resuming.
  virtual Status saveCheckpoint(const std::string& dir, std::span<const uint8_t> extra) = 0;
  // After start() and before the first report. BSP: loads <dir>/worker-<rank>-<iteration>.ckpt
  // into the registered parameters, the optimizer state and the iteration count, checks through
  // the store that every worker resumes the same iteration, and returns the checkpoint's `extra`.
  // SSP / async with server_checkpoints.resume: start() already resumed from the newest clock
  // every rank has (the servers' parameters are in the buffers); this returns the worker's
  // `extra` of that clock, and fails naming the directory when no server had a checkpoint (the
  // job started from clock 0). A missing, truncated or corrupt file, or one of another model,
  // optimizer or consistency, is an error naming the file and what differs.
  virtual Result<std::vector<uint8_t>> restoreCheckpoint(const std::string& dir) = 0;

  // Iterations ended so far (counting those of a restored checkpoint).
  virtual uint64_t iteration() const = 0;
  // The registered model (valid after start()).
  virtual const model::Model& model() const = 0;
  // Which layers sync together, and the merge plan with its predicted times when merging is on
  // (valid after start()).
  virtual const SyncUnits& syncUnits() const = 0;
  virtual const std::optional<MergePlan>& mergePlan() const = 0;
};

}  // namespace poseidon::trainer
