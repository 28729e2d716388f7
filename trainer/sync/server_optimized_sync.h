// ServerOptimizedSync: a worker's side when every layer goes through the parameter server and the
// servers run the optimizer — the layout SSP ([Poseidon 2015], stale synchronous parallel) and
// asynchronous Downpour training ([DistBelief] section 4.1) need, since a worker that reads stale
// parameters must not apply an update of its own that its peers never see.
//
// Per layer and iteration: the worker's full gradient (an FC layer's formed from its factors, the
// bias from U's row sums: Replica::loadGradient, the same floats HybridSync's PS syncer sends) is
// pushed to the servers, which apply it with the job's optimizer on the mean (grad_scale 1/P1), and
// the layer's parameters are pulled into the trainer's buffer at the version the consistency asks
// (ps/consistency.h): BSP and SSP(0) every worker's update of this iteration, SSP(s) at least
// iteration + 1 - s, async whatever the servers have (every n_fetch iterations; n_push
// accumulates). A fast worker therefore runs ahead of the slowest by at most s iterations.
//
// The model the PS holds is HybridSync's (trainer/sync/hybrid_ps.h: one tensor per layer, each
// layer in chunks of its own), so a layer's push and pull never wait for a neighbour.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/model.h"
#include "ps/consistency.h"
#include "ps/push_schedule.h"
#include "trainer/sync/layer_sync.h"
#include "transport/bootstrap/store.h"
#include "transport/context.h"

namespace poseidon::trainer {

struct ServerOptimizedOptions {
  int workers = 1;     // P1: ranks 0.. of the PS context
  int ps_servers = 1;  // P2: ranks P1.. of the PS context
  uint64_t chunk_bytes = uint64_t{2} << 20;
  ps::Consistency consistency;  // the servers' (the PS start-up agreement checks it)
  ps::PushSchedule push;        // the PS client's
  std::string name = "hybrid";  // store keys of this job (the servers are named alike)
  // The clocks this worker can resume from (ps::ClientOptions); nullopt: any.
  std::optional<std::vector<uint64_t>> resumable_clocks;
};

class ServerOptimizedSync : public LayerSync {
 public:
  // Every worker calls this with the same model (its batch is K) and options; the servers run
  // ps::Server over hybridPsModel(model.layers()) (startLayerServer in hybrid_ps.h). The context
  // and the store must outlive the object.
  static Result<std::unique_ptr<ServerOptimizedSync>> start(transport::Context& ps_context,
                                                            transport::bootstrap::Store& store, model::Model model,
                                                            const ServerOptimizedOptions& options, Deadline deadline);

  // After bindParams() of every layer and before the first sync: worker 0's parameters become the
  // servers' initial model, and every worker pulls them into its buffers (so all start alike).
  // On a resumed job (iteration() is then the clock it resumed from) every worker pulls the
  // servers' parameters instead.
  virtual Status initialize(Deadline deadline) = 0;

  // The newest clock every server has written a checkpoint of, as this worker has heard
  // (ps::Client::committedCheckpoint).
  virtual uint64_t committedCheckpoint() const = 0;
};

}  // namespace poseidon::trainer
