#include "trainer/hybcomm/layer_shape.h"

#include <utility>

namespace poseidon::trainer {


LayerShape LayerShape::fullyConnected(std::string name, int64_t m, int64_t n, int64_t bias) {
  LayerShape layer;
  layer.name = std::move(name);
  layer.kind = LayerKind::kFullyConnected;
  layer.m = m;
  layer.n = n;
  layer.bias = bias;
  return layer;
}

LayerShape LayerShape::other(std::string name, int64_t params) {
  LayerShape layer;
  layer.name = std::move(name);
  layer.kind = LayerKind::kOther;
  layer.params = params;
  return layer;
}

Status validateLayer(const LayerShape& layer) {
  if (!layer.isFullyConnected()) {
    if (layer.params < 1 || layer.params > kMaxLayerFloats) {
      return makeStatus(StatusCode::kInvalidArgument, "layer '{}' has {} parameters, expected 1..2^53", layer.name,
                        layer.params);
    }
    return Status::ok();
  }
  if (layer.m < 1 || layer.n < 1) {
    return makeStatus(StatusCode::kInvalidArgument, "FC layer '{}' is {} x {}, expected M >= 1 and N >= 1",
                      layer.name, layer.m, layer.n);
  }
  if (layer.m > kMaxLayerFloats / layer.n) {
    return makeStatus(StatusCode::kInvalidArgument, "FC layer '{}' of {} x {} exceeds 2^53 weights", layer.name,
                      layer.m, layer.n);
  }
  if (layer.bias != 0 && layer.bias != layer.m) {
    return makeStatus(StatusCode::kInvalidArgument, "FC layer '{}' has bias {}, expected 0 or M = {}", layer.name,
                      layer.bias, layer.m);
  }
  return Status::ok();
}

Status validateCluster(const ClusterShape& cluster) {
  if (cluster.workers < 1) {
    return makeStatus(StatusCode::kInvalidArgument, "workers P1 = {}, expected >= 1", cluster.workers);
  }
  if (cluster.servers < 1) {
    return makeStatus(StatusCode::kInvalidArgument, "servers P2 = {}, expected >= 1", cluster.servers);
  }
  if (cluster.batch < 1) {
    return makeStatus(StatusCode::kInvalidArgument, "batch K = {} per worker, expected >= 1", cluster.batch);
  }
  return Status::ok();
}

}  // namespace poseidon::trainer
