// SfLayer and LayerTraffic: a fully-connected layer as sufficient-factor broadcasting sees it, and
// what its broadcasts moved.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace poseidon::sfb {

// The weight is rows x cols (M x N); each worker's gradient is U V^T with U = dL/dY (M x K) and
// V = X (N x K), K the worker's batch (the rank of its gradient).
struct SfLayer {
  std::string name;
  size_t rows = 0;  // M
  size_t cols = 0;  // N
  size_t rank = 0;  // K
};

// One worker's traffic for one layer, summed over iterations. Sent counts what this worker
// posted (one write of its U and V per peer per iteration); received counts the peers' writes
// that landed and were checked. Comparable with sfbNodeTraffic() (cost_model.h): floats x 4
// bytes, messages one per peer per iteration each way.
struct LayerTraffic {
  uint64_t sent_bytes = 0;
  uint64_t sent_messages = 0;
  uint64_t received_bytes = 0;
  uint64_t received_messages = 0;

  bool operator==(const LayerTraffic&) const = default;
};

}  // namespace poseidon::sfb
