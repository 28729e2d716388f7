// The merge plan's input checks, timing model, text, JSON fields and the fixed-plan parser.
#include "trainer/wfbp/merge_plan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "trainer/wfbp/merge_plan_text.h"

namespace poseidon::trainer {
namespace {

void expectInvalid(const Status& status, const std::string& fragment) {
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.toString();
  EXPECT_NE(status.message().find(fragment), std::string::npos) << status.toString();
}

std::vector<MergeLayer> fourLayers() { return std::vector<MergeLayer>(4, MergeLayer{1.0, 1, true, {}}); }

TEST(MergeInput, RefusesWhatCannotBeTimed) {
  std::vector<MergeLayer> layers = fourLayers();
  expectInvalid(validateMergeInput({}, MessageCost{}), "no layers");
  expectInvalid(validateMergeInput(layers, MessageCost{-1e-6, 0}), "latency a = -1e-06");
  expectInvalid(validateMergeInput(layers, MessageCost{0, -2}), "b = -2");
  expectInvalid(validateMergeInput(layers, MessageCost{std::nan(""), 0}), "latency a = nan");
  expectInvalid(validateMergeInput(layers, MessageCost{0, std::numeric_limits<double>::infinity()}), "b = inf");
  layers[2].backward_s = -3;
  expectInvalid(validateMergeInput(layers, MessageCost{}), "layer 2 (backward order) has backward time -3");
  layers = fourLayers();
  layers[1].own_comm_s = 0.5;
  expectInvalid(validateMergeInput(layers, MessageCost{}), "layer 1 (backward order) is mergeable");
  layers[1].mergeable = false;
  EXPECT_TRUE(validateMergeInput(layers, MessageCost{}).isOk());
  layers[1].own_comm_s = -0.5;
  expectInvalid(validateMergeInput(layers, MessageCost{}), "communication time -0.5");
  layers = fourLayers();
  layers[0].gradient_bytes = std::numeric_limits<uint64_t>::max();
  expectInvalid(validateMergeInput(layers, MessageCost{}), "overflow 64 bits at layer 1");
}

TEST(MergeGroups, MustCoverEveryLayerOnceInOrder) {
  std::vector<MergeLayer> layers = fourLayers();
  EXPECT_TRUE(validateGroups(layers, std::vector<MergeGroup>{{0, 1}, {2, 3}}).isOk());
  expectInvalid(validateGroups(layers, std::vector<MergeGroup>{{0, 1}, {3, 3}}), "group 3-3 should start at layer 2");
  expectInvalid(validateGroups(layers, std::vector<MergeGroup>{{0, 2}, {2, 3}}), "group 2-3 should start at layer 3");
  expectInvalid(validateGroups(layers, std::vector<MergeGroup>{{0, 1}}), "layers 2-3 are in no group");
  expectInvalid(validateGroups(layers, std::vector<MergeGroup>{{0, 4}}), "group 0-4 goes past the last layer, 3");
  layers[2].mergeable = false;
  expectInvalid(validateGroups(layers, std::vector<MergeGroup>{{0, 2}, {3, 3}}), "group 0-2 holds layer 2");
  EXPECT_TRUE(validateGroups(layers, std::vector<MergeGroup>{{0, 1}, {2, 2}, {3, 3}}).isOk());
}

TEST(MergePlanModel, TimesAFixedPlanByHand) {
  // Backward 1, 2, 0.5, 0.5 s (ready 1, 3, 3.5, 4); 10, 20, 30, 40 bytes; T(M) = 1 + 0.1 M.
  // Unmerged: 1-3, 3-6, 6-10, 10-15. Groups 0-1, 2-3: 3-7, 7-15 (7 + 1 + 7).
  std::vector<MergeLayer> layers = {{1, 10, true, {}}, {2, 20, true, {}}, {0.5, 30, true, {}}, {0.5, 40, true, {}}};
  auto plan = makeMergePlan(layers, MessageCost{1, 0.1}, {{0, 1}, {2, 3}});
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  EXPECT_DOUBLE_EQ(plan->predicted_s, 15.0);
  EXPECT_DOUBLE_EQ(plan->unmerged_s, 15.0);
  EXPECT_DOUBLE_EQ(plan->backward_s, 4.0);
  EXPECT_DOUBLE_EQ(plan->tailSeconds(), 11.0);
  EXPECT_EQ(plan->layerCount(), 4u);
  // An unmergeable layer priced on its own: layer 3 takes 0.25 s instead of T(40) = 5 s.
  layers[3].mergeable = false;
  layers[3].own_comm_s = 0.25;
  plan = makeMergePlan(layers, MessageCost{1, 0.1}, {{0, 2}, {3, 3}});
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  EXPECT_DOUBLE_EQ(plan->predicted_s, 3.5 + 1 + 6 + 0.25);
  // A plan that merges an unmergeable layer is refused.
  expectInvalid(makeMergePlan(layers, MessageCost{1, 0.1}, {{0, 3}}).status(), "holds layer 3");
}

TEST(MergePlanModel, CommunicationNeverEndsBeforeTheBackwardPass) {
  std::vector<MergeLayer> layers = {{0.5, 0, true, {}}, {2, 0, true, {}}};
  auto plan = makeMergePlan(layers, MessageCost{}, unmergedGroups(2));
  ASSERT_TRUE(plan.isOk());
  EXPECT_DOUBLE_EQ(plan->predicted_s, 2.5);
  EXPECT_DOUBLE_EQ(plan->tailSeconds(), 0.0);
}

MergePlan examplePlan() {
  std::vector<MergeLayer> layers(10, MergeLayer{1e-3, 1000, true, {}});
  auto plan = makeMergePlan(layers, MessageCost{120e-6, 0.8e-9}, {{0, 3}, {4, 4}, {5, 9}});
  EXPECT_TRUE(plan.isOk());
  return *plan;
}

TEST(MergePlanText, DescribesThePlan) {
  const MergePlan plan = examplePlan();
  EXPECT_EQ(formatMergeGroups(plan.groups), "0-3,4,5-9");
  const std::string text = describeMergePlan(plan);
  EXPECT_NE(text.find("merge plan 0-3,4,5-9: 3 messages for 10 layers"), std::string::npos) << text;
  EXPECT_NE(text.find("backward 10.000 ms"), std::string::npos) << text;
  EXPECT_NE(text.find("T(M) = 120.000 us + M / 1.250 GB/s"), std::string::npos) << text;
}

TEST(MergePlanText, JsonFieldsAreThePlans) {
  const MergePlan plan = examplePlan();
  const nlohmann::json json = nlohmann::json::parse(mergePlanJson(plan));
  EXPECT_EQ(json.at("groups"), "0-3,4,5-9");
  EXPECT_EQ(json.at("layers"), 10);
  EXPECT_EQ(json.at("messages"), 3);
  EXPECT_DOUBLE_EQ(json.at("predicted_s").get<double>(), plan.predicted_s);
  EXPECT_DOUBLE_EQ(json.at("unmerged_s").get<double>(), plan.unmerged_s);
  EXPECT_DOUBLE_EQ(json.at("backward_s").get<double>(), 10e-3);
  EXPECT_DOUBLE_EQ(json.at("tail_s").get<double>(), plan.predicted_s - plan.backward_s);
  EXPECT_DOUBLE_EQ(json.at("latency_s").get<double>(), 120e-6);
  EXPECT_DOUBLE_EQ(json.at("seconds_per_byte").get<double>(), 0.8e-9);
  EXPECT_EQ(mergePlanFields(plan).groups, "0-3,4,5-9");
}

TEST(MergePlanParse, ReadsWhatIsPrinted) {
  auto groups = parseMergeGroups("0-3,4,5-9", 10);
  ASSERT_TRUE(groups.isOk()) << groups.status().toString();
  EXPECT_EQ(*groups, (std::vector<MergeGroup>{{0, 3}, {4, 4}, {5, 9}}));
  EXPECT_EQ(formatMergeGroups(examplePlan().groups), formatMergeGroups(*groups));
  groups = parseMergeGroups(" 0 - 1 , 2 ", 3);
  ASSERT_TRUE(groups.isOk()) << groups.status().toString();
  EXPECT_EQ(*groups, (std::vector<MergeGroup>{{0, 1}, {2, 2}}));
  groups = parseMergeGroups("0", 1);
  ASSERT_TRUE(groups.isOk());
  EXPECT_EQ(groups->size(), 1u);
}

TEST(MergePlanParse, NamesTheBadToken) {
  expectInvalid(parseMergeGroups("", 4).status(), "empty");
  expectInvalid(parseMergeGroups("0-3", 0).status(), "no layers");
  expectInvalid(parseMergeGroups("0-1,x,3", 4).status(), "token 'x' is not a layer position");
  expectInvalid(parseMergeGroups("0-1,2-,3", 4).status(), "token '2-'");
  expectInvalid(parseMergeGroups("0-1,-2,3", 4).status(), "token '-2'");
  expectInvalid(parseMergeGroups("0-1-2,3", 4).status(), "token '0-1-2'");
  expectInvalid(parseMergeGroups("0-1,,2-3", 4).status(), "token ''");
  expectInvalid(parseMergeGroups("0-1,2-3,", 4).status(), "token '' comes after every layer was grouped");
  expectInvalid(parseMergeGroups("0-1,", 4).status(), "token ''");
  expectInvalid(parseMergeGroups("0-1,3-2", 4).status(), "token '3-2' ends at 2, before its start 3");
  expectInvalid(parseMergeGroups("0-1,2-7", 4).status(), "token '2-7' names layer 7, past the last of the 4");
  expectInvalid(parseMergeGroups("0-1,3", 4).status(), "token '3' starts at layer 3, expected 2");
  expectInvalid(parseMergeGroups("0-2,2-3", 4).status(), "token '2-3' starts at layer 2, expected 3");
  expectInvalid(parseMergeGroups("2-3,0-1", 4).status(), "token '2-3' starts at layer 2, expected 0");
  expectInvalid(parseMergeGroups("0-3,4", 4).status(), "token '4' comes after every layer was grouped");
  expectInvalid(parseMergeGroups("0-1", 4).status(), "layers 2-3 are in no group");
  expectInvalid(parseMergeGroups("0-99999999999999999999999", 4).status(), "token '0-99999999999999999999999'");
}

}  // namespace
}  // namespace poseidon::trainer
