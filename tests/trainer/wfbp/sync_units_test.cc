// SyncUnits and MergeOptions: which of the trainer's layers sync as one message ([MG-WFBP]), the
// merged units' layout, and the options' errors.
#include "trainer/wfbp/sync_units.h"

#include <gtest/gtest.h>

#include <string>

#include "trainer/wfbp/merge_options.h"

namespace poseidon::trainer {
namespace {

void expectInvalid(const Status& status, const std::string& fragment) {
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.toString();
  EXPECT_NE(status.message().find(fragment), std::string::npos) << status.toString();
}

model::ConvShape conv(uint64_t in, uint64_t out) {
  model::ConvShape shape;
  shape.in_channels = in;
  shape.out_channels = out;
  shape.kernel_h = shape.kernel_w = 3;
  shape.out_h = shape.out_w = 8;
  shape.bias = true;
  return shape;
}

// Forward order: conv1, conv2, bn, fc1, fc2 (backward positions 4, 3, 2, 1, 0).
model::Model fiveLayers() {
  return model::Model("five",
                      {model::Layer::convolution("conv1", conv(1, 4)), model::Layer::convolution("conv2", conv(4, 4)),
                       model::Layer::other("bn", 4, 4), model::Layer::fullyConnected("fc1", 16, 256, true),
                       model::Layer::fullyConnected("fc2", 10, 16, true)},
                      8);
}

TEST(SyncUnits, UnmergedIsEveryLayerAlone) {
  const model::Model model = fiveLayers();
  const SyncUnits units = SyncUnits::unmerged(model);
  ASSERT_EQ(units.unitCount(), 5u);
  for (size_t l = 0; l < 5; ++l) {
    EXPECT_EQ(units.unitOf(l), l);
    EXPECT_FALSE(units.merged(l));
    EXPECT_EQ(units.offsetInUnit(l), 0u);
    EXPECT_EQ(units.unitModel().layers()[l].name(), model.layers()[l].name());
    EXPECT_EQ(units.unitModel().layers()[l].kind(), model.layers()[l].kind());
  }
  EXPECT_EQ(units.describe(), "conv1,conv2,bn,fc1,fc2");
}

TEST(SyncUnits, AMergedRunIsOneLayerOfEveryMembersTensorsInForwardOrder) {
  const model::Model model = fiveLayers();
  // Backward positions: 0 fc2, 1 fc1, 2-4 bn, conv2, conv1.
  auto units = SyncUnits::fromPlan(model, std::vector<MergeGroup>{{0, 0}, {1, 1}, {2, 4}});
  ASSERT_TRUE(units.isOk()) << units.status().toString();
  ASSERT_EQ(units->unitCount(), 3u);
  EXPECT_EQ(units->describe(), "conv1..bn,fc1,fc2");
  const model::Layer& merged = units->unitModel().layers()[0];
  EXPECT_FALSE(merged.isFullyConnected());
  const uint64_t conv1 = model.layers()[0].params(), conv2 = model.layers()[1].params(), bn = 8;
  EXPECT_EQ(merged.params(), conv1 + conv2 + bn);
  ASSERT_EQ(merged.tensors().size(), 6u);  // weight and bias of each, in forward order
  EXPECT_EQ(merged.tensors()[0].name, "conv1.weight");
  EXPECT_EQ(merged.tensors()[5].name, "bn.bias");
  EXPECT_EQ(units->firstLayer(0), 0u);
  EXPECT_EQ(units->lastLayer(0), 2u);
  EXPECT_EQ(units->memberCount(0), 3u);
  EXPECT_TRUE(units->merged(0));
  EXPECT_EQ(units->offsetInUnit(0), 0u);
  EXPECT_EQ(units->offsetInUnit(1), conv1);
  EXPECT_EQ(units->offsetInUnit(2), conv1 + conv2);
  EXPECT_EQ(units->unitOf(2), 0u);
  EXPECT_EQ(units->unitOf(3), 1u);
  EXPECT_EQ(units->unitOf(4), 2u);
  // FC layers keep their kind and shape: SFB may still carry them.
  EXPECT_TRUE(units->unitModel().layers()[1].isFullyConnected());
  EXPECT_EQ(units->unitModel().layers()[1].fc(), model.layers()[3].fc());
}

TEST(SyncUnits, RefusesAnFcLayerInAMergedGroupAndGroupsThatDoNotCoverTheModel) {
  const model::Model model = fiveLayers();
  expectInvalid(SyncUnits::fromPlan(model, std::vector<MergeGroup>{{0, 1}, {2, 4}}).status(),
                "holds the fully-connected layer 'fc1'");
  expectInvalid(SyncUnits::fromPlan(model, std::vector<MergeGroup>{{0, 0}, {2, 4}}).status(), "next starting at 1");
  expectInvalid(SyncUnits::fromPlan(model, std::vector<MergeGroup>{{0, 0}, {1, 1}, {2, 3}}).status(),
                "cover positions 0..3 of 5 layers");
  expectInvalid(SyncUnits::fromPlan(model, std::vector<MergeGroup>{{0, 0}, {1, 1}, {2, 5}}).status(), "2-5");
}

TEST(MergeOptions, ParsesTheModesAndNamesABadOne) {
  EXPECT_EQ(parseMergeMode("off")->mode, MergeOptions::Mode::kOff);
  EXPECT_EQ(parseMergeMode("planned")->mode, MergeOptions::Mode::kPlanned);
  auto fixed = parseMergeMode("fixed:0,1,2-4");
  ASSERT_TRUE(fixed.isOk());
  EXPECT_EQ(fixed->mode, MergeOptions::Mode::kFixed);
  EXPECT_EQ(fixed->groups, "0,1,2-4");
  expectInvalid(parseMergeMode("fixed:").status(), "merge mode 'fixed:'");
  expectInvalid(parseMergeMode("on").status(), "expected off, planned, or fixed:<groups>");
}

TEST(MergeOptions, FixedPlansAreCheckedAgainstTheModel) {
  const model::Model model = fiveLayers();
  MergeOptions options = *parseMergeMode("fixed:0,1,2-4");
  auto setup = planMergeUnits(model, options);
  ASSERT_TRUE(setup.isOk()) << setup.status().toString();
  ASSERT_TRUE(setup->plan.has_value());
  EXPECT_EQ(setup->units.unitCount(), 3u);
  EXPECT_EQ(setup->plan->groups.size(), 3u);
  // The FC layer at position 1 cannot join the convolutions; a plan past the model is named.
  expectInvalid(planMergeUnits(model, *parseMergeMode("fixed:0,1-4")).status(), "fully-connected layer 'fc1'");
  expectInvalid(planMergeUnits(model, *parseMergeMode("fixed:0,1,2-5")).status(), "fixed");
  auto off = planMergeUnits(model, MergeOptions{});
  ASSERT_TRUE(off.isOk());
  EXPECT_FALSE(off->plan.has_value());
  EXPECT_EQ(off->units.unitCount(), 5u);
}

TEST(MergeOptions, PlannedMergesTheSmallLayersWhenLatencyDominatesAndNotWhenItIsFree) {
  const model::Model model = fiveLayers();
  MergeOptions options = *parseMergeMode("planned");
  expectInvalid(planMergeUnits(model, options).status(), "0 backward times given, expected one per layer (5)");
  // 1 ms of backward each; a message costs 10 ms whatever its size: the three small layers go as one.
  options.backward_seconds.assign(5, 1e-3);
  options.cost = MessageCost{10e-3, 1e-12};
  auto slow = planMergeUnits(model, options);
  ASSERT_TRUE(slow.isOk()) << slow.status().toString();
  EXPECT_EQ(slow->units.describe(), "conv1..bn,fc1,fc2");
  EXPECT_LT(slow->plan->predicted_s, slow->plan->unmerged_s);
  // No latency: merging only delays, so every layer stays alone.
  options.cost = MessageCost{0, 1e-9};
  auto free = planMergeUnits(model, options);
  ASSERT_TRUE(free.isOk()) << free.status().toString();
  EXPECT_EQ(free->units.unitCount(), 5u);
}

}  // namespace
}  // namespace poseidon::trainer
