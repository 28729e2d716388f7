// HybridSync end to end, in process over tcp: every scheme trains a model with conv and FC layers
// to the same parameters as the parameter server with full gradients (within the float tolerance
// derived below), replicas stay bit-identical under every scheme, and HybComm's choices hold.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/trainer/hybrid_cluster.h"

namespace poseidon::testing {
namespace {

using sfb::LayerShape;
using sfb::Scheme;
using trainer::HybCommMode;

const std::vector<LayerShape> kModel = {LayerShape::other("conv1", 300), LayerShape::other("conv2", 1111),
                                        LayerShape::fullyConnected("fc6", 40, 72),
                                        LayerShape::fullyConnected("fc7", 24, 40)};

HybridSpec fixedSpec(int workers, Scheme scheme) {
  HybridSpec spec;
  spec.workers = workers;
  spec.ps_servers = workers >= 3 ? 2 : 1;
  spec.layers = kModel;
  spec.hybcomm.mode = HybCommMode::kFixed;
  spec.hybcomm.fixed = scheme;
  return spec;
}

void expectReplicasIdentical(const HybridRun& run, const std::string& what) {
  for (size_t w = 1; w < run.params.size(); ++w) {
    for (size_t l = 0; l < run.params[0].size(); ++l) {
      ASSERT_EQ(run.params[w][l].size(), run.params[0][l].size());
      EXPECT_EQ(std::memcmp(run.params[w][l].data(), run.params[0][l].data(), run.params[0][l].size() * sizeof(float)),
                0)
          << what << ": worker " << w << " layer " << kModel[l].name << " differs from worker 0";
    }
  }
}

// Largest |a - b| over the layer, and the largest |b|.
std::pair<double, double> difference(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, magnitude = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(a[i]) - b[i]));
    magnitude = std::max(magnitude, std::abs(static_cast<double>(b[i])));
  }
  return {diff, magnitude};
}

// Tolerance. Each scheme sums the same P1 gradients (FC: P1*K products u*v per element) in float
// in its own order; each ordering is within (n - 1) * 2^-24 * sum|terms| of the exact sum for n
// terms (the standard bound for recursive summation), so two schemes differ by at most twice that
// per step. Every |term| here is <= 1 (factors and gradients lie in [-1, 1)), so sum|terms| <=
// n and the step's difference is <= 2 n^2 2^-24 lr / P1 (grad_scale 1/P1). Momentum 0.9 carries a
// step's error into every later step with weight <= 1 / (1 - 0.9) = 10, over T iterations. The
// optimizer's own roundings are the same operations on (almost) the same values in every scheme.
double tolerance(int workers, int64_t batch, uint64_t iterations, bool fc) {
  const double n = fc ? static_cast<double>(workers * batch) : workers;
  const double lr = 0.1;
  return 2 * n * n * std::ldexp(1.0, -24) * lr / workers * 10 * static_cast<double>(iterations);
}

class HybridEquivalence : public ::testing::TestWithParam<int> {};

TEST_P(HybridEquivalence, EverySchemeMatchesThePsWithFullGradients) {
  const int workers = GetParam();
  const HybridRun ps = runHybrid(fixedSpec(workers, Scheme::kPs));
  ASSERT_TRUE(ps.ok()) << ps.failures();
  expectReplicasIdentical(ps, "PS");
  for (Scheme scheme : {Scheme::kSfb, Scheme::kRing, Scheme::kAdam}) {
    const HybridSpec spec = fixedSpec(workers, scheme);
    const HybridRun run = runHybrid(spec);
    ASSERT_TRUE(run.ok()) << sfb::schemeName(scheme) << ": " << run.failures();
    expectReplicasIdentical(run, std::string(sfb::schemeName(scheme)));
    for (size_t l = 0; l < kModel.size(); ++l) {
      // The scheme really carried the layer (SFB and Adam only carry FC layers; the rest go PS).
      const Scheme expected = trainer::HybComm::applies(scheme, kModel[l]) ? scheme : Scheme::kPs;
      EXPECT_EQ(run.schemes[0].back()[l], expected) << kModel[l].name;
      const auto [diff, magnitude] = difference(run.params[0][l], ps.params[0][l]);
      const double tol = tolerance(workers, spec.batch, spec.iterations, kModel[l].isFullyConnected());
      EXPECT_LE(diff, tol) << sfb::schemeName(scheme) << " vs PS, layer " << kModel[l].name;
      EXPECT_GT(magnitude, 1e-3) << "the parameters moved";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Workers, HybridEquivalence, ::testing::Values(2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& param_info) { return std::to_string(param_info.param) + "workers"; });

// The closed form on this model (P1 = 4, K = 4): SFB for both FC layers, PS for conv; adaptive
// times PS, SFB and ring and settles on schemes the workers agree on; both train like the PS.
TEST(HybridSync, ClosedFormAndAdaptiveTrainLikeThePs) {
  HybridSpec spec = fixedSpec(4, Scheme::kPs);
  spec.iterations = 9;
  const HybridRun ps = runHybrid(spec);
  ASSERT_TRUE(ps.ok()) << ps.failures();

  spec.hybcomm = {};
  const HybridRun closed = runHybrid(spec);
  ASSERT_TRUE(closed.ok()) << closed.failures();
  EXPECT_EQ(closed.schemes[0][0], (std::vector<Scheme>{Scheme::kPs, Scheme::kPs, Scheme::kSfb, Scheme::kSfb}));

  spec.hybcomm.mode = HybCommMode::kAdaptive;
  spec.hybcomm.trial_iterations = 2;
  const HybridRun adaptive = runHybrid(spec);
  ASSERT_TRUE(adaptive.ok()) << adaptive.failures();
  // The trial phase: PS, PS, SFB, SFB, ring, ring for the FC layers; conv layers stand in with PS.
  EXPECT_EQ(adaptive.schemes[0][2][2], Scheme::kSfb);
  EXPECT_EQ(adaptive.schemes[0][4][2], Scheme::kRing);
  EXPECT_EQ(adaptive.schemes[0][2][0], Scheme::kPs);
  for (int w = 1; w < spec.workers; ++w) EXPECT_EQ(adaptive.schemes[w], adaptive.schemes[0]) << "worker " << w;
  ASSERT_GE(adaptive.choices.size(), 4u);
  for (const auto& choice : adaptive.choices) EXPECT_NE(choice.reason.find("measured"), std::string::npos);
  for (const HybridRun* run : {&closed, &adaptive}) {
    expectReplicasIdentical(*run, "HybComm");
    for (size_t l = 0; l < kModel.size(); ++l) {
      const auto [diff, magnitude] = difference(run->params[0][l], ps.params[0][l]);
      EXPECT_LE(diff, tolerance(4, spec.batch, spec.iterations, kModel[l].isFullyConnected())) << kModel[l].name;
    }
  }
}

}  // namespace
}  // namespace poseidon::testing
