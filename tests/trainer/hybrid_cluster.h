// An in-process HybridSync job for tests: P1 workers, P2 summation servers and S Adam servers,
// one thread each, with a context per scheme (tcp on loopback) and one file store.
#pragma once

#include <functional>
#include <vector>

#include "trainer/sync/hybrid_sync.h"

namespace poseidon::testing {

// How each worker runs an iteration's syncs: one layer at a time (start, wait), or every layer
// started in backward order and then waited for in forward order (as the next forward pass needs
// them: wait-free backpropagation) or in backward order.
enum class SyncOrder { kOneAtATime, kInFlightWaitForward, kInFlightWaitBackward };

struct HybridSpec {
  int workers = 2;
  int ps_servers = 1;
  int adam_servers = 1;
  int64_t batch = 4;
  uint64_t iterations = 5;
  uint64_t chunk_bytes = 4096;
  std::vector<model::Layer> layers;  // the model HybridSync syncs, at `batch`
  trainer::HybCommOptions hybcomm;
  const char* optimizer = "sgd:lr=0.1,momentum=0.9";
  std::chrono::seconds deadline{60};
  SyncOrder order = SyncOrder::kOneAtATime;
  // Each sync's own deadline (the job's deadline when zero).
  std::chrono::milliseconds sync_deadline{0};
  // When set and true for (worker, iteration, layer), that worker does not start that sync.
  std::function<bool(int, uint64_t, size_t)> skip;
  // When set, the model worker w builds instead of the spec's (a worker started differently).
  std::function<model::Model(int w, const model::Model& spec_model)> model_of;
};

struct HybridRun {
  std::vector<Status> worker_status;
  std::vector<Status> server_status;
  // Each worker's parameters at the end, per layer.
  std::vector<std::vector<std::vector<float>>> params;
  // Each worker's scheme per iteration per layer, and worker 0's HybComm choices.
  std::vector<std::vector<std::vector<scheme::Scheme>>> schemes;
  std::vector<trainer::Choice> choices;
  // Worker 0's bytes per layer sent + received, summed over iterations, as HybridSync measured.
  std::vector<uint64_t> bytes;
  // Node p hosts worker p and, for p < P2, PS server p (Poseidon's colocation): the payload bytes
  // it sent + received on the PS context with other nodes over the whole run (set-up included),
  // from the transport's pair counters.
  std::vector<uint64_t> ps_node_bytes;
  // Per worker, the layer syncs that completed successfully, in the order they were waited for.
  std::vector<std::vector<size_t>> synced;
  // Per worker, seconds from the start of the run until it returned (success or failure).
  std::vector<double> worker_seconds;
  bool ok() const;
  std::string failures() const;
};

// Worker w's factors / gradient of `layer` in `iteration`: deterministic, independent of the
// parameters, of mixed signs and magnitudes (so sums in other orders round differently).
void fillGradient(trainer::HybridSync& sync, size_t layer, int worker, uint64_t iteration, int64_t batch);

HybridRun runHybrid(const HybridSpec& spec);

}  // namespace poseidon::testing
