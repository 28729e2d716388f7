#include "trainer/hybcomm/cost_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace poseidon::trainer {

namespace {

Status validate(const model::Layer& layer, const ClusterShape& cluster) {
  POSEIDON_RETURN_IF_ERROR(layer.validate());
  return validateCluster(cluster);
}

// Sufficient factors exist only for a fully-connected layer's weight.
Status validateFactored(const model::Layer& layer, const ClusterShape& cluster, const char* scheme) {
  POSEIDON_RETURN_IF_ERROR(validate(layer, cluster));
  if (!layer.isFullyConnected()) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "layer '{}' is not fully connected, expected an M x N weight for {} (it has {} parameters)",
                      layer.name(), scheme, layer.params());
  }
  return Status::ok();
}

// A node whose sends mirror its receives, as in every symmetric scheme.
NodeTraffic symmetric(double floats_each_way, int64_t messages_each_way) {
  return {floats_each_way, floats_each_way, messages_each_way, messages_each_way};
}

// K(M+N): one worker's factors U (M x K) and V (N x K).
double factorFloats(const model::Layer& fc, const ClusterShape& cluster) {
  return static_cast<double>(cluster.batch) * (static_cast<double>(fc.fc().rows) + static_cast<double>(fc.fc().cols));
}

}  // namespace

Result<NodeTraffic> psNodeTraffic(const model::Layer& layer, const ClusterShape& cluster) {
  POSEIDON_RETURN_IF_ERROR(validate(layer, cluster));
  // Each way: X/P2 to each remote shard (as worker) and to each remote worker (as server). One
  // division last, so the count is exact whenever P2 divides it.
  const int64_t remote = (cluster.servers - 1) + (cluster.workers - 1);
  return symmetric(
      static_cast<double>(layer.denseFloats()) * static_cast<double>(remote) / static_cast<double>(cluster.servers),
      remote);
}

Result<NodeTraffic> psWorkerOnlyNodeTraffic(const model::Layer& layer, const ClusterShape& cluster) {
  POSEIDON_RETURN_IF_ERROR(validate(layer, cluster));
  if (cluster.workers <= cluster.servers) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "{} workers and {} servers: with the servers colocated, no node has a worker alone",
                      cluster.workers, cluster.servers);
  }
  return symmetric(static_cast<double>(layer.denseFloats()), cluster.servers);
}

Result<NodeTraffic> sfbNodeTraffic(const model::Layer& layer, const ClusterShape& cluster) {
  POSEIDON_RETURN_IF_ERROR(validateFactored(layer, cluster, "SFB"));
  const int64_t peers = cluster.workers - 1;
  return symmetric(factorFloats(layer, cluster) * static_cast<double>(peers), peers);
}

Result<NodeTraffic> adamWorkerTraffic(const model::Layer& layer, const ClusterShape& cluster) {
  POSEIDON_RETURN_IF_ERROR(validateFactored(layer, cluster, "Adam"));
  return NodeTraffic{factorFloats(layer, cluster), static_cast<double>(layer.denseFloats()), 1, 1};
}

Result<NodeTraffic> adamServerTraffic(const model::Layer& layer, const ClusterShape& cluster) {
  POSEIDON_RETURN_IF_ERROR(validateFactored(layer, cluster, "Adam"));
  const double workers = static_cast<double>(cluster.workers);
  return NodeTraffic{workers * static_cast<double>(layer.denseFloats()), workers * factorFloats(layer, cluster),
                     cluster.workers, cluster.workers};
}

Result<NodeTraffic> ringNodeTraffic(const model::Layer& layer, const ClusterShape& cluster) {
  POSEIDON_RETURN_IF_ERROR(validate(layer, cluster));
  const int64_t steps = 2 * (cluster.workers - 1);  // reduce-scatter, then all-gather
  // Each step moves one segment of X/P1 each way.
  return symmetric(
      static_cast<double>(layer.denseFloats()) * static_cast<double>(steps) / static_cast<double>(cluster.workers),
      steps);
}

Result<NodeTraffic> busiestNodeTraffic(scheme::Scheme scheme, const model::Layer& layer, const ClusterShape& cluster) {
  switch (scheme) {
    case scheme::Scheme::kPs: return psNodeTraffic(layer, cluster);
    case scheme::Scheme::kSfb: return sfbNodeTraffic(layer, cluster);
    case scheme::Scheme::kAdam: return adamServerTraffic(layer, cluster);
    case scheme::Scheme::kRing: return ringNodeTraffic(layer, cluster);
  }
  return makeStatus(StatusCode::kInvalidArgument, "scheme {} is not one of PS, SFB, Adam, ring",
                    static_cast<int>(scheme));
}

Result<Poseidon2015Totals> poseidon2015Totals(const model::Layer& layer, const ClusterShape& cluster) {
  POSEIDON_RETURN_IF_ERROR(validateFactored(layer, cluster, "the SF totals of [Poseidon 2015]"));
  const double p = static_cast<double>(cluster.workers);
  const double factors = factorFloats(layer, cluster);
  const double matrix = static_cast<double>(layer.denseFloats());
  return Poseidon2015Totals{(p - 1) * (p - 1) * factors, 2 * p * matrix, p * factors + p * matrix};
}

Result<double> estimateSeconds(const NodeTraffic& traffic, const LinkModel& link, Duplex duplex,
                               double bytes_per_float) {
  if (!std::isfinite(link.latency_s) || link.latency_s < 0) {
    return makeStatus(StatusCode::kInvalidArgument, "link latency {} s, expected a finite value >= 0", link.latency_s);
  }
  if (!std::isfinite(link.bytes_per_s) || link.bytes_per_s <= 0) {
    return makeStatus(StatusCode::kInvalidArgument, "link rate {} bytes/s, expected a finite value > 0",
                      link.bytes_per_s);
  }
  if (!std::isfinite(bytes_per_float) || bytes_per_float <= 0) {
    return makeStatus(StatusCode::kInvalidArgument, "{} bytes per float, expected > 0", bytes_per_float);
  }
  auto seconds = [&](int64_t messages, double floats) {
    return static_cast<double>(messages) * link.latency_s + floats * bytes_per_float / link.bytes_per_s;
  };
  if (duplex == Duplex::kHalf) return seconds(traffic.messages(), traffic.floats());
  return std::max(seconds(traffic.sent_messages, traffic.sent_floats),
                  seconds(traffic.received_messages, traffic.received_floats));
}

std::string formatCount(double count) {
  const double magnitude = std::fabs(count);
  if (magnitude >= 1e9) return fmt::format("{:.2f}G", count / 1e9);
  if (magnitude >= 1e6) return fmt::format("{:.2f}M", count / 1e6);
  if (magnitude >= 1e3) return fmt::format("{:.2f}K", count / 1e3);
  return fmt::format("{:.0f}", count);
}

}  // namespace poseidon::trainer
