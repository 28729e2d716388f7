// WfbpPipeline: wait-free backpropagation ([Poseidon 2015] Algorithm 2; [Poseidon ATC'17]
// section 3.1) over a worker's LayerSync (HybridSync, or ServerOptimizedSync under SSP / async).
//
// The trainer's thread only reports and waits: gradientReady(l) right after layer l's backward
// pass queues the layer and returns at once, so the backward pass goes on with the layers below
// while l's sync runs; waitForParameters(l) before l's next forward pass waits for that layer
// only. Two threads of the pipeline do the rest:
// - the starter takes reported layers in report order, copies the layer's gradient (or, for a
//   fully-connected layer, its sufficient factors, transposed to the M x K / N x K the schemes
//   send) into the sync's buffers and starts the sync with the scheme HybComm picked. Starts stay
//   in report order on one thread because every worker must start a scheme's layers in the same
//   order (a ring's steps and SFB's banks line up by it); a start never blocks on the network.
// - the completer collects the syncs as they finish (each scheme's driver finishes them and
//   applies the optimizer step to the replica, whose parameters are the trainer's own memory),
//   marks each layer updated, and closes the iteration on the sync once all its layers are in
//   (HybComm's decision points, the replica check). Finished first is collected first, not
//   started first: the layer nearest the input is started last, and when its parameters come
//   back early (the PS's priority) its next forward pass starts while larger layers still travel.
// Several syncs, of one scheme or of several, are in flight at once: the schemes' driver threads
// and the transport's progress engine are the pool that moves them.
//
// Nothing here allocates per iteration: queues and per-layer records are sized at construction.
// Until waitForParameters(l) returns, the layer's gradient and factor buffers belong to the
// pipeline (the starter reads them after gradientReady returned) and its parameters to the sync.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/deadline.h"
#include "common/status.h"
#include "scheme/scheme.h"
#include "trainer/sync/layer_sync.h"
#include "trainer/wfbp/device_staging.h"
#include "trainer/wfbp/sync_units.h"
#include "transport/completion_signal.h"

namespace poseidon::trainer {

// Where the pipeline reads a layer's gradient each iteration (the trainer's memory).
struct LayerSource {
  // Fully-connected layers: the sufficient factors. X is the layer's input, dY the gradient of
  // its output; batch-major (K x N and K x M, as PyTorch and Caffe store activations) unless
  // feature_major (N x K and M x K, the schemes' own layout, copied without a transpose).
  const float* input = nullptr;
  const float* output_gradient = nullptr;
  bool feature_major = false;
  // Other layers: the gradient of the layer's parameters (Layer::params() floats).
  const float* gradient = nullptr;
  // Where the layer's parameters live (the trainer's, or a device layer's staging): a merged
  // unit's update is copied here; a unit of one layer is synced in place.
  std::span<float> params;
};

// One sync as it happened, for a timeline: reported by gradientReady, started on the network,
// completed with the layer's parameters updated.
struct SyncRecord {
  size_t layer = 0;
  uint64_t iteration = 0;
  scheme::Scheme scheme = scheme::Scheme::kPs;
  Clock::time_point reported{}, started{}, completed{};
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
  uint64_t version = 0;  // of the parameters the sync left (LayerSyncResult::version)
};

struct PipelineOptions {
  // Each sync must complete this long after its layer was reported, or it fails naming the layer
  // and the peer it waited for.
  std::chrono::milliseconds sync_timeout{60000};
  // Called on the completer thread once per completed sync (keep it short; it must not call the
  // pipeline). Empty: none.
  std::function<void(const SyncRecord&)> on_sync;
  // Layers whose buffers are in GPU memory (device_staging.h): their gradients are copied to
  // the staging `sources` point at before the sync starts, and their updated parameters back to
  // the device after it completes. nullptr: every buffer is host memory. Must outlive the pipeline.
  DeviceStaging* staging = nullptr;
};

class WfbpPipeline {
 public:
  // `sources` has one entry per layer of `sync`, which must outlive the pipeline. Starts the two
  // threads. `first_iteration`: where a restored run goes on (its syncs are numbered from there).
  // `units` says which layers sync together (SyncUnits::unmerged: each alone); `sync` syncs the
  // units (its layers are units.unitModel()'s).
  WfbpPipeline(LayerSync& sync, SyncUnits units, std::vector<LayerSource> sources, PipelineOptions options,
               uint64_t first_iteration = 0);
  WfbpPipeline(const WfbpPipeline&) = delete;
  WfbpPipeline& operator=(const WfbpPipeline&) = delete;
  // Stops the threads without waiting for syncs still running: they go on on the schemes' driver
  // threads until the LayerSync is destroyed (which stops those), so the trainer's buffers stay
  // the library's until then.
  ~WfbpPipeline();

