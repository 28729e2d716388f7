// The cost model: the papers' worked examples to the float, and every formula against a simulated
// iteration that moves real payloads and counts what each node sends and receives.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "tests/trainer/traffic_sim.h"
#include "trainer/hybcomm/cost_model.h"

namespace poseidon::trainer {
namespace {

// AlexNet's fc6 -> fc7 weight ([Poseidon 2015] section 4.3.1): M = N = 4096, batch K = 256, 4 nodes.
const model::Layer kAlexNetFc7 = model::Layer::fullyConnected("fc7", 4096, 4096, false);
constexpr ClusterShape kFourNodes{4, 4, 256};

NodeTraffic ok(const Result<NodeTraffic>& traffic) {
  EXPECT_TRUE(traffic.isOk()) << traffic.status().toString();
  return traffic.isOk() ? traffic.value() : NodeTraffic{};
}

TEST(CostModel, AnalysisWorkedExamplePerNode) {
  // 2K(P1-1)(M+N) = 2 * 256 * 3 * 8192 and 2MN(P1+P2-2)/P2 = 2 * 4096^2 * 6 / 4.
  EXPECT_EQ(ok(sfbNodeTraffic(kAlexNetFc7, kFourNodes)).floats(), 12'582'912.0);
  EXPECT_EQ(ok(psNodeTraffic(kAlexNetFc7, kFourNodes)).floats(), 50'331'648.0);
  EXPECT_EQ(formatCount(12'582'912), "12.58M");
  EXPECT_EQ(formatCount(50'331'648), "50.33M");
}

TEST(CostModel, Poseidon2015WorkedExampleTotals) {
  auto totals = poseidon2015Totals(kAlexNetFc7, kFourNodes);
  ASSERT_TRUE(totals.isOk()) << totals.status().toString();
  EXPECT_EQ(totals->sfb, 18'874'368.0);   // (P-1)^2 K(M+N): "18.9M"
  EXPECT_EQ(totals->ps, 134'217'728.0);   // 2PMN: "134.2M"
  EXPECT_EQ(totals->adam, 75'497'472.0);  // PK(M+N) + PMN: "75.5M"
  // The paper's ratios: "7.1 times less" than full matrices, Adam "4 times larger" than SFB.
  EXPECT_NEAR(totals->ps / totals->sfb, 7.1, 0.05);
  EXPECT_NEAR(totals->adam / totals->sfb, 4.0, 0.01);
}

// [Poseidon 2015]'s totals against a simulated iteration of the same schemes: 2PMN and PK(M+N) + PMN
// are what the one master sends + receives; (P-1)^2 K(M+N) is neither a node's count nor the
// network's total (P(P-1)K(M+N) sent), but the per-node count times (P-1)/2.
TEST(CostModel, Poseidon2015TotalsAreWhatTheyCount) {
  for (int p : {2, 3, 4, 6}) {
    const auto factors = sim::randomFactors(p, 4, 6, 3, 7u + static_cast<uint32_t>(p));
    const model::Layer fc = model::Layer::fullyConnected("fc", 4, 6, false);
    auto totals = poseidon2015Totals(fc, {p, 1, 3});
    ASSERT_TRUE(totals.isOk());
    const auto ps = sim::simulatePs(factors, 1, /*dedicated_servers=*/true);
    EXPECT_EQ(totals->ps, ps.network.node(p).floats()) << "P = " << p;
    const auto adam = sim::simulateAdam(factors);
    EXPECT_EQ(totals->adam, adam.network.node(p).floats()) << "P = " << p;
    const auto sfb = sim::simulateSfb(factors);
    double sent_by_all = 0;
    for (int node = 0; node < p; ++node) sent_by_all += sfb.network.node(node).sent_floats;
    const double per_node = sfb.network.node(0).floats();
    EXPECT_EQ(totals->sfb, per_node * (p - 1) / 2) << "P = " << p;
    if (p != 3) {  // at P = 3 they coincide
      EXPECT_NE(totals->sfb, per_node) << "P = " << p;
    }
    EXPECT_NE(totals->sfb, sent_by_all) << "P = " << p;
  }
}

void expectMatches(const NodeTraffic& formula, const NodeTraffic& counted, const std::string& what) {
  EXPECT_EQ(formula.sent_floats, counted.sent_floats) << what;
  EXPECT_EQ(formula.received_floats, counted.received_floats) << what;
  EXPECT_EQ(formula.sent_messages, counted.sent_messages) << what;
  EXPECT_EQ(formula.received_messages, counted.received_messages) << what;
}

void expectEveryWorkerHasTheSum(const sim::Outcome& outcome, const std::vector<double>& sum, const std::string& what) {
  for (size_t p = 0; p < outcome.gradient.size(); ++p) EXPECT_EQ(outcome.gradient[p], sum) << what << " worker " << p;
}

// One point of the sweep: a layer on a cluster, each worker's factors, and their sum.
struct SweepCase {
  model::Layer fc;
  ClusterShape cluster;
  sim::Factors factors;
  std::vector<double> sum;
  std::string what;

