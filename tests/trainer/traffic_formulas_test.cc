// Byte counters against the per-node cost formulas of [Poseidon analysis] section 4.2 (sfb/cost_model.h),
// exactly, over a sweep of P1, P2 and K, with every scheme really moving the bytes:
// - PS, servers colocated on the first P2 worker nodes: the transport's pair counters of a node
//   (its worker's pairs to the other servers, its server's pairs to the other workers) against
//   psNodeTraffic (and 2X for a worker-only node), plus the set-up's known traffic;
// - SFB, ring and Adam (worker side): the bytes HybridSync counted per layer against
//   sfbNodeTraffic, ringNodeTraffic and adamWorkerTraffic.
// Layers are sized so the formulas are integers: 12 chunks of 1024 floats split evenly over any
// P2 in 1..4 and any P1 in 1..4 divides 12288.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "tests/trainer/hybrid_cluster.h"
#include "trainer/hybcomm/cost_model.h"

namespace poseidon::testing {
namespace {

using scheme::Scheme;

const std::vector<model::Layer> kLayers = {model::Layer::other("conv", 12288),
                                           model::Layer::fullyConnected("fc", 96, 128, false)};
constexpr uint64_t kIterations = 3;

struct Case {
  int workers;
  int servers;
  int64_t batch;
};

std::string caseName(const ::testing::TestParamInfo<Case>& info) {
  return fmt::format("P1_{}_P2_{}_K_{}", info.param.workers, info.param.servers, info.param.batch);
}

HybridSpec specFor(const Case& c, scheme::Scheme scheme) {
  HybridSpec spec;
  spec.workers = c.workers;
  spec.ps_servers = c.servers;
  spec.batch = c.batch;
  spec.iterations = kIterations;
  spec.layers = kLayers;
  spec.hybcomm.mode = trainer::HybCommMode::kFixed;
  spec.hybcomm.fixed = scheme;
  return spec;
}

uint64_t bytesOf(const trainer::NodeTraffic& t) { return static_cast<uint64_t>(t.floats()) * 4; }

class TrafficFormulas : public ::testing::TestWithParam<Case> {};

TEST_P(TrafficFormulas, PsNodeBytesAreThePapersCountPlusTheSetUp) {
  const Case c = GetParam();
  const HybridRun run = runHybrid(specFor(c, scheme::Scheme::kPs));
  ASSERT_TRUE(run.ok()) << run.failures();
  const trainer::ClusterShape cluster{c.workers, c.servers, c.batch};
  uint64_t model = 0, per_iteration_colocated = 0;
  for (const model::Layer& layer : kLayers) {
    model += static_cast<uint64_t>(layer.denseFloats()) * 4;
    per_iteration_colocated += bytesOf(*trainer::psNodeTraffic(layer, cluster));
  }
  const uint64_t p2 = static_cast<uint64_t>(c.servers), p1 = static_cast<uint64_t>(c.workers);
  for (int node = 0; node < c.workers; ++node) {
    const bool has_server = node < c.servers;
    // Set-up: worker 0 writes the initial model (the remote servers' share), every worker pulls
    // version 0 (the remote share); a server receives its share of the initial model unless its
    // own node's worker sent it, and sends its share to each remote worker.
    const uint64_t remote_share = has_server ? model * (p2 - 1) / p2 : model;
    uint64_t setup = remote_share + (node == 0 ? remote_share : 0);
    if (has_server) setup += (node != 0 ? model / p2 : 0) + (p1 - 1) * model / p2;
    const uint64_t per_iteration = has_server ? per_iteration_colocated : 2 * model;
    EXPECT_EQ(run.ps_node_bytes[static_cast<size_t>(node)], kIterations * per_iteration + setup)
        << "node " << node << (has_server ? " (worker + server)" : " (worker only)");
  }
}

TEST_P(TrafficFormulas, SfbRingAndAdamBytesAreThePapersCount) {
  const Case c = GetParam();
  const trainer::ClusterShape cluster{c.workers, c.servers, c.batch};
  for (scheme::Scheme scheme : {scheme::Scheme::kSfb, scheme::Scheme::kRing, scheme::Scheme::kAdam}) {
    const HybridRun run = runHybrid(specFor(c, scheme));
    ASSERT_TRUE(run.ok()) << scheme::schemeName(scheme) << ": " << run.failures();
    for (size_t l = 0; l < kLayers.size(); ++l) {
      if (!trainer::HybComm::applies(scheme, kLayers[l])) continue;
      auto formula = scheme == scheme::Scheme::kSfb    ? trainer::sfbNodeTraffic(kLayers[l], cluster)
                     : scheme == scheme::Scheme::kRing ? trainer::ringNodeTraffic(kLayers[l], cluster)
                                                       : trainer::adamWorkerTraffic(kLayers[l], cluster);
      ASSERT_TRUE(formula.isOk());
      EXPECT_EQ(run.bytes[l], kIterations * bytesOf(*formula))
          << scheme::schemeName(scheme) << " layer " << kLayers[l].name();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Sweep, TrafficFormulas,
                         ::testing::Values(Case{2, 1, 1}, Case{2, 2, 8}, Case{3, 1, 32}, Case{3, 2, 4}, Case{3, 3, 1},
                                           Case{4, 2, 16}, Case{4, 3, 8}, Case{4, 4, 32}),
                         caseName);

}  // namespace
}  // namespace poseidon::testing
