#include "tools/hybcomm/bench_model.h"

#include <algorithm>

namespace poseidon::tools {

using scheme::Scheme;

namespace {

// The traffic of worker P1-1's node: a worker alone there unless every worker hosts a server.
Result<trainer::NodeTraffic> lastWorkerTraffic(scheme::Scheme scheme, const model::Layer& layer,
                                               const trainer::ClusterShape& cluster) {
  switch (scheme) {
    case scheme::Scheme::kPs:
      return cluster.workers > cluster.servers ? trainer::psWorkerOnlyNodeTraffic(layer, cluster)
                                               : trainer::psNodeTraffic(layer, cluster);
    case scheme::Scheme::kSfb: return trainer::sfbNodeTraffic(layer, cluster);
    case scheme::Scheme::kAdam: return trainer::adamWorkerTraffic(layer, cluster);
    case scheme::Scheme::kRing: return trainer::ringNodeTraffic(layer, cluster);
  }
  return trainer::busiestNodeTraffic(scheme, layer, cluster);  // refuses the unknown value
}

}  // namespace

std::array<double, 4> modelSeconds(const model::Layer& layer, const trainer::ClusterShape& cluster,
                                   const BenchLinks& links) {
  std::array<double, 4> seconds = {-1, -1, -1, -1};
  if (!links.given()) return seconds;
  const trainer::LinkModel link{links.latency_s, links.bits_per_s / 8};
  const trainer::LinkModel slow{links.latency_s, links.slow_worker_bits_per_s / 8};
  for (scheme::Scheme scheme :
       {scheme::Scheme::kPs, scheme::Scheme::kSfb, scheme::Scheme::kAdam, scheme::Scheme::kRing}) {
    auto busiest = trainer::busiestNodeTraffic(scheme, layer, cluster);
    if (!busiest) continue;  // SFB and Adam need an FC layer
    auto t = trainer::estimateSeconds(*busiest, link);
    if (!t) continue;
    double worst = *t;
    if (links.slow_worker_bits_per_s > 0 && links.slow_worker_bits_per_s < links.bits_per_s) {
      // Its own traffic on its lower link (a failure here would keep the common link's figure).
      auto own = lastWorkerTraffic(scheme, layer, cluster);
      if (own && links.slow_worker_upload_only) {  // its sends on the slow direction, its receives on the common rate
        auto up = trainer::estimateSeconds({own->sent_floats, 0, own->sent_messages, 0}, slow);
        auto down = trainer::estimateSeconds({0, own->received_floats, 0, own->received_messages}, link);
        if (up && down) worst = std::max({worst, *up, *down});
      } else if (own) {
        if (auto t_slow = trainer::estimateSeconds(*own, slow)) worst = std::max(worst, *t_slow);
      }
    }
    seconds[static_cast<size_t>(scheme)] = worst;
  }
  return seconds;
}

}  // namespace poseidon::tools
