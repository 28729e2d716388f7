// The cost model's side of the benchmark: what sfb/cost_model.h predicts a layer's sync takes on
// the links the benchmark measured (iperf3's rate, poseidon-perf's latency), printed next to what
// the sync took, so the model's blind spots show: it prices bytes and messages on the network and
// no CPU work (SFB's P1 K M N reconstruction, forming U V^T), and no waiting between layers.
#pragma once

#include <array>

#include "model/layer.h"
#include "scheme/scheme.h"
#include "trainer/hybcomm/cost_model.h"

namespace poseidon::tools {

struct BenchLinks {
  double bits_per_s = 0;                 // every link, one direction; 0: no model
  double latency_s = 0;                  // per message, one way
  double slow_worker_bits_per_s = 0;     // worker P1-1's link when it is lower (0: as the others)
  bool slow_worker_upload_only = false;  // only its sending direction is lower
  bool given() const { return bits_per_s > 0; }
};

// Seconds per scheme (index: the scheme::Scheme value), -1 where the scheme does not apply or no links
// were given. The busiest node on the common link bounds the sync; with a slower worker link,
// that worker's own traffic on it (a worker-only node's under PS when P1 > P2) may bound it instead.
std::array<double, 4> modelSeconds(const model::Layer& layer, const trainer::ClusterShape& cluster,
                                   const BenchLinks& links);

}  // namespace poseidon::tools
