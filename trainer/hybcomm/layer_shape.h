// LayerShape and ClusterShape: what the cost model needs to know about one layer and the job.
//
// A fully-connected layer with an M x N weight has a gradient of rank at most K per worker: it is
// U V^T with U = dL/dY (M x K) and V = X (N x K), the sufficient factors. Any other layer (conv,
// batch norm, ...) is priced only by its parameter count, because its gradient has no such form.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace poseidon::trainer {


enum class LayerKind { kFullyConnected, kOther };

struct LayerShape {
  std::string name;
  LayerKind kind = LayerKind::kOther;
  int64_t m = 0;  // FC: outputs, the rows of the weight (U is M x K)
  int64_t n = 0;  // FC: inputs, the columns of the weight (V is N x K)
  // FC: bias floats (M, or 0 without a bias). The papers' formulas price the weight only and so
  // does the cost model: SFB recovers the bias gradient from U (its row sums) at no extra
  // traffic, PS carries M more floats next to M*N (under 0.1% for every layer in the zoo).
  int64_t bias = 0;
  int64_t params = 0;  // other layers: all parameters (weights and biases)

  static LayerShape fullyConnected(std::string name, int64_t m, int64_t n, int64_t bias = 0);
  static LayerShape other(std::string name, int64_t params);

  bool isFullyConnected() const { return kind == LayerKind::kFullyConnected; }
  // Floats of the gradient a full-matrix scheme (PS, ring) moves: M*N for FC, params otherwise.
  int64_t denseFloats() const { return isFullyConnected() ? m * n : params; }
  // Every parameter of the layer, bias included.
  int64_t totalParams() const { return isFullyConnected() ? m * n + bias : params; }
};

// P1, P2 and K in the papers' notation. Poseidon runs a server shard on every worker node, so the
// usual job has servers == workers; the PS formula prices a node that hosts one of each.
struct ClusterShape {
  int64_t workers = 1;  // P1
  int64_t servers = 1;  // P2
  int64_t batch = 1;    // K, samples per worker per iteration
};

// Largest M*N (or parameter count) accepted: 2^53, so every count stays exact in a double.
inline constexpr int64_t kMaxLayerFloats = int64_t{1} << 53;

// Fails, naming the layer and the value, when M, N or params are < 1, bias is not 0 or M, or
// the layer exceeds kMaxLayerFloats.
Status validateLayer(const LayerShape& layer);
// Fails, naming the value, when P1, P2 or K is < 1.
Status validateCluster(const ClusterShape& cluster);

}  // namespace poseidon::trainer
