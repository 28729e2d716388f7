// ClusterShape: the job as the cost model sees it, P1, P2 and K in the papers' notation. The
// layers it prices are model layers (model/layer.h): a fully-connected layer with an M x N
// weight has a gradient of rank at most K per worker (U V^T with U = dL/dY, M x K, and V = X,
// N x K, the sufficient factors); any other layer (conv, batch norm, ...) is priced only by its
// parameter count, because its gradient has no such form.
#pragma once

#include <cstdint>

#include "common/status.h"

namespace poseidon::trainer {

// Poseidon runs a server shard on every worker node, so the usual job has servers == workers;
// the PS formula prices a node that hosts one of each.
struct ClusterShape {
  int64_t workers = 1;  // P1
  int64_t servers = 1;  // P2
  int64_t batch = 1;    // K, samples per worker per iteration (a model's Model::batch())
};

// Fails, naming the value, when P1, P2 or K is < 1.
Status validateCluster(const ClusterShape& cluster);

}  // namespace poseidon::trainer
