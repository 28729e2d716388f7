// The MG-WFBP planner against a brute force over every contiguous partition, hand-checked cases,
// and the case where [MG-WFBP] Algorithm 1's greedy rule is not optimal.
#include "trainer/wfbp/merge_planner.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "trainer/wfbp/merge_plan_text.h"

namespace poseidon::trainer {
namespace {

// The iteration's backward part as [MG-WFBP] Eqs. 14-20 write it, independently of the library's
// simulateBackward: layers numbered as the paper does (l = L first, down to 1); a group's message
// is carried by its last-ready layer (its lowest l) and every other member has t_c = 0 (Eq. 14);
// tau_c(L) = tau_b(L) + t_b(L), tau_c(l) = max(tau_c(l+1) + t_c(l+1), tau_b(l) + t_b(l)) (Eq. 20);
// the iteration ends at tau_c(1) + t_c(1).
double paperIterationEnd(const std::vector<MergeLayer>& layers, const MessageCost& cost,
                         const std::vector<MergeGroup>& groups) {
  const size_t count = layers.size();
  std::vector<double> comm(count, 0.0);  // t_c per backward position
  for (const MergeGroup& g : groups) {
    uint64_t bytes = 0;
    for (size_t i = g.first; i <= g.last; ++i) bytes += layers[i].gradient_bytes;
    const bool own = g.first == g.last && layers[g.first].own_comm_s.has_value();
    comm[g.last] = own ? *layers[g.first].own_comm_s : cost.latency_s + cost.seconds_per_byte * double(bytes);
  }
  double ready = 0, start = 0;
  for (size_t i = 0; i < count; ++i) {
    ready += layers[i].backward_s;
    start = i == 0 ? ready : std::max(start + comm[i - 1], ready);
  }
  return start + comm[count - 1];
}

// Every contiguous partition (a cut or not after each of the first L-1 layers) that keeps the
// unmergeable layers alone.
std::vector<std::vector<MergeGroup>> allPartitions(const std::vector<MergeLayer>& layers) {
  std::vector<std::vector<MergeGroup>> result;
  const size_t count = layers.size();
  for (uint64_t cuts = 0; cuts < (uint64_t{1} << (count - 1)); ++cuts) {
    std::vector<MergeGroup> groups;
    size_t first = 0;
    bool valid = true;
    for (size_t i = 0; i < count; ++i) {
      if (i + 1 == count || (cuts >> i & 1)) {
        for (size_t j = first; j <= i && i > first; ++j) valid = valid && layers[j].mergeable;
        groups.push_back({first, i});
        first = i + 1;
      }
    }
    if (valid) result.push_back(std::move(groups));
  }
  return result;
}

struct Instance {
  std::vector<MergeLayer> layers;
  MessageCost cost;
};

// Regimes from compute-bound to latency-bound, so that every kind of plan is optimal somewhere.
Instance randomInstance(std::mt19937_64& rng) {
  std::uniform_int_distribution<size_t> count_of(1, 10);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  Instance in;
  const double compute_scale = std::pow(10.0, -4 + 2 * unit(rng));                 // 0.1 ms .. 10 ms per layer
  in.cost.latency_s = unit(rng) < 0.1 ? 0.0 : std::pow(10.0, -5 + 3 * unit(rng));  // 10 us .. 10 ms
  in.cost.seconds_per_byte = unit(rng) < 0.05 ? 0.0 : 1.0 / std::pow(10.0, 8 + 2 * unit(rng));  // 0.1-10 GB/s
  const size_t count = count_of(rng);
  for (size_t i = 0; i < count; ++i) {
    MergeLayer layer;
    layer.backward_s = unit(rng) < 0.1 ? 0.0 : compute_scale * unit(rng);
    layer.gradient_bytes = unit(rng) < 0.1 ? 0 : static_cast<uint64_t>(std::pow(10.0, 2 + 5 * unit(rng)));
    layer.mergeable = unit(rng) >= 0.15;
    if (!layer.mergeable && unit(rng) < 0.5) layer.own_comm_s = in.cost.latency_s * 3 * unit(rng);
    in.layers.push_back(layer);
  }
  return in;
}

bool withinRelative(double x, double y, double relative) {
  return std::fabs(x - y) <= relative * std::max(std::fabs(x), std::fabs(y));
}

// The issue asks that the planner's merge set equal a brute-force optimum. Two different merge
// sets can have the same time (e.g. when the communication is hidden under compute either way,
// or a = 0 and merging neither helps nor hurts), and then either is an optimum: so the criterion
// is that the planner's predicted time equals the least time over all partitions (within 1e-9
// relative: sums of the same doubles taken in another order differ by rounding), and that its
// groups are the brute force's wherever the optimum is unique by more than that.
TEST(MergePlanner, EqualsBruteForceOn1000RandomInstances) {
  std::mt19937_64 rng(20240514);
  int unique_optima = 0, merged_better = 0;
  for (int trial = 0; trial < 1000; ++trial) {
    const Instance in = randomInstance(rng);
    auto plan = planMerge(in.layers, in.cost);
    ASSERT_TRUE(plan.isOk()) << plan.status().toString();

    double best = std::numeric_limits<double>::infinity(), second = best;
    std::vector<MergeGroup> best_groups;
    for (const auto& groups : allPartitions(in.layers)) {
      const double t = paperIterationEnd(in.layers, in.cost, groups);
      if (t < best) {
        second = best;
        best = t;
        best_groups = groups;
      } else if (t < second) {
        second = t;
      }
    }
    SCOPED_TRACE(testing::Message() << "trial " << trial << ": " << describeMergePlan(*plan) << "; brute force "
                                    << formatMergeGroups(best_groups) << " " << best << " s");
    ASSERT_TRUE(withinRelative(plan->predicted_s, best, 1e-9));
    // The library's timing model agrees with the paper's recursion on the planner's own groups.
    ASSERT_TRUE(withinRelative(plan->predicted_s, paperIterationEnd(in.layers, in.cost, plan->groups), 1e-12));
    if (!withinRelative(best, second, 1e-9)) {
      ++unique_optima;
      ASSERT_EQ(formatMergeGroups(plan->groups), formatMergeGroups(best_groups));
    }
    if (plan->predicted_s < plan->unmerged_s * (1 - 1e-9)) ++merged_better;
  }
  // The instances exercise the claim: many optima are unique (472 of 1000 with this seed; ties are
  // plans whose communication hides under compute either way) and merging wins often (540).
  EXPECT_GT(unique_optima, 300);
  EXPECT_GT(merged_better, 300);
}

TEST(MergePlanner, NothingMergedWhenLatencyIsFree) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    Instance in = randomInstance(rng);
    in.cost.latency_s = 0;
    for (MergeLayer& layer : in.layers) layer.own_comm_s.reset();
    auto plan = planMerge(in.layers, in.cost);
    ASSERT_TRUE(plan.isOk());
    EXPECT_EQ(plan->groups, unmergedGroups(in.layers.size())) << describeMergePlan(*plan);
    EXPECT_EQ(plan->predicted_s, plan->unmerged_s);
  }
}

