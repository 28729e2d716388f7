// SfBroadcast: sufficient-factor broadcasting among the P1 workers of one transport context.
//
// Per FC layer and iteration, each worker writes its factors U (M x K) and V (N x K) into every
// peer's receive buffer with one one-sided write per peer, then rebuilds G = sum_p U_p V_p^T from
// all P1 workers' factors (its own included, in rank order) and applies the optimizer in the
// same fused pass (kernels::sfUpdate, the exact method): every replica applies the same float
// operations in the same order to the same inputs and stays bit-identical.
//
// Usage per layer and iteration: fill u(l) and v(l), broadcast(l), later update(l, ...). Leave
// u(l) and v(l) untouched between broadcast(l) and the return of update(l): the writes and this
// worker's own update read them. Calls for different layers may come from different threads at
// the same time; calls for one layer must not overlap (an overlapping call is refused).
//
// Double buffering: a layer's receive slots come in two banks, by iteration parity, and iteration
// t's factors land in bank t % 2. Under BSP that is enough: a peer can be at most one iteration
// ahead of this worker on a layer, because its factors of t + 1 need its update of t, which
// waited for this worker's factors of t; and its factors of t + 2 would need this worker's
// factors of t + 1, which broadcast() sends only after this worker's update of t has finished
// reading bank t % 2. So while update t reads bank t % 2, peers write only bank (t + 1) % 2. The
// rule is enforced here (a broadcast of t + 1 before update t is refused) and checked on receipt
// (a peer more than one ahead is a protocol error naming it).
//
// The context serves this object only, for its whole life: it owns the recvImm() stream of every
// pair (another reader would steal immediates). Destroy it only once no peer writes any more
// (after every worker's last update, or when the job is torn down).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "kernels/dispatch.h"
#include "model/layer.h"
#include "scheme/serial_driver.h"
#include "scheme/traffic.h"
#include "sfb/sf_inbox.h"
#include "sfb/sf_slots.h"
#include "transport/bootstrap/store.h"
#include "transport/context.h"

namespace poseidon::sfb {

class SfBroadcast {
 public:
  // Registers this worker's factor buffer and its receive buffer (once, reused every iteration),
  // publishes the receive buffer through the store and fetches every peer's. `layers` are the
  // model's fully-connected layers (M x N from Layer::fc()), `batch` the per-worker batch K, the
  // rank of every factor. A layer with a bias (Layer::fc().bias) updates it too, from the row sums
  // of every worker's U (kernels/sf_bias.h): no extra traffic. `context` must be connected and outlive
  // this object; every rank must be given the same layers and batch. Fails naming the layer for
  // one that is not FC or a bad shape, the peer whose layers differ or whose buffer is missing by
  // the deadline.
  static Result<std::unique_ptr<SfBroadcast>> start(transport::Context& context, transport::bootstrap::Store& store,
                                                    std::vector<model::Layer> layers, uint64_t batch,
                                                    Deadline deadline);
  SfBroadcast(const SfBroadcast&) = delete;
  SfBroadcast& operator=(const SfBroadcast&) = delete;
  ~SfBroadcast();

  size_t layerCount() const { return layout_.layerCount(); }
  const model::Layer& layer(size_t l) const { return layout_.layer(l); }
  size_t batch() const { return layout_.batch(); }
  int rank() const { return context_.rank(); }
  int workers() const { return context_.size(); }

  // Where the trainer puts this worker's factors of the layer's current iteration: U rows x rank
  // and V cols x rank, row-major. Empty for an unknown layer.
  std::span<float> u(size_t layer);
  std::span<float> v(size_t layer);

  // The layer's current iteration: the number of updates that have completed on it.
  uint64_t iteration(size_t layer) const;

  // Non-blocking: posts one write of this worker's U and V of the current iteration to every
  // peer. Refused when the layer's last broadcast has not been followed by its update. A write
  // that fails at once (broken connection) is reported here naming the peer; otherwise failures
  // surface in update().
  Status broadcast(size_t layer);

