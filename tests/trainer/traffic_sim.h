// A simulated iteration of each synchronisation scheme for one FC layer: nodes exchange real
// payloads, every worker ends with the summed gradient (checked against a direct sum), and the
// network counts what each node sent and received. The cost-model formulas are checked against
// these counts, which come from who sends what to whom, not from the formulas (only the record
// they are kept in, NodeTraffic, is shared).
#pragma once

#include <cstdint>
#include <vector>

#include "trainer/hybcomm/cost_model.h"

namespace poseidon::trainer::sim {

// Counts messages between nodes; a message a node sends to itself stays in memory and is free.
class Network {
 public:
  explicit Network(int nodes) : counts_(static_cast<size_t>(nodes)) {}
  std::vector<double> send(int from, int to, std::vector<double> payload);
  const NodeTraffic& node(int index) const { return counts_.at(static_cast<size_t>(index)); }
  int nodes() const { return static_cast<int>(counts_.size()); }
  // The most floats any one node sent + received.
  double busiestFloats() const;

 private:
  std::vector<NodeTraffic> counts_;
};

// Each worker's sufficient factors: U_p (M x K) and V_p (N x K), row-major; its gradient is U_p V_p^T.
struct Factors {
  int64_t m = 0, n = 0, k = 0;
  std::vector<std::vector<double>> u, v;  // one per worker
  int workers() const { return static_cast<int>(u.size()); }
};

// Small integers, so every sum below is exact in double and results compare with ==.
Factors randomFactors(int workers, int64_t m, int64_t n, int64_t k, uint32_t seed);
// sum_p U_p V_p^T (M x N, row-major), computed directly.
std::vector<double> summedGradient(const Factors& factors);

struct Outcome {
  std::vector<std::vector<double>> gradient;  // what each worker ends with, per worker
  Network network;
};

// Worker p on node p. Servers on nodes 0..servers-1 (colocated; any beyond the workers run
// alone), or with `dedicated_servers` on nodes workers..workers+servers-1. The flattened matrix
// is cut into `servers` contiguous shards, sizes differing by at most one float.
Outcome simulatePs(const Factors& factors, int servers, bool dedicated_servers = false);
// Every worker sends U_p and V_p (one message) to every other and sums all U_q V_q^T itself.
Outcome simulateSfb(const Factors& factors);
// One server on node `workers` receives every U_p, V_p, sums the products and sends the matrix back.
Outcome simulateAdam(const Factors& factors);
// Reduce-scatter then all-gather around the ring of workers, segments differing by at most one float.
Outcome simulateRing(const Factors& factors);

}  // namespace poseidon::trainer::sim