TEST(MergePlanner, EverythingMergedWhenLatencyDominates) {
  std::vector<MergeLayer> layers(6, MergeLayer{1e-6, 4096, true, {}});
  const MessageCost cost{1.0, 1e-9};  // one second per message, a microsecond of compute per layer
  auto plan = planMerge(layers, cost);
  ASSERT_TRUE(plan.isOk());
  EXPECT_EQ(formatMergeGroups(plan->groups), "0-5");
  EXPECT_NEAR(plan->predicted_s, 6e-6 + 1.0 + 6 * 4096 * 1e-9, 1e-15);
  EXPECT_NEAR(plan->unmerged_s, 1e-6 + 6 * (1.0 + 4096 * 1e-9), 1e-12);
}

TEST(MergePlanner, UnmergeableLayerStaysAlone) {
  std::vector<MergeLayer> layers(6, MergeLayer{1e-6, 4096, true, {}});
  layers[2].mergeable = false;
  layers[5].mergeable = false;
  layers[5].own_comm_s = 0.5;
  auto plan = planMerge(layers, MessageCost{1.0, 1e-9});
  ASSERT_TRUE(plan.isOk());
  EXPECT_EQ(formatMergeGroups(plan->groups), "0-1,2,3-4,5");
  // 4 messages: three at 1 s + their bytes, the SFB layer's own 0.5 s last.
  EXPECT_NEAR(plan->predicted_s, 2e-6 + 3.0 + 6 * 4096e-9 - 4096e-9 + 0.5, 1e-12);
}

TEST(MergePlanner, HandCheckedThreeLayers) {
  // Backward 1, 1, 1 s; 1 byte each; T(M) = 1 + M s, ready at 1, 2, 3 s. Unmerged: messages 1-3,
  // 3-5, 5-7. Merging the first two: 2-5, 5-7. All: 3-7. Merging the last two: 1-3, then 3-6.
  std::vector<MergeLayer> layers(3, MergeLayer{1.0, 1, true, {}});
  auto plan = planMerge(layers, MessageCost{1.0, 1.0});
  ASSERT_TRUE(plan.isOk());
  EXPECT_EQ(formatMergeGroups(plan->groups), "0,1-2");
  EXPECT_DOUBLE_EQ(plan->predicted_s, 6.0);
  EXPECT_DOUBLE_EQ(plan->unmerged_s, 7.0);
  EXPECT_DOUBLE_EQ(plan->backward_s, 3.0);
  EXPECT_DOUBLE_EQ(plan->tailSeconds(), 3.0);
}

TEST(MergePlanner, CommunicationHiddenUnderComputeIsNotMerged) {
  // Each message (0.1 s) ends before the next layer is ready; merging gains nothing (the last
  // message ends at 4.1 s either way), so nothing is merged.
  std::vector<MergeLayer> layers(4, MergeLayer{1.0, 0, true, {}});
  auto plan = planMerge(layers, MessageCost{0.1, 0.0});
  ASSERT_TRUE(plan.isOk());
  EXPECT_EQ(formatMergeGroups(plan->groups), "0,1,2,3");
  EXPECT_DOUBLE_EQ(plan->predicted_s, 4.1);
}

