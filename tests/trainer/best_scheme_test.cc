// BestScheme: the closed-form choice, its reasons, its agreement with simulated traffic, and the
// per-layer decisions [Poseidon ATC'17] and [Poseidon 2015] report for the models they trained.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "model/zoo.h"
#include "tests/trainer/traffic_sim.h"
#include "trainer/hybcomm/best_scheme.h"

namespace poseidon::trainer {
namespace {

const model::Layer kAlexNetFc7 = model::Layer::fullyConnected("fc7", 4096, 4096, false);

Decision decide(const model::Layer& layer, const ClusterShape& cluster, const BestSchemeOptions& options = {}) {
  auto decision = bestScheme(layer, cluster, options);
  EXPECT_TRUE(decision.isOk()) << decision.status().toString();
  return decision.isOk() ? decision.value() : Decision{};
}

// The zoo models carry the papers' K (model/zoo.h): VGG19 and VGG19-22K 32, GoogLeNet 128.
std::map<std::string, scheme::Scheme> decisionsFor(const model::Model& model, int64_t nodes) {
  auto decisions = bestSchemes(model.layers(), {nodes, nodes, static_cast<int64_t>(model.batch())});
  EXPECT_TRUE(decisions.isOk()) << decisions.status().toString();
  std::map<std::string, scheme::Scheme> by_layer;
  if (decisions.isOk()) {
    for (const Decision& d : decisions.value()) by_layer[d.layer] = d.scheme;
  }
  return by_layer;
}

// GoogLeNet's one fully-connected layer (without the auxiliary heads): 1024 -> 1000.
model::Layer googlenetClassifier() {
  const model::Model g = model::googlenet();
  const model::Layer* classifier = g.findLayer("loss3/classifier");
  EXPECT_NE(classifier, nullptr);
  return classifier != nullptr ? *classifier : model::Layer{};
}

TEST(BestScheme, WorkedExampleGoesSfbWithItsReason) {
  const Decision d = decide(kAlexNetFc7, {4, 4, 256});
  EXPECT_EQ(d.scheme, scheme::Scheme::kSfb);
  EXPECT_EQ(d.floats, 12'582'912.0);
  EXPECT_EQ(d.reason, "fc7: SFB 12.58M floats < PS 50.33M floats");
  ASSERT_EQ(d.priced.size(), 2u);
  EXPECT_EQ(d.priced[1].scheme, scheme::Scheme::kPs);
}

TEST(BestScheme, ATieGoesSfbAsInThePaper) {
  // 2K(P1-1)(M+N) = 2*1*1*4 = 8 = 2MN(P1+P2-2)/P2 = 2*4*2/2; Algorithm 1 picks SFB on <=.
  const Decision d = decide(model::Layer::fullyConnected("fc", 2, 2, false), {2, 2, 1});
  EXPECT_EQ(d.scheme, scheme::Scheme::kSfb);
  EXPECT_EQ(d.reason, "fc: SFB 8 floats = PS 8 floats");
}

TEST(BestScheme, OtherLayersAlwaysGoPs) {
  const Decision d = decide(model::Layer::other("conv1", 1792), {4, 4, 1});
  EXPECT_EQ(d.scheme, scheme::Scheme::kPs);
  EXPECT_EQ(d.reason, "conv1: PS 5.38K floats (not fully connected: 1.79K parameters, no sufficient factors)");
}

// The closed form picks whichever scheme's busiest node moved fewer floats in a simulated
// iteration, over a sweep that lands on both sides of the crossover.
TEST(BestScheme, PicksTheCheaperSimulatedBusiestNode) {
  int sfb = 0, ps = 0;
  for (int p1 = 1; p1 <= 8; ++p1) {
    for (int p2 = 1; p2 <= p1; ++p2) {
      for (int64_t k : {1, 2, 5, 20}) {
        for (auto [m, n] : {std::pair<int64_t, int64_t>{4, 4}, {6, 4}, {8, 9}}) {
          if ((m * n) % p2 != 0) continue;  // shards then differ by a float and nodes by a little
          const auto factors = sim::randomFactors(p1, m, n, k, static_cast<uint32_t>(p1 * 100 + p2));
          const bool sfb_cheaper =
              sim::simulateSfb(factors).network.busiestFloats() <= sim::simulatePs(factors, p2).network.busiestFloats();
          const Decision d = decide(model::Layer::fullyConnected("fc", m, n, false), {p1, p2, k});
          EXPECT_EQ(d.scheme, sfb_cheaper ? scheme::Scheme::kSfb : scheme::Scheme::kPs)
              << d.reason << " P1 " << p1 << " P2 " << p2;
          ++(sfb_cheaper ? sfb : ps);
        }
      }
    }
  }
  EXPECT_GT(sfb, 20);
  EXPECT_GT(ps, 20);
}

// [Poseidon analysis] gives the decisions per model, not as a per-layer table; transcribed here:
//  - section 4.2 (Fig. 3, Algorithm 1): CONV layers ALWAYS go PS;
//  - section 5.4 (Figure 8, 16 nodes): VGG19 and VGG19-22K reach linear scaling on 10 GbE only
//    through HybComm, i.e. their FC layers go SFB; "BestScheme falls back to PS ... for GoogLeNet
//    on 16 nodes (1000 x 1024 thin FC layer + batch size 128 -> PS was already optimal)";
//  - section 6.4: GoogLeNet "few FC bytes; BestScheme falls back to PS"; VGG19-22K "most bytes go
//    SFB" (section 6.1: "almost every byte goes via SFB");
//  - batch sizes: Table 3 (section 3), K = 32 for VGG19 / VGG19-22K and 128 for GoogLeNet.
// Scales: 16 nodes (Figure 8) and 8 and 32 nodes (Figures 5 and 10), one server per node.
TEST(BestScheme, ReproducesAnalysisDecisionsForVgg19) {
  const model::Model vgg19 = model::vgg19();
  EXPECT_EQ(vgg19.batch(), 32u);
  for (int64_t nodes : {8, 16, 32}) {
    const auto decisions = decisionsFor(vgg19, nodes);
    ASSERT_EQ(decisions.size(), 19u);
    for (int conv = 1; conv <= 16; ++conv) EXPECT_EQ(decisions.at(fmt::format("conv{}", conv)), scheme::Scheme::kPs);
    for (const char* fc : {"fc6", "fc7", "fc8"})
      EXPECT_EQ(decisions.at(fc), scheme::Scheme::kSfb) << fc << " on " << nodes;
  }
  auto fc6 = bestScheme(vgg19.layers()[16], {16, 16, 32});
  ASSERT_TRUE(fc6.isOk());
  EXPECT_EQ(fc6->reason, "fc6: SFB 28.02M floats < PS 385.35M floats");
}

TEST(BestScheme, ReproducesAnalysisDecisionsForVgg19_22k) {
  const model::Model vgg = model::vgg19_22k();
  for (int64_t nodes : {8, 16, 32}) {
    const auto decisions = decisionsFor(vgg, nodes);
    for (int conv = 1; conv <= 16; ++conv) EXPECT_EQ(decisions.at(fmt::format("conv{}", conv)), scheme::Scheme::kPs);
    for (const char* fc : {"fc6", "fc7", "fc8"})
      EXPECT_EQ(decisions.at(fc), scheme::Scheme::kSfb) << fc << " on " << nodes;
    // "Most bytes go SFB": the SFB layers hold 91% of the parameters (section 6.4's "91% FC").
    double sfb_params = 0, all_params = 0;
    for (const model::Layer& layer : vgg.layers()) {
      all_params += static_cast<double>(layer.params());
      if (decisions.at(layer.name()) == scheme::Scheme::kSfb) sfb_params += static_cast<double>(layer.params());
    }
    EXPECT_NEAR(sfb_params / all_params, 0.91, 0.005) << nodes;
  }
}

TEST(BestScheme, ReproducesAnalysisFallbackToPsForGoogLeNet) {
  for (bool auxiliary : {false, true}) {
    // Its real layers: 57 convolutions (each inception module's six) and the classifier, or 64
    // with the auxiliary heads' conv and two FC layers each; every one goes PS.
    const model::Model googlenet = model::googlenet(auxiliary);
    EXPECT_EQ(googlenet.batch(), 128u);
    for (int64_t nodes : {16, 32}) {
      const auto decisions = decisionsFor(googlenet, nodes);
      EXPECT_EQ(decisions.size(), auxiliary ? 64u : 58u);
      for (const auto& [layer, scheme] : decisions) {
        EXPECT_EQ(scheme, scheme::Scheme::kPs) << googlenet.name() << " " << layer << " on " << nodes;
      }
    }
  }
  const Decision classifier = decide(googlenetClassifier(), {16, 16, 128});
  EXPECT_EQ(classifier.reason, "loss3/classifier: PS 3.84M floats < SFB 7.77M floats");
}

// Not stated by the paper but implied by its formula (P1 = P2 = P): an FC layer goes SFB while
// P <= 2MN / (K(M+N)). For GoogLeNet's classifier at K = 128 that is 7.9 nodes, so its PS
// fallback starts at 8; at [Poseidon 2015]'s K = 32 it would stay SFB up to 31 nodes.
TEST(BestScheme, GoogLeNetClassifierCrossesOverBetween7And8Nodes) {
  const model::Layer classifier = googlenetClassifier();
  EXPECT_EQ(decide(classifier, {7, 7, 128}).scheme, scheme::Scheme::kSfb);
  EXPECT_EQ(decide(classifier, {8, 8, 128}).scheme, scheme::Scheme::kPs);
  EXPECT_EQ(decide(classifier, {31, 31, 32}).scheme, scheme::Scheme::kSfb);
  EXPECT_EQ(decide(classifier, {32, 32, 32}).scheme, scheme::Scheme::kPs);
}

// [Poseidon 2015] Algorithm 3 (SACP): SFB vs SFs-to-master on its totals.
TEST(BestScheme, Poseidon2015SacpRule) {
  const BestSchemeOptions sacp{Rule::kSacp2015};
  const Decision d = decide(kAlexNetFc7, {4, 4, 256}, sacp);
  EXPECT_EQ(d.scheme, scheme::Scheme::kSfb);
  EXPECT_EQ(d.reason, "fc7: SFB 18.87M floats < Adam 75.50M floats ([Poseidon 2015] totals)");
  // Section 5.2.1: SACP sped up AlexNet (K = 256) and GoogLeNet (K = 32) on 8 nodes, so their FC
  // layers went SFB there. AlexNet's fc6 is 4096 x 9216.
  EXPECT_EQ(decide(model::Layer::fullyConnected("fc6", 4096, 9216, false), {8, 8, 256}, sacp).scheme,
            scheme::Scheme::kSfb);
  EXPECT_EQ(decide(googlenetClassifier(), {8, 8, 32}, sacp).scheme, scheme::Scheme::kSfb);
  // "Its communication cost increases quadratically with the number of nodes": for fc7 at
  // K = 256, (P-1)^2 <= 9P holds up to P = 10.
  EXPECT_EQ(decide(kAlexNetFc7, {10, 10, 256}, sacp).scheme, scheme::Scheme::kSfb);
  EXPECT_EQ(decide(kAlexNetFc7, {11, 11, 256}, sacp).scheme, scheme::Scheme::kAdam);
  EXPECT_EQ(decide(model::Layer::other("conv1", 1792), {4, 4, 256}, sacp).scheme, scheme::Scheme::kPs);
}

TEST(BestScheme, RingWinsOnlyWhenStrictlyCheaper) {
  BestSchemeOptions with_ring;
  with_ring.consider_ring = true;
  const model::Layer conv = model::Layer::other("conv", 4096);
  // One server per node: PS 2X(2P-2)/P equals ring 4X(P-1)/P, and the paper's PS is kept.
  const Decision tie = decide(conv, {4, 4, 32}, with_ring);
  EXPECT_EQ(tie.scheme, scheme::Scheme::kPs);
  EXPECT_EQ(tie.reason,
            "conv: PS 12.29K floats = ring 12.29K floats (not fully connected: 4.10K parameters, "
            "no sufficient factors)");
  // One server for four workers: PS puts 2X(P1-1) on it, the ring 4X(P1-1)/P1 on every node.
  EXPECT_EQ(decide(conv, {4, 1, 32}, with_ring).scheme, scheme::Scheme::kRing);
  EXPECT_EQ(decide(conv, {4, 1, 32}).scheme, scheme::Scheme::kPs);  // off by default
}

// Adam's server takes P1 factor pushes and sends P1 full matrices: its busiest node never beats
// both SFB and PS (algebra: K(M+N)(P1-2) > P1 MN and P1 K(M+N) < MN(P1-2) cannot both hold),
// which is [Poseidon analysis] section 7.3's point.
TEST(BestScheme, AdamServerIsNeverTheCheapest) {
  BestSchemeOptions with_adam;
  with_adam.consider_adam = true;
  for (int64_t p1 = 1; p1 <= 32; p1 += 3) {
    for (int64_t p2 : {int64_t{1}, p1}) {
      for (int64_t k : {1, 32, 256, 4096}) {
        for (auto [m, n] : {std::pair<int64_t, int64_t>{4096, 4096}, {1000, 1024}, {21841, 4096}, {10, 10}}) {
          const Decision d = decide(model::Layer::fullyConnected("fc", m, n, false), {p1, p2, k}, with_adam);
          EXPECT_NE(d.scheme, scheme::Scheme::kAdam) << d.reason;
          EXPECT_EQ(d.priced.size(), 3u);
        }
      }
    }
  }
}

TEST(BestScheme, BadInputIsNamed) {
  EXPECT_EQ(bestScheme(kAlexNetFc7, {0, 1, 1}).status().message(), "workers P1 = 0, expected >= 1");
  BestSchemeOptions bad{Rule::kSacp2015, true, false};
  EXPECT_EQ(bestScheme(kAlexNetFc7, {4, 4, 1}, bad).status().message(),
            "ring/Adam options (ring true, Adam false) apply to the ATC'17 rule, not SACP, which already weighs "
            "SFB against Adam");
  const std::vector<model::Layer> layers = {model::Layer::other("conv1", 10), model::Layer::other("bn", 0),
                                            kAlexNetFc7};
  EXPECT_EQ(bestSchemes(layers, {4, 4, 1}).status().message(), "layer 'bn': tensor 'bn' has 0 floats, expected >= 1");
}

}  // namespace
}  // namespace poseidon::trainer
