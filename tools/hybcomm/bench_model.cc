#include "tools/hybcomm/bench_model.h"

#include <algorithm>

namespace poseidon::tools {

using sfb::Scheme;

namespace {

// The traffic of worker P1-1's node: a worker alone there unless every worker hosts a server.
Result<sfb::NodeTraffic> lastWorkerTraffic(Scheme scheme, const sfb::LayerShape& layer,
                                                      const sfb::ClusterShape& cluster) {
  switch (scheme) {
    case Scheme::kPs:
      return cluster.workers > cluster.servers ? sfb::psWorkerOnlyNodeTraffic(layer, cluster)
                                               : sfb::psNodeTraffic(layer, cluster);
    case Scheme::kSfb: return sfb::sfbNodeTraffic(layer, cluster);
    case Scheme::kAdam: return sfb::adamWorkerTraffic(layer, cluster);
    case Scheme::kRing: return sfb::ringNodeTraffic(layer, cluster);
  }
  return sfb::busiestNodeTraffic(scheme, layer, cluster);  // refuses the unknown value
}

}  // namespace

std::array<double, 4> modelSeconds(const sfb::LayerShape& layer, const sfb::ClusterShape& cluster,
                                   const BenchLinks& links) {
  std::array<double, 4> seconds = {-1, -1, -1, -1};
  if (!links.given()) return seconds;
  const sfb::LinkModel link{links.latency_s, links.bits_per_s / 8};
  const sfb::LinkModel slow{links.latency_s, links.slow_worker_bits_per_s / 8};
  for (Scheme scheme : {Scheme::kPs, Scheme::kSfb, Scheme::kAdam, Scheme::kRing}) {
    auto busiest = sfb::busiestNodeTraffic(scheme, layer, cluster);
    if (!busiest) continue;  // SFB and Adam need an FC layer
    auto t = sfb::estimateSeconds(*busiest, link);
    if (!t) continue;
    double worst = *t;
    if (links.slow_worker_bits_per_s > 0 && links.slow_worker_bits_per_s < links.bits_per_s) {
      // Its own traffic on its lower link (a failure here would keep the common link's figure).
      auto own = lastWorkerTraffic(scheme, layer, cluster);
      if (own && links.slow_worker_upload_only) {  // its sends on the slow direction, its receives on the common rate
        auto up = sfb::estimateSeconds({own->sent_floats, 0, own->sent_messages, 0}, slow);
        auto down = sfb::estimateSeconds({0, own->received_floats, 0, own->received_messages}, link);
        if (up && down) worst = std::max({worst, *up, *down});
      } else if (own) {
        if (auto t_slow = sfb::estimateSeconds(*own, slow)) worst = std::max(worst, *t_slow);
      }
    }
    seconds[static_cast<size_t>(scheme)] = worst;
  }
  return seconds;
}

}  // namespace poseidon::tools
