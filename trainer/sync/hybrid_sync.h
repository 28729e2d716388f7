// HybridSync: a worker's side of HybComm. Each layer of the model is synchronised, every
// iteration, by the scheme HybComm names for it — a table of syncers, one per scheme in use
// (scheme_syncers.h: PS summation servers, ring all-reduce, the Adam-style scheme, SFB) — and the
// same optimizer step is then applied to this worker's replica of the layer (replica.h). The
// weights and the optimizer state never leave the workers, so a layer can change scheme from one
// iteration to the next at no cost, and all replicas stay bit-identical whatever the schemes
// (each scheme gives every worker the same bits; the order of a sum differs between schemes, so
// two schemes agree to rounding, not to the bit).
//
// Syncs are non-blocking: startLayer() returns a request at once and waitLayer() collects it, so
// layers of different schemes can be in flight together (wait-free backpropagation,
// [Poseidon ATC'17] section 3.1); syncLayer() is the two in turn.
//
// One object per worker; the schemes' contexts are separate (each scheme owns the notification
// streams of its pairs): the PS context holds the P1 workers then the P2 servers, the SFB and
// ring contexts the P1 workers, the Adam context the P1 workers then its servers. Gradients of
// an FC layer come as factors: u(l) (M x K) and v(l) (N x K), K the model's batch; the full
// M x N gradient the PS and ring schemes need is formed from them at the sync's start (a trainer
// on PS computes that product in its backward pass anyway). Other layers give their gradient in
// gradient(l). An FC layer's bias travels with it: its gradient is the row sums of U
// (kernels/sf_bias.h), formed by SFB and the Adam servers from the factors they receive and by
// each worker for the PS and the ring (M floats next to the M x N).
#pragma once

#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kernels/optimizer_config.h"
#include "model/model.h"
#include "ps/push_schedule.h"
#include "trainer/hybcomm/hybcomm.h"
#include "trainer/sync/layer_sync.h"
#include "transport/bootstrap/store.h"
#include "transport/context.h"
#include "transport/request.h"

namespace poseidon::trainer {

struct HybridContexts {
  transport::Context* ps = nullptr;    // required: P1 workers + P2 summation servers
  transport::Context* sfb = nullptr;   // needed when any layer may go SFB
  transport::Context* ring = nullptr;  // ... ring
  transport::Context* adam = nullptr;  // ... Adam (P1 workers + Adam servers)
};

struct HybridOptions {
  int workers = 1;                           // P1
  int ps_servers = 1;                        // P2 (ranks P1.. of the PS context)
  int adam_servers = 1;                      // ranks P1.. of the Adam context
  uint64_t chunk_bytes = uint64_t{2} << 20;  // the PS's chunks (each layer starts a fresh one)
  ps::PushSchedule push;                     // the PS client's, for the layers HybComm sends there
  kernels::OptimizerConfig optimizer;        // run by every worker; grad_scale is set to 1/P1 (the mean)
  HybCommOptions hybcomm;
  std::string name = "hybrid";  // store keys of this job
  // Every this many iterations the workers compare a hash of every layer's replica through the
  // store (sfb/replica_check.h) and fail naming the ranks that differ; 0: never. On by default
  // in debug builds only: it costs a store round trip per layer.
#ifdef NDEBUG
  uint64_t replica_check_every = 0;
#else
  uint64_t replica_check_every = 50;
#endif
};

// The schemes a job with this model and options may use in some iteration (PS always): the
// server processes of a scheme need starting only when it is listed.
Result<std::vector<scheme::Scheme>> schemesInUse(const model::Model& model, const HybridOptions& options);

class HybridSync : public LayerSync {
 public:
  // Every worker calls this with the same model and options; the model's layers are synced, its
  // batch is K (the rank of each worker's FC gradient). Sets up each scheme whose context is given
  // (the PS always), with its buffers registered once. Fails, naming it, when HybComm may pick a
  // scheme whose context is missing. The contexts and the store must outlive it.
  static Result<std::unique_ptr<HybridSync>> start(const HybridContexts& contexts, transport::bootstrap::Store& store,
                                                   model::Model model, const HybridOptions& options, Deadline deadline);
  ~HybridSync() override = default;

  // params(layer) is this worker's replica of the layer (bindParams: Replica::bindParams);
  // iteration() the optimizer step the next iteration applies.
  const model::Layer& layer(size_t layer) const override { return hybcomm().layer(layer); }
  // The layer's optimizer state, word 0 or 1 (momentum; Adam's two moments): params(layer).size()
  // floats, or empty where the optimizer keeps fewer words. A checkpoint saves and restores it.
  virtual std::span<float> optimizerState(size_t layer, int word) = 0;
  // Continues from `iteration` (a restored checkpoint): the optimizer's schedule and bias
  // correction go on from there. Refused while a sync is started. HybComm's own bookkeeping is
  // not restored: the closed form and fixed schemes need none; an adaptive run times afresh.
  virtual Status setIteration(uint64_t iteration) = 0;

  // startLayer (layer_sync.h) uses the scheme HybComm picked; waitLayer also records the sync's
  // time with HybComm; endIteration runs HybComm's decision points (they agree across workers
  // through the store) and the replica check when it is due. syncLayer: startLayer() then
  // waitLayer().
  virtual Result<LayerSyncResult> syncLayer(size_t layer, Deadline deadline) = 0;

  virtual const HybComm& hybcomm() const = 0;
};

}  // namespace poseidon::trainer
