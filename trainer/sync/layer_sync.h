// LayerSync: what the WFBP pipeline (trainer/wfbp/pipeline.h) and the Session drive, per layer
// and per iteration, whoever runs the optimizer.
//
// Two implementations: HybridSync (hybrid_sync.h: BSP, each layer by the scheme HybComm picks,
// the optimizer on the workers, the PS servers only sum) and ServerOptimizedSync
// (server_optimized_sync.h: every layer through the parameter server under BSP, SSP or async
// consistency, the optimizer on the servers). The pipeline's contract is the same for both:
// startLayer() returns at once, the request completes once params(layer) hold the parameters the
// consistency asks for, and waitLayer() collects it.
#pragma once

#include <cstdint>
#include <span>

#include "common/deadline.h"
#include "common/status.h"
#include "model/layer.h"
#include "scheme/scheme.h"
#include "transport/request.h"

namespace poseidon::trainer {

// What one sync did: for HybComm's record(), the timeline and the benchmark's report.
struct LayerSyncResult {
  scheme::Scheme scheme = scheme::Scheme::kPs;
  double seconds = 0;  // from the first send to the updated weights
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
  // The version (PS clock) of the parameters the sync left in params(layer): every worker's
  // updates of clocks < version are in them. BSP: the iteration + 1; SSP(s): at least
  // iteration + 1 - s; async: whatever the servers had.
  uint64_t version = 0;
};

class LayerSync {
 public:
  virtual ~LayerSync() = default;

  virtual size_t layerCount() const = 0;
  // The layer's kind and shape (its name, an FC layer's M x N).
  virtual const model::Layer& layer(size_t layer) const = 0;
  // This worker's parameters of the layer (Layer::params(): FC: the M x N weight row-major, then
  // the M biases when the layer has them).
  virtual std::span<float> params(size_t layer) = 0;
  // Keeps the layer's parameters in the trainer's own memory from now on: the values there are
  // the layer's. Call before the layer's first sync.
  virtual Status bindParams(size_t layer, std::span<float> params) = 0;
  // The iteration the next sync belongs to (iterations ended so far, or restored).
  virtual uint64_t iteration() const = 0;
  // FC layers: this iteration's factors, U (M x K) and V (N x K) row-major.
  virtual std::span<float> u(size_t layer) = 0;
  virtual std::span<float> v(size_t layer) = 0;
  // Other layers: this iteration's gradient.
  virtual std::span<float> gradient(size_t layer) = 0;

  // Starts the layer's sync for the current iteration; returns at once. The request completes
  // once params(layer) hold the update the consistency asks for, or fails naming the scheme, the
  // layer and the peer, by `deadline` at the latest. Until then the layer's gradient (or factors)
  // and parameters belong to the sync. Every worker starts the same layers in the same order
  // within an iteration; a layer is started at most once per iteration.
  virtual transport::RequestPtr startLayer(size_t layer, Deadline deadline) = 0;
  // Waits for the layer's started sync of this iteration and reports what it did.
  virtual Result<LayerSyncResult> waitLayer(size_t layer, Deadline deadline) = 0;
  // Closes the iteration. Fails when a started sync was not waited for.
  virtual Status endIteration(Deadline deadline) = 0;
  // Tells the servers this worker is done.
  virtual Status finish(Deadline deadline) = 0;
};

}  // namespace poseidon::trainer
