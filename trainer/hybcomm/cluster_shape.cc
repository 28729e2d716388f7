#include "trainer/hybcomm/cluster_shape.h"

namespace poseidon::trainer {

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