// [MG-WFBP] Algorithm 1 as printed (lines 8-16): paper layers L..1, merge l into l-1 when
// tau_b(l-2) - tau_c(l) < a, recomputing the communication starts after each merge. Returns the
// groups it ends with, in backward positions.
std::vector<MergeGroup> paperAlgorithm1(const std::vector<MergeLayer>& layers, const MessageCost& cost) {
  const size_t L = layers.size();
  // Paper index l = 1..L is backward position L - l; tau_b(0) is when layer 1's gradient is ready.
  std::vector<double> tb(L + 1), tc(L + 1), tau_b(L + 1), p(L + 1);
  for (size_t l = 1; l <= L; ++l) {
    tb[l] = layers[L - l].backward_s;
    p[l] = static_cast<double>(layers[L - l].gradient_bytes);
    tc[l] = cost.latency_s + cost.seconds_per_byte * p[l];
  }
  tau_b[L] = 0;
  for (size_t l = L; l-- > 1;) tau_b[l] = tau_b[l + 1] + tb[l + 1];
  tau_b[0] = tau_b[1] + tb[1];
  auto comm_start = [&] {
    std::vector<double> tau_c(L + 1);
    tau_c[L] = tau_b[L] + tb[L];
    for (size_t l = L; l-- > 1;) tau_c[l] = std::max(tau_c[l + 1] + tc[l + 1], tau_b[l] + tb[l]);
    return tau_c;
  };
  std::vector<double> tau_c = comm_start();
  std::vector<bool> merged(L + 1, false);
  for (size_t l = L; l >= 2; --l) {
    if (tau_b[l - 2] - tau_c[l] < cost.latency_s) {
      tc[l] = 0;
      p[l - 1] += p[l];
      tc[l - 1] = cost.latency_s + cost.seconds_per_byte * p[l - 1];
      tau_c = comm_start();
      merged[l] = true;
    }
  }
  std::vector<MergeGroup> groups;
  size_t first = 0;
  for (size_t l = L; l >= 1; --l) {
    if (merged[l]) continue;  // travels with layer l-1
    groups.push_back({first, L - l});
    first = L - l + 1;
  }
  return groups;
}

TEST(MergePlanner, BeatsAlgorithm1WhereItsGreedyRuleIsNotOptimal) {
  // The case merge_planner.h cites: backward 3, 1, 3 s; 1, 2, 1 bytes; T(M) = 3 + M.
  std::vector<MergeLayer> layers = {{3.0, 1, true, {}}, {1.0, 2, true, {}}, {3.0, 1, true, {}}};
  const MessageCost cost{3.0, 1.0};
  const std::vector<MergeGroup> greedy = paperAlgorithm1(layers, cost);
  EXPECT_EQ(formatMergeGroups(greedy), "0-1,2");
  auto greedy_plan = makeMergePlan(layers, cost, greedy);
  ASSERT_TRUE(greedy_plan.isOk());
  EXPECT_DOUBLE_EQ(greedy_plan->predicted_s, 14.0);  // 4 + 6 = 10, then 10 + 4

  auto plan = planMerge(layers, cost);
  ASSERT_TRUE(plan.isOk());
  EXPECT_EQ(formatMergeGroups(plan->groups), "0,1-2");
  EXPECT_DOUBLE_EQ(plan->predicted_s, 13.0);  // 3 + 4 = 7, then 7 + 6
  EXPECT_DOUBLE_EQ(plan->unmerged_s, 16.0);
}

TEST(MergePlanner, RefusesInvalidInput) {
  const std::vector<MergeLayer> none;
  EXPECT_EQ(planMerge(none, MessageCost{}).status().code(), StatusCode::kInvalidArgument);
  std::vector<MergeLayer> layers(2, MergeLayer{1.0, 1, true, {}});
  EXPECT_FALSE(planMerge(layers, MessageCost{-1.0, 0}).isOk());
  layers[1].backward_s = -0.5;
  const Status status = planMerge(layers, MessageCost{}).status();
  EXPECT_NE(status.message().find("layer 1"), std::string::npos) << status.toString();
  EXPECT_NE(status.message().find("-0.5"), std::string::npos) << status.toString();
}

TEST(MergePlanner, LargeModelIsQuadraticNotExponential) {
  // 2000 layers: a brute force could never finish; O(L^2) takes milliseconds.
  std::vector<MergeLayer> layers(2000, MergeLayer{1e-4, 100000, true, {}});
  for (size_t i = 0; i < layers.size(); i += 7) layers[i].mergeable = false;
  auto plan = planMerge(layers, MessageCost{1e-3, 1e-9});
  ASSERT_TRUE(plan.isOk());
  EXPECT_LE(plan->predicted_s, plan->unmerged_s);
  EXPECT_LT(plan->groups.size(), layers.size());
}

}  // namespace
}  // namespace poseidon::trainer