  // Waits until every peer's factors of the current iteration have landed (a timeout names the
  // peers still missing and the layer; a broken or misbehaving peer fails at once, named), runs
  // the fused SF update on params and the optimizer state the step needs (the layer's params()
  // floats each: the M x N weight row-major, then the M biases when the layer has them; on the
  // CPU: the factors live in host memory), waits until this worker's own writes of the layer
  // have completed, then advances the layer's iteration. After a timeout it may be called again:
  // it resumes where it stopped and never applies an update twice.
  Status update(size_t layer, float* params, float* state0, float* state1, const kernels::OptimizerStep& step,
                kernels::Place place, Deadline deadline);

  // Where a layer's update lands: its weights (then its bias) and the optimizer state the step
  // needs (Layer::params() floats each, host memory; null where the step needs none).
  struct Target {
    float* params = nullptr;
    float* state0 = nullptr;
    float* state1 = nullptr;
  };
  // Non-blocking: broadcast(layer) now, then update(layer, ...) on this object's driver thread.
  // The request completes once target.params hold the iteration's update, or fails naming the
  // peer and the layer, by `deadline` at the latest (or, queued behind updates with later
  // deadlines, as soon as its turn comes). Starts of different layers finish in start order.
  transport::RequestPtr start(size_t layer, const Target& target, const kernels::OptimizerStep& step,
                              Deadline deadline);

  // What this worker's broadcasts of the layer sent and received, summed over iterations.
  scheme::Traffic traffic(size_t layer) const;

 private:
  // Where a layer is within one iteration.
  enum class Phase : uint8_t {
    kIdle,       // waiting for broadcast()
    kBroadcast,  // writes posted; update() not yet applied
    kApplied,    // update applied; this worker's writes still completing
  };

  struct LayerState {
    std::atomic<bool> busy{false};              // a call for this layer is running
    Phase phase = Phase::kIdle;                 // only read and written by the call holding `busy`
    std::vector<transport::RequestPtr> writes;  // one per peer (peer order), reused
    // Every worker's U and V in rank order, per bank: this worker's from its factor buffer, the
    // peers' from their slots. Fixed at start.
    std::vector<const float*> u[2], v[2];
    std::vector<float> bias_gradient;  // rows floats when the layer has a bias; fixed at start
    std::atomic<uint64_t> sent_messages{0};
    std::atomic<uint64_t> sent_bytes{0};
  };

  class LayerCall;  // holds a layer's `busy` flag for one call

  SfBroadcast(transport::Context& context, SfSlotLayout layout);

  Status awaitFactors(size_t layer, uint64_t iteration, Deadline deadline);
  Status updateBias(size_t layer, size_t bank, float* params, float* state0, float* state1,
                    const kernels::OptimizerStep& step);
  Status completeWrites(size_t layer, uint64_t iteration, Deadline deadline);
  // "layer 2 'fc7'": how messages name a layer.
  std::string describe(size_t layer) const;
  Status unknownLayer(size_t layer, const char* call) const;

  transport::Context& context_;
  const SfSlotLayout layout_;
  std::vector<int> peers_;  // every rank but this one, ascending
  // The registered memory; the regions are declared after the buffers, so they are deregistered
  // before the memory goes.
  std::vector<float> send_;
  std::vector<float> receive_;
  std::unique_ptr<transport::MemoryRegion> send_region_;
  std::unique_ptr<transport::MemoryRegion> receive_region_;
  std::vector<transport::RemoteDescriptor> remotes_;  // by rank
  std::vector<std::atomic<uint64_t>> iterations_;     // by layer; read by the inboxes' checks
  std::vector<LayerState> layers_;
  std::vector<std::unique_ptr<SfInbox>> inboxes_;  // parallel to peers_
  std::unique_ptr<scheme::SerialDriver> driver_;   // runs start()'s updates; stopped first
};

}  // namespace poseidon::sfb