  int workers() const { return static_cast<int>(cluster.workers); }
  int64_t floats() const { return static_cast<int64_t>(fc.denseFloats()); }
};

void checkSfb(const SweepCase& c) {
  const auto outcome = sim::simulateSfb(c.factors);
  expectEveryWorkerHasTheSum(outcome, c.sum, "SFB " + c.what);
  const NodeTraffic formula = ok(sfbNodeTraffic(c.fc, c.cluster));
  for (int node = 0; node < c.workers(); ++node) expectMatches(formula, outcome.network.node(node), "SFB " + c.what);
}

void checkAdam(const SweepCase& c) {
  const auto outcome = sim::simulateAdam(c.factors);
  expectEveryWorkerHasTheSum(outcome, c.sum, "Adam " + c.what);
  const NodeTraffic worker = ok(adamWorkerTraffic(c.fc, c.cluster));
  for (int node = 0; node < c.workers(); ++node) expectMatches(worker, outcome.network.node(node), "Adam " + c.what);
  expectMatches(ok(adamServerTraffic(c.fc, c.cluster)), outcome.network.node(c.workers()), "Adam server " + c.what);
}

// Nodes 0..min(P1, P2)-1 host a worker and a server: the formula's node. Every one of them matches
// when P2 divides the matrix; otherwise their mean does (when every server is colocated).
void checkPs(const SweepCase& c) {
  const int servers = static_cast<int>(c.cluster.servers);
  const auto outcome = sim::simulatePs(c.factors, servers);
  expectEveryWorkerHasTheSum(outcome, c.sum, "PS " + c.what);
  const NodeTraffic formula = ok(psNodeTraffic(c.fc, c.cluster));
  const bool even = c.floats() % servers == 0;
  double colocated_floats = 0;
  for (int node = 0; node < std::min(c.workers(), servers); ++node) {
    colocated_floats += outcome.network.node(node).floats();
    EXPECT_EQ(formula.messages(), outcome.network.node(node).messages()) << c.what;
    if (even) expectMatches(formula, outcome.network.node(node), "PS " + c.what);
  }
  if (servers <= c.workers()) {
    EXPECT_DOUBLE_EQ(formula.floats() * servers, colocated_floats) << "PS mean " << c.what;
  }
  if (!even) return;
  // The other nodes: worker-only ones move 2X, server-only ones 2X * P1 / P2, neither more.
  const double x = static_cast<double>(c.floats());
  for (int node = std::min(c.workers(), servers); node < outcome.network.nodes(); ++node) {
    const double expected = node < c.workers() ? 2 * x : 2 * x * c.workers() / servers;
    EXPECT_EQ(outcome.network.node(node).floats(), expected) << "PS node " << node << " " << c.what;
    EXPECT_LE(expected, formula.floats()) << "PS node " << node << " " << c.what;
    if (node < c.workers()) {
      expectMatches(ok(psWorkerOnlyNodeTraffic(c.fc, c.cluster)), outcome.network.node(node), "PS worker " + c.what);
    }
  }
  if (c.workers() <= servers) {
    EXPECT_FALSE(psWorkerOnlyNodeTraffic(c.fc, c.cluster).isOk()) << c.what;
  }
}

void checkRing(const SweepCase& c) {
  const auto outcome = sim::simulateRing(c.factors);
  expectEveryWorkerHasTheSum(outcome, c.sum, "ring " + c.what);
  const NodeTraffic formula = ok(ringNodeTraffic(c.fc, c.cluster));
  double all_floats = 0;
  for (int node = 0; node < c.workers(); ++node) {
    all_floats += outcome.network.node(node).floats();
    EXPECT_EQ(formula.messages(), outcome.network.node(node).messages()) << c.what;
    if (c.floats() % c.workers() == 0) expectMatches(formula, outcome.network.node(node), "ring " + c.what);
  }
  EXPECT_DOUBLE_EQ(formula.floats() * c.workers(), all_floats) << "ring mean " << c.what;
}

// P1 x P2 x K x (M, N): every scheme simulated, each worker checked to end with the summed
// gradient, and the counts compared with the formulas. Shapes mix sizes the servers and ring
// segments divide (each node then matches exactly) with sizes they do not (the formula is then
// the mean over the nodes that the formula prices, up to the rounding of a fraction).
TEST(CostModel, FormulasMatchASimulatedIterationAcrossP1P2AndK) {
  const std::pair<int64_t, int64_t> shapes[] = {{4, 4}, {3, 5}, {6, 4}, {7, 2}};
  int cases = 0;
  for (int64_t p1 = 1; p1 <= 8; ++p1) {
    for (int64_t p2 = 1; p2 <= p1 + 1; ++p2) {
      for (int64_t k : {1, 2, 5}) {
        for (const auto& [m, n] : shapes) {
          auto factors = sim::randomFactors(static_cast<int>(p1), m, n, k, static_cast<uint32_t>(cases++));
          auto sum = sim::summedGradient(factors);
          const SweepCase c{model::Layer::fullyConnected("fc", m, n, false),
                            {p1, p2, k},
                            std::move(factors),
                            std::move(sum),
                            fmt::format("P1 {} P2 {} K {} M {} N {}", p1, p2, k, m, n)};
          checkSfb(c);
          checkAdam(c);
          checkPs(c);
          checkRing(c);
        }
      }
    }
  }
  EXPECT_EQ(cases, 3 * 4 * (2 + 3 + 4 + 5 + 6 + 7 + 8 + 9));  // K x shapes x (P1, P2) pairs
}

TEST(CostModel, OtherLayersArePricedByTheirParametersAndHaveNoFactors) {
  const model::Layer conv = model::Layer::other("conv1", 1792);
  EXPECT_EQ(ok(psNodeTraffic(conv, {4, 4, 32})).floats(), 2.0 * 1792 * 6 / 4);
  EXPECT_EQ(ok(ringNodeTraffic(conv, {4, 4, 32})).floats(), 4.0 * 1792 * 3 / 4);
  auto sfb = sfbNodeTraffic(conv, {4, 4, 32});
  ASSERT_FALSE(sfb.isOk());
  EXPECT_NE(sfb.status().message().find("'conv1' is not fully connected"), std::string::npos) << sfb.status().message();
  EXPECT_FALSE(adamServerTraffic(conv, {4, 4, 32}).isOk());
  EXPECT_FALSE(poseidon2015Totals(conv, {4, 4, 32}).isOk());
}

// The papers price an FC layer's weight only: its bias (M floats) changes no count.
TEST(CostModel, AnFcBiasIsNotPriced) {
  const model::Layer with_bias = model::Layer::fullyConnected("fc7", 4096, 4096, true);
  for (scheme::Scheme scheme :
       {scheme::Scheme::kPs, scheme::Scheme::kSfb, scheme::Scheme::kAdam, scheme::Scheme::kRing}) {
    EXPECT_EQ(ok(busiestNodeTraffic(scheme, with_bias, kFourNodes)).floats(),
              ok(busiestNodeTraffic(scheme, kAlexNetFc7, kFourNodes)).floats())
        << scheme::schemeName(scheme);
  }
  EXPECT_EQ(ok(psNodeTraffic(with_bias, kFourNodes)).floats(), 50'331'648.0);
}

TEST(CostModel, OneWorkerMovesNothing) {
  for (scheme::Scheme scheme : {scheme::Scheme::kPs, scheme::Scheme::kSfb, scheme::Scheme::kRing}) {
    EXPECT_EQ(ok(busiestNodeTraffic(scheme, kAlexNetFc7, {1, 1, 256})).floats(), 0.0) << scheme::schemeName(scheme);
  }
}

TEST(CostModel, BadInputIsNamed) {
  auto message = [](const Result<NodeTraffic>& r) { return r.isOk() ? std::string("ok") : r.status().message(); };
  EXPECT_EQ(message(psNodeTraffic(kAlexNetFc7, {0, 4, 256})), "workers P1 = 0, expected >= 1");
  EXPECT_EQ(message(psNodeTraffic(kAlexNetFc7, {4, -1, 256})), "servers P2 = -1, expected >= 1");
  EXPECT_EQ(message(sfbNodeTraffic(kAlexNetFc7, {4, 4, 0})), "batch K = 0 per worker, expected >= 1");
  EXPECT_EQ(message(sfbNodeTraffic(model::Layer::fullyConnected("fc", 0, 5, false), kFourNodes)),
            "fc layer 'fc' is 0 x 5, expected M >= 1 and N >= 1");
  EXPECT_EQ(message(psNodeTraffic(model::Layer::fullyConnected("huge", uint64_t{1} << 30, uint64_t{1} << 30, false),
                                  kFourNodes)),
            "fc layer 'huge': tensor 'huge.weight' of 1073741824 x 1073741824 exceeds 2^53 floats");
  EXPECT_EQ(message(psNodeTraffic(model::Layer::other("bn", 0), kFourNodes)),
            "layer 'bn': tensor 'bn' has 0 floats, expected >= 1");
  EXPECT_EQ(psNodeTraffic(kAlexNetFc7, {0, 4, 256}).status().code(), StatusCode::kInvalidArgument);
}

TEST(CostModel, TimeIsMessagesTimesLatencyPlusBytesOverRate) {
  const NodeTraffic sfb = ok(sfbNodeTraffic(kAlexNetFc7, kFourNodes));  // 3 messages, 6.29M floats each way
  const LinkModel link{50e-6, 1.25e9};                                  // 10 GbE, 50 us
  const double one_way = 3 * 50e-6 + 6'291'456.0 * 4 / 1.25e9;
  EXPECT_DOUBLE_EQ(estimateSeconds(sfb, link).value(), one_way);
  EXPECT_DOUBLE_EQ(estimateSeconds(sfb, link, Duplex::kHalf).value(), 2 * one_way);
  EXPECT_DOUBLE_EQ(estimateSeconds(sfb, link, Duplex::kFull, 2).value(), 3 * 50e-6 + 6'291'456.0 * 2 / 1.25e9);
  // Adam's server sends P1 full matrices and receives only factors: the sending side sets the time.
  const NodeTraffic server = ok(adamServerTraffic(kAlexNetFc7, kFourNodes));
  EXPECT_DOUBLE_EQ(estimateSeconds(server, link).value(), 4 * 50e-6 + 4.0 * 4096 * 4096 * 4 / 1.25e9);

  EXPECT_EQ(estimateSeconds(sfb, {-1, 1e9}).status().message(), "link latency -1 s, expected a finite value >= 0");
  EXPECT_EQ(estimateSeconds(sfb, {0, 0}).status().message(), "link rate 0 bytes/s, expected a finite value > 0");
  EXPECT_EQ(estimateSeconds(sfb, link, Duplex::kFull, 0).status().message(), "0 bytes per float, expected > 0");
}

TEST(CostModel, FormatsCounts) {
  EXPECT_EQ(formatCount(950), "950");
  EXPECT_EQ(formatCount(1792), "1.79K");
  EXPECT_EQ(formatCount(385'351'680), "385.35M");
  EXPECT_EQ(formatCount(2.5e9), "2.50G");
}

}  // namespace
}  // namespace poseidon::trainer