  size_t layerCount() const { return layers_.size(); }
  // Iterations the trainer has ended (endIteration calls that succeeded, after first_iteration).
  uint64_t iteration() const;

  // Layer l's gradient (or factors) of the current iteration is in its buffers: queue its sync.
  // Returns at once. Fails for an unknown layer, a layer reported twice in one iteration, or once
  // the pipeline has failed (the first failure, naming the layer and the scheme, is kept).
  Status gradientReady(size_t layer);
  // A layer is reported again only after waitForParameters returned for its previous report.
  //
  // Waits until the sync of layer l reported last has updated its parameters; returns at once
  // when there is none outstanding (before the layer's first report, or a second wait: the
  // parameters are current). A sync that failed and the deadline passing are errors naming the
  // layer.
  Status waitForParameters(size_t layer, Deadline deadline);
  // Every layer has been reported in this iteration; fails naming those that were not.
  Status endIteration();
  // Whether any layer was ever reported (a restore must come before).
  bool anyReported() const;
  // Waits until every reported sync has completed and its iteration is closed.
  Status drain(Deadline deadline);

 private:
  struct Started {
    size_t unit = 0;
    uint64_t iteration = 0;
    transport::RequestPtr request;
    Clock::time_point reported{}, started{};
  };
  struct LayerState {
    uint64_t reported = 0;   // gradientReady calls
    uint64_t completed = 0;  // syncs completed (successfully or not)
    uint64_t waited = 0;     // waitForParameters calls that returned updated parameters
    Clock::time_point reported_at{};
  };

  void runStarter();
  void runCompleter();
  // Takes the earliest-started sync that has finished, if any (its slot keeps a null request until
  // the slots before it are taken too), and frees the taken slots at the front; mutex_ held.
  bool takeFinished(Started& next);
  Status copyIn(size_t layer);
  Status deliver(size_t unit);  // a completed unit's parameters to its layers' buffers
  void fail(Status status);     // keeps the first failure; mutex_ held

  LayerSync& sync_;
  const SyncUnits units_;
  const std::vector<LayerSource> sources_;
  const PipelineOptions options_;
  const uint64_t first_iteration_;

  mutable std::mutex mutex_;              // everything below but sync_ and the two per-thread vectors
  std::condition_variable changed_;       // a layer's sync completed, an iteration closed, a failure
  std::condition_variable starter_wake_;  // a layer was reported, an iteration closed, stop
  // The completer's wake-up: a started sync finished (Request::signalOnCompletion), a sync was
  // started, stop.
  const std::shared_ptr<transport::CompletionSignal> completions_ = std::make_shared<transport::CompletionSignal>();
  std::vector<LayerState> layers_;
  std::vector<size_t> unit_copied_;                       // members copied in this iteration, per unit (starter only)
  std::vector<Clock::time_point> completed_reported_at_;  // per layer, for on_sync (completer only)
  // Reported layers not yet started, and started syncs not yet freed (collected ones wait for
  // those started before them): fixed-capacity rings of two iterations' layers (a layer is reported again only after
  // its last sync was waited for, so at most two iterations are ever in flight).
  struct Ready {
    size_t layer = 0;
    uint64_t iteration = 0;
  };
  std::vector<Ready> ready_;
  size_t ready_head_ = 0, ready_count_ = 0;
  std::vector<Started> started_;
  size_t started_head_ = 0, started_count_ = 0;
  uint64_t trainer_iteration_ = 0;  // endIteration calls (counters here count from 0)
  uint64_t closed_iterations_ = 0;  // iterations closed on sync_ (all layers collected)
  uint64_t collected_in_iteration_ = 0;
  Status failure_;
  bool stopping_ = false;

  std::mutex sync_mutex_;  // the LayerSync is driven from both threads, one call at a time
  std::thread starter_, completer_;
};

}  // namespace poseidon::trainer
