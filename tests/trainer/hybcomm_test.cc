// HybComm's choices: the closed form reproduces the papers' decisions, fixed mode sends layers it
// cannot carry to the PS, and the adaptive mode times every candidate, agrees across workers on
// the slowest worker's view, keeps its choice through noise and times again after a drift.
#include <gtest/gtest.h>

#include <barrier>
#include <functional>
#include <mutex>
#include <thread>

#include "model/zoo.h"
#include "trainer/hybcomm/hybcomm.h"

namespace poseidon::trainer {
namespace {

using scheme::Scheme;

const std::vector<model::Layer> kLayers = {model::Layer::other("conv1", 1728),
                                           model::Layer::fullyConnected("fc6", 512, 256, false),
                                           model::Layer::fullyConnected("fc7", 64, 64, false)};
const trainer::ClusterShape kCluster{4, 4, 32};

// One worker: agreement is the identity.
Result<std::vector<double>> alone(std::span<const double> mine) {
  return std::vector<double>(mine.begin(), mine.end());
}

// Runs `iterations` on one HybComm whose layer l under scheme s takes time(l, s, iteration).
void run(HybComm& hybcomm, uint64_t iterations, const std::function<double(size_t, scheme::Scheme, uint64_t)>& time,
         const Agree& agree = alone) {
  for (uint64_t i = 0; i < iterations; ++i) {
    for (size_t l = 0; l < hybcomm.layerCount(); ++l) {
      hybcomm.record(l, time(l, hybcomm.scheme(l), hybcomm.iteration()), 100, 200);
    }
    ASSERT_TRUE(hybcomm.endIteration(agree).isOk());
  }
}

TEST(HybComm, ClosedFormIsThePapersChoice) {
  auto hybcomm = HybComm::create(kLayers, kCluster, {});
  ASSERT_TRUE(hybcomm.isOk()) << hybcomm.status().toString();
  // fc6: SFB 2*32*3*768 = 147K floats < PS 2*131072*6/4 = 393K; fc7: SFB 24.6K > PS 12.3K.
  EXPECT_EQ(hybcomm->scheme(0), scheme::Scheme::kPs);
  EXPECT_EQ(hybcomm->scheme(1), scheme::Scheme::kSfb);
  EXPECT_EQ(hybcomm->scheme(2), scheme::Scheme::kPs);
  ASSERT_EQ(hybcomm->choices().size(), 3u);
  EXPECT_EQ(hybcomm->choices()[1].reason, "fc6: SFB 147.46K floats < PS 393.22K floats (closed form)");
  run(*hybcomm, 5, [](size_t, scheme::Scheme, uint64_t) { return 1.0; });
  EXPECT_EQ(hybcomm->scheme(1), scheme::Scheme::kSfb);  // never measured, never moved
  EXPECT_EQ(hybcomm->counters(1, scheme::Scheme::kSfb).iterations, 5u);
  EXPECT_EQ(hybcomm->counters(1, scheme::Scheme::kSfb).bytes_received, 1000u);
}

TEST(HybComm, ClosedFormOnVgg19PutsConvOnThePsAndFcOnSfb) {
  const model::Model vgg19 = model::vgg19();
  auto hybcomm = HybComm::create(vgg19.layers(), {8, 8, static_cast<int64_t>(vgg19.batch())}, {});
  ASSERT_TRUE(hybcomm.isOk()) << hybcomm.status().toString();
  for (size_t l = 0; l < hybcomm->layerCount(); ++l) {
    EXPECT_EQ(hybcomm->scheme(l), hybcomm->layer(l).isFullyConnected() ? scheme::Scheme::kSfb : scheme::Scheme::kPs)
        << hybcomm->layer(l).name();
  }
}

TEST(HybComm, FixedSendsLayersItCannotCarryToThePs) {
  HybCommOptions options;
  options.mode = HybCommMode::kFixed;
  options.fixed = scheme::Scheme::kSfb;
  auto hybcomm = HybComm::create(kLayers, kCluster, options);
  ASSERT_TRUE(hybcomm.isOk()) << hybcomm.status().toString();
  EXPECT_EQ(hybcomm->scheme(0), scheme::Scheme::kPs);
  EXPECT_EQ(hybcomm->choices()[0].reason, "conv1: PS (fixed SFB needs a fully-connected layer)");
  EXPECT_EQ(hybcomm->scheme(1), scheme::Scheme::kSfb);
  EXPECT_EQ(hybcomm->scheme(2), scheme::Scheme::kSfb);
}

TEST(HybComm, BadOptionsAreRefusedNamingTheValue) {
  HybCommOptions options;
  options.mode = HybCommMode::kAdaptive;
  options.candidates = {scheme::Scheme::kPs, scheme::Scheme::kPs};
  EXPECT_EQ(HybComm::create(kLayers, kCluster, options).status().message(), "candidate scheme PS is listed twice");
  options.candidates = {};
  EXPECT_EQ(HybComm::create(kLayers, kCluster, options).status().message(),
            "adaptive HybComm needs at least one candidate scheme");
  options.candidates = {scheme::Scheme::kPs};
  options.trial_iterations = 0;
  EXPECT_EQ(HybComm::create(kLayers, kCluster, options).status().message(),
            "trial iterations 0 and window 8 must both be >= 1");
  options.trial_iterations = 1;
  options.drift_margin = 0;
  EXPECT_EQ(HybComm::create(kLayers, kCluster, options).status().message(),
            "drift margin 0 is not a finite fraction > 0");
  options.mode = HybCommMode::kFixed;
  options.fixed = scheme::Scheme::kSfb;
  EXPECT_EQ(HybComm::create({model::Layer::other("conv", 10)}, kCluster, options).status().message(),
            "fixed scheme SFB applies to none of the 1 layers");
  EXPECT_FALSE(HybComm::create({}, kCluster, {}).isOk());
  EXPECT_FALSE(HybComm::create(kLayers, {0, 4, 32}, {}).isOk());
}

// Per layer, fc6 and fc7 go fastest by SFB (fc7's closed form would have said PS), and conv1 by
// ring. The adaptive mode finds all three; the trial visits each candidate for trial_iterations
// and the first (warm-up) iteration of each does not count. That mix is no candidate's uniform
// assignment, so it is timed as a whole for trial_iterations more and kept since its iteration
// (4.5 s) beats the best uniform one's (SFB, with conv1 on its closed-form PS: 5.5 s).
TEST(HybComm, AdaptiveTimesEveryCandidateAndTakesTheFastest) {
  HybCommOptions options;
  options.mode = HybCommMode::kAdaptive;
  auto hybcomm = HybComm::create(kLayers, kCluster, options);
  ASSERT_TRUE(hybcomm.isOk()) << hybcomm.status().toString();
  const double base[3][4] = {
      // PS, SFB, Adam, ring
      {3.0, 0, 0, 2.0},    // conv1
      {4.0, 1.0, 0, 4.5},  // fc6
      {2.0, 1.5, 0, 2.5},  // fc7
  };
  std::vector<std::vector<scheme::Scheme>> seen(3);
  const auto time = [&](size_t l, scheme::Scheme s, uint64_t iteration) {
    seen[l].push_back(s);
    const bool warm_up = iteration % 2 == 0 && iteration < 6;
    return base[l][static_cast<size_t>(s)] * (warm_up ? 10.0 : 1.0);
  };
  run(*hybcomm, 6, time);
  EXPECT_TRUE(hybcomm->inTrial());  // the mix is being timed
  EXPECT_EQ(hybcomm->choices().size(), 0u);
  run(*hybcomm, 2, time);
  EXPECT_FALSE(hybcomm->inTrial());
  EXPECT_EQ(seen[0],
            (std::vector<scheme::Scheme>{scheme::Scheme::kPs, scheme::Scheme::kPs, scheme::Scheme::kPs,
                                         scheme::Scheme::kPs, scheme::Scheme::kRing, scheme::Scheme::kRing,
                                         scheme::Scheme::kRing, scheme::Scheme::kRing}));  // SFB's slot: PS, untimed
  EXPECT_EQ(seen[1], (std::vector<scheme::Scheme>{scheme::Scheme::kPs, scheme::Scheme::kPs, scheme::Scheme::kSfb,
                                                  scheme::Scheme::kSfb, scheme::Scheme::kRing, scheme::Scheme::kRing,
                                                  scheme::Scheme::kSfb, scheme::Scheme::kSfb}));
  EXPECT_EQ(hybcomm->scheme(0), scheme::Scheme::kRing);
  EXPECT_EQ(hybcomm->scheme(1), scheme::Scheme::kSfb);
  EXPECT_EQ(hybcomm->scheme(2), scheme::Scheme::kSfb);
  EXPECT_EQ(hybcomm->choices().back().reason,
            "fc7: SFB 1.5 s < PS 2 s < ring 2.5 s (measured: slowest worker, fastest of 2 iterations; closed form: PS)"
            "; as a whole, the mix (conv1 ring, fc6 SFB, fc7 SFB) took 4.5 s per iteration against 5.5 s for all SFB");
  EXPECT_EQ(hybcomm->choices().back().iteration, 8u);
  EXPECT_EQ(hybcomm->counters(0, scheme::Scheme::kPs).iterations, 4u);
  EXPECT_EQ(hybcomm->counters(0, scheme::Scheme::kRing).iterations, 4u);
}

// Layers synced one after another are coupled: under the mix, fc7 (PS) waits for what fc6 (SFB)
// left behind, so per layer the mix looks best but as a whole it loses to all SFB, and HybComm
// keeps all SFB, saying why.
TEST(HybComm, AdaptiveDropsAMixThatLosesAsAWhole) {
  HybCommOptions options;
  options.mode = HybCommMode::kAdaptive;
  options.candidates = {scheme::Scheme::kPs, scheme::Scheme::kSfb};
  options.trial_iterations = 1;
  const std::vector<model::Layer> layers = {kLayers[1], kLayers[2]};  // fc6, fc7
  auto hybcomm = HybComm::create(layers, kCluster, options);
  ASSERT_TRUE(hybcomm.isOk()) << hybcomm.status().toString();
  HybComm& h = *hybcomm;
  const auto time = [&](size_t l, scheme::Scheme s, uint64_t) {
    const bool mixed = h.scheme(0) != h.scheme(1);
    if (l == 0) return s == scheme::Scheme::kSfb ? 1.0 : 3.0;
    return (s == scheme::Scheme::kSfb ? 1.2 : 1.0) + (mixed ? 1.0 : 0.0);
  };
  run(h, 2, time);  // PS: 3 + 1, SFB: 1 + 1.2 -> per layer fc6 SFB, fc7 PS
  ASSERT_TRUE(h.inTrial());
  EXPECT_EQ(h.scheme(0), scheme::Scheme::kSfb);
  EXPECT_EQ(h.scheme(1), scheme::Scheme::kPs);
  run(h, 1, time);  // the mix: 1 + 2 = 3 s > 2.2 s
  EXPECT_FALSE(h.inTrial());
  EXPECT_EQ(h.scheme(0), scheme::Scheme::kSfb);
  EXPECT_EQ(h.scheme(1), scheme::Scheme::kSfb);
  ASSERT_EQ(h.choices().size(), 2u);
  EXPECT_EQ(h.choices()[1].reason,
            "fc7: PS 1 s < SFB 1.2 s (measured: slowest worker, fastest of 1 iterations; closed form: PS); as a whole, "
            "the mix (fc6 SFB, fc7 PS) took 3 s per iteration and lost to 2.2 s for all SFB: SFB");
}

// A per-layer best that is a uniform candidate (all PS) is not timed again, but the iteration
// totals still decide: PS was erratic (each layer fast in one of the two iterations, slow in the
// other), so its fastest layers never made a fast iteration, and steady SFB wins as a whole.
TEST(HybComm, AdaptiveComparesUniformCandidatesAsAWhole) {
  HybCommOptions options;
  options.mode = HybCommMode::kAdaptive;
  options.candidates = {scheme::Scheme::kPs, scheme::Scheme::kSfb};
  const std::vector<model::Layer> layers = {kLayers[1], kLayers[2]};
  auto hybcomm = HybComm::create(layers, kCluster, options);
  ASSERT_TRUE(hybcomm.isOk()) << hybcomm.status().toString();
  const auto time = [&](size_t l, scheme::Scheme s, uint64_t iteration) {
    if (s == scheme::Scheme::kSfb) return 1.0;
    return l == iteration % 2 ? 0.9 : 3.0;  // iteration 0: fc6 fast, fc7 slow; iteration 1 the other way
  };
  run(*hybcomm, 4, time);
  EXPECT_FALSE(hybcomm->inTrial());
  EXPECT_EQ(hybcomm->scheme(0), scheme::Scheme::kSfb);
  EXPECT_EQ(hybcomm->scheme(1), scheme::Scheme::kSfb);
  EXPECT_EQ(hybcomm->choices().back().reason,
            "fc7: PS 0.9 s < SFB 1 s (measured: slowest worker, fastest of 2 iterations; closed form: PS); as a whole, "
            "all SFB took 2 s per iteration against 3.9 s for all PS: SFB");
}

// Three workers see different times (worker 2's link is slow, which hurts SFB there): every
// worker takes the same decision, the one the slowest worker's numbers call for.
TEST(HybComm, AdaptiveWorkersAgreeOnTheSlowestWorkersView) {
  constexpr int kWorkers = 3;
  std::mutex mutex;
  std::vector<std::vector<double>> contributions(kWorkers);
  std::vector<double> combined;
  std::barrier sync(kWorkers, [&]() noexcept {
    combined = contributions[0];
    for (const auto& c : contributions) {
      for (size_t i = 0; i < c.size(); ++i) combined[i] = std::max(combined[i], c[i]);
    }
  });
  std::vector<std::vector<scheme::Scheme>> decided(kWorkers);
  std::vector<std::thread> threads;
  for (int w = 0; w < kWorkers; ++w) {
    threads.emplace_back([&, w] {
      HybCommOptions options;
      options.mode = HybCommMode::kAdaptive;
      options.candidates = {scheme::Scheme::kSfb, scheme::Scheme::kPs};
      auto hybcomm = HybComm::create(kLayers, kCluster, options);
      ASSERT_TRUE(hybcomm.isOk());
      const Agree agree = [&](std::span<const double> mine) -> Result<std::vector<double>> {
        {
          std::lock_guard<std::mutex> lock(mutex);
          contributions[static_cast<size_t>(w)].assign(mine.begin(), mine.end());
        }
        sync.arrive_and_wait();
        std::vector<double> result = combined;
        sync.arrive_and_wait();  // nobody overwrites `combined` before everyone copied it
        return result;
      };
      run(
          *hybcomm, 4,
          [&](size_t, scheme::Scheme s, uint64_t) { return s == scheme::Scheme::kSfb ? (w == 2 ? 3.0 : 1.0) : 2.0; },
          agree);
      for (size_t l = 0; l < hybcomm->layerCount(); ++l) decided[static_cast<size_t>(w)].push_back(hybcomm->scheme(l));
    });
  }
  for (auto& t : threads) t.join();
  for (int w = 0; w < kWorkers; ++w) {
    EXPECT_EQ(decided[static_cast<size_t>(w)],
              (std::vector<scheme::Scheme>{scheme::Scheme::kPs, scheme::Scheme::kPs, scheme::Scheme::kPs}))
        << w;
  }
}

// Noise within the margin changes nothing; a scheme that gets 3x slower is timed again and loses.
TEST(HybComm, AdaptiveTimesAgainAfterADriftAndOnlyThen) {
  HybCommOptions options;
  options.mode = HybCommMode::kAdaptive;
  options.candidates = {scheme::Scheme::kSfb, scheme::Scheme::kPs};
  options.trial_iterations = 1;
  options.window = 4;
  options.drift_margin = 0.25;
  auto hybcomm = HybComm::create({kLayers[1]}, kCluster, options);
  ASSERT_TRUE(hybcomm.isOk());
  uint64_t contended_from = 1000;
  const auto time = [&](size_t, scheme::Scheme s, uint64_t iteration) {
    const double noise = 1.0 + 0.1 * static_cast<double>(iteration % 3);  // up to +20%
    if (s == scheme::Scheme::kPs) return 2.0 * noise;
    return (iteration >= contended_from ? 3.0 : 1.0) * noise;
  };
  run(*hybcomm, 2 + 4 * 5, time);  // trials, then 5 windows of noise
  EXPECT_EQ(hybcomm->scheme(0), scheme::Scheme::kSfb);
  EXPECT_EQ(hybcomm->choices().size(), 1u);
  EXPECT_FALSE(hybcomm->inTrial());

  contended_from = hybcomm->iteration();
  run(*hybcomm, 4 + 2 + 2, time);  // a window that sees it, the trial (2 candidates), past the decision
  EXPECT_EQ(hybcomm->scheme(0), scheme::Scheme::kPs);
  ASSERT_EQ(hybcomm->choices().size(), 2u);
  EXPECT_NE(hybcomm->choices()[1].reason.find("fc6: PS "), std::string::npos) << hybcomm->choices()[1].reason;
}

}  // namespace
}  // namespace poseidon::trainer
