// HybridSync end to end, in process over tcp: every scheme trains a model with conv and FC layers
// to the same parameters as the parameter server with full gradients (within the float tolerance
// derived below), replicas stay bit-identical under every scheme, and HybComm's choices hold.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tests/trainer/hybrid_cluster.h"

namespace poseidon::testing {
namespace {

using scheme::Scheme;
using trainer::HybCommMode;

const std::vector<model::Layer> kModel = {model::Layer::other("conv1", 300), model::Layer::other("conv2", 1111),
                                          model::Layer::fullyConnected("fc6", 40, 72, true),
                                          model::Layer::fullyConnected("fc7", 24, 40, false)};

HybridSpec fixedSpec(int workers, scheme::Scheme scheme) {
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
          << what << ": worker " << w << " layer " << kModel[l].name() << " differs from worker 0";
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
  const HybridRun ps = runHybrid(fixedSpec(workers, scheme::Scheme::kPs));
  ASSERT_TRUE(ps.ok()) << ps.failures();
  expectReplicasIdentical(ps, "PS");
  for (scheme::Scheme scheme : {scheme::Scheme::kSfb, scheme::Scheme::kRing, scheme::Scheme::kAdam}) {
    const HybridSpec spec = fixedSpec(workers, scheme);
    const HybridRun run = runHybrid(spec);
    ASSERT_TRUE(run.ok()) << scheme::schemeName(scheme) << ": " << run.failures();
    expectReplicasIdentical(run, std::string(scheme::schemeName(scheme)));
    for (size_t l = 0; l < kModel.size(); ++l) {
      // The scheme really carried the layer (SFB and Adam only carry FC layers; the rest go PS).
      const scheme::Scheme expected = trainer::HybComm::applies(scheme, kModel[l]) ? scheme : scheme::Scheme::kPs;
      EXPECT_EQ(run.schemes[0].back()[l], expected) << kModel[l].name();
      const auto [diff, magnitude] = difference(run.params[0][l], ps.params[0][l]);
      const double tol = tolerance(workers, spec.batch, spec.iterations, kModel[l].isFullyConnected());
      EXPECT_LE(diff, tol) << scheme::schemeName(scheme) << " vs PS, layer " << kModel[l].name();
      EXPECT_GT(magnitude, 1e-3) << "the parameters moved";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Workers, HybridEquivalence, ::testing::Values(2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& param_info) {
                           return std::to_string(param_info.param) + "workers";
                         });

// The closed form on this model (P1 = 4, K = 4): SFB for both FC layers, PS for conv; adaptive
// times PS, SFB and ring and settles on schemes the workers agree on; both train like the PS.
TEST(HybridSync, ClosedFormAndAdaptiveTrainLikeThePs) {
  HybridSpec spec = fixedSpec(4, scheme::Scheme::kPs);
  spec.iterations = 9;
  const HybridRun ps = runHybrid(spec);
  ASSERT_TRUE(ps.ok()) << ps.failures();

  spec.hybcomm = {};
  const HybridRun closed = runHybrid(spec);
  ASSERT_TRUE(closed.ok()) << closed.failures();
  EXPECT_EQ(closed.schemes[0][0], (std::vector<scheme::Scheme>{scheme::Scheme::kPs, scheme::Scheme::kPs,
                                                               scheme::Scheme::kSfb, scheme::Scheme::kSfb}));

  spec.hybcomm.mode = HybCommMode::kAdaptive;
  spec.hybcomm.trial_iterations = 2;
  const HybridRun adaptive = runHybrid(spec);
  ASSERT_TRUE(adaptive.ok()) << adaptive.failures();
  // The trial phase: PS, PS, SFB, SFB, ring, ring for the FC layers; conv layers stand in with PS.
  EXPECT_EQ(adaptive.schemes[0][2][2], scheme::Scheme::kSfb);
  EXPECT_EQ(adaptive.schemes[0][4][2], scheme::Scheme::kRing);
  EXPECT_EQ(adaptive.schemes[0][2][0], scheme::Scheme::kPs);
  for (int w = 1; w < spec.workers; ++w) EXPECT_EQ(adaptive.schemes[w], adaptive.schemes[0]) << "worker " << w;
  ASSERT_GE(adaptive.choices.size(), 4u);
  for (const auto& choice : adaptive.choices) EXPECT_NE(choice.reason.find("measured"), std::string::npos);
  for (const HybridRun* run : {&closed, &adaptive}) {
    expectReplicasIdentical(*run, "HybComm");
    for (size_t l = 0; l < kModel.size(); ++l) {
      const auto [diff, magnitude] = difference(run->params[0][l], ps.params[0][l]);
      EXPECT_LE(diff, tolerance(4, spec.batch, spec.iterations, kModel[l].isFullyConnected())) << kModel[l].name();
    }
  }
}

void expectSameBits(const HybridRun& a, const HybridRun& b, const std::string& what) {
  ASSERT_EQ(a.params.size(), b.params.size());
  for (size_t w = 0; w < a.params.size(); ++w) {
    for (size_t l = 0; l < kModel.size(); ++l) {
      ASSERT_EQ(a.params[w][l].size(), b.params[w][l].size());
      EXPECT_EQ(std::memcmp(a.params[w][l].data(), b.params[w][l].data(), a.params[w][l].size() * sizeof(float)), 0)
          << what << ": worker " << w << " layer " << kModel[l].name();
    }
  }
}

// Every layer started before any is waited for (two schemes in flight at once: PS for the conv
// layers, SFB for the FC ones under the closed form), then waited for in forward or in backward
// order: the same bits as one layer at a time. Fixed PS and fixed ring put several layers of one
// scheme in flight.
TEST(HybridSync, LayersInFlightTogetherGiveTheBitsOfOneAtATime) {
  for (const bool closed_form : {true, false}) {
    for (const scheme::Scheme fixed : {scheme::Scheme::kPs, scheme::Scheme::kRing}) {
      if (closed_form && fixed != scheme::Scheme::kPs) continue;
      HybridSpec spec = fixedSpec(3, fixed);
      if (closed_form) spec.hybcomm = {};
      const std::string name = closed_form ? "closed form" : std::string(scheme::schemeName(fixed));
      const HybridRun one = runHybrid(spec);
      ASSERT_TRUE(one.ok()) << name << ": " << one.failures();
      if (closed_form) {
        EXPECT_EQ(one.schemes[0][0], (std::vector<scheme::Scheme>{scheme::Scheme::kPs, scheme::Scheme::kPs,
                                                                  scheme::Scheme::kSfb, scheme::Scheme::kSfb}));
      }
      for (const SyncOrder order : {SyncOrder::kInFlightWaitForward, SyncOrder::kInFlightWaitBackward}) {
        spec.order = order;
        const HybridRun overlapped = runHybrid(spec);
        ASSERT_TRUE(overlapped.ok()) << name << ": " << overlapped.failures();
        expectSameBits(overlapped, one, name);
        const std::vector<size_t> forward = {0, 1, 2, 3}, backward = {3, 2, 1, 0};
        const std::vector<size_t>& first = order == SyncOrder::kInFlightWaitForward ? forward : backward;
        ASSERT_GE(overlapped.synced[0].size(), 4u);
        EXPECT_TRUE(std::equal(first.begin(), first.end(), overlapped.synced[0].begin())) << name;
      }
    }
  }
}

// Worker 1 never starts fc7's sync (SFB under the closed form) in the first iteration. Worker 0
// has fc7 and the conv layers (PS) in flight together: the conv syncs complete, fc7's fails by
// its own deadline naming the scheme, the layer and the peer it waited for, and nothing hangs.
TEST(HybridSync, AFailedLayerSyncDoesNotHoldUpTheOthers) {
  HybridSpec spec = fixedSpec(2, scheme::Scheme::kPs);
  spec.hybcomm = {};
  spec.iterations = 1;
  spec.deadline = std::chrono::seconds(10);  // what the others (servers, worker 1) may wait for worker 0
  spec.sync_deadline = std::chrono::milliseconds(2000);
  spec.order = SyncOrder::kInFlightWaitBackward;  // fc7 is waited for first, the conv layers after it
  spec.skip = [](int worker, uint64_t, size_t layer) { return worker == 1 && layer == 3; };
  const HybridRun run = runHybrid(spec);
  EXPECT_LT(run.worker_seconds[0], 8.0) << "worker 0 fails by fc7's deadline (2 s after its start)";
  const Status& failed = run.worker_status[0];
  ASSERT_FALSE(failed.isOk());
  EXPECT_EQ(failed.code(), StatusCode::kTimeout) << failed.toString();
  for (const char* needle : {"SFB", "fc7", "rank 1"}) {
    EXPECT_NE(failed.message().find(needle), std::string::npos) << needle << " in " << failed.toString();
  }
  // Worker 1's conv and fc6 syncs went through although worker 0's fc7 failed meanwhile.
  EXPECT_EQ(run.synced[1], (std::vector<size_t>{2, 1, 0}));
}

// A worker started with fc7 at another size fails every worker at start-up, naming the tensor.
TEST(HybridSync, WorkersStartedWithOtherLayersFailAtStartNamingTheFirstDifference) {
  HybridSpec spec = fixedSpec(3, scheme::Scheme::kPs);
  spec.hybcomm = {};
  spec.deadline = std::chrono::seconds(10);
  spec.model_of = [](int w, const model::Model& m) {
    if (w != 2) return m;
    std::vector<model::Layer> layers = m.layers();
    layers.back() = model::Layer::fullyConnected("fc7", 24, 41, false);
    return model::Model(m.name(), layers, m.batch());
  };
  const HybridRun run = runHybrid(spec);
  for (int w = 0; w < 3; ++w) {
    const Status& s = run.worker_status[static_cast<size_t>(w)];
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.toString();
    EXPECT_NE(s.message().find("were not started alike"), std::string::npos) << s.toString();
    EXPECT_NE(s.message().find("fc7.weight = "), std::string::npos) << s.toString();
    EXPECT_LT(run.worker_seconds[static_cast<size_t>(w)], 8.0);
  }
}

}  // namespace
}  // namespace poseidon::testing
