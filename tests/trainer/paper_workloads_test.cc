// The layer shapes of the papers' models: VGG19 derived from the PS tensor list, GoogLeNet from
// its published channel table, each checked against independently known totals.
#include <gtest/gtest.h>

#include "ps/model_zoo.h"
#include "trainer/hybcomm/googlenet.h"
#include "trainer/hybcomm/layers_from_tensors.h"
#include "trainer/hybcomm/paper_workloads.h"

namespace poseidon::trainer {
namespace {

int64_t totalParams(const std::vector<LayerShape>& layers) {
  int64_t total = 0;
  for (const LayerShape& layer : layers) total += layer.totalParams();
  return total;
}

std::vector<std::string> fullyConnected(const std::vector<LayerShape>& layers) {
  std::vector<std::string> names;
  for (const LayerShape& layer : layers) {
    if (layer.isFullyConnected()) names.push_back(layer.name);
  }
  return names;
}

TEST(PaperWorkloads, Vgg19FromThePsTensors) {
  auto vgg = vgg19Workload();
  ASSERT_TRUE(vgg.isOk()) << vgg.status().toString();
  EXPECT_EQ(vgg->batch_per_node, 32);
  ASSERT_EQ(vgg->layers.size(), 19u);
  EXPECT_EQ(fullyConnected(vgg->layers), (std::vector<std::string>{"fc6", "fc7", "fc8"}));
  const LayerShape& fc6 = vgg->layers[16];
  EXPECT_EQ(fc6.m, 4096);   // outputs
  EXPECT_EQ(fc6.n, 25088);  // inputs: 512 x 7 x 7
  EXPECT_EQ(fc6.bias, 4096);
  EXPECT_EQ(vgg->layers[18].m, 1000);
  EXPECT_EQ(vgg->layers[0].params, 3 * 3 * 3 * 64 + 64);
  // Simonyan & Zisserman's VGG19: 143,667,240 parameters ("143M", [Poseidon ATC'17] Table 3). Its FC layers
  // hold 86% of them; [Poseidon analysis] section 6.4 prints "~30% FC", which the architecture does not bear out.
  EXPECT_EQ(totalParams(vgg->layers), 143'667'240);
  int64_t fc = 0;
  for (const LayerShape& layer : vgg->layers) fc += layer.isFullyConnected() ? layer.totalParams() : 0;
  EXPECT_NEAR(static_cast<double>(fc) / 143'667'240, 0.86, 0.005);
}

TEST(PaperWorkloads, Vgg19_22kSwapsTheClassifier) {
  auto vgg = vgg19_22kWorkload();
  ASSERT_TRUE(vgg.isOk()) << vgg.status().toString();
  EXPECT_EQ(vgg->layers[18].m, 21841);
  EXPECT_EQ(vgg->layers[18].n, 4096);
  // 143,667,240 - 4,097,000 (1K classifier) + 4096 * 21841 + 21841: [Poseidon ATC'17]'s "229M".
  EXPECT_EQ(totalParams(vgg->layers), 229'052'817);
}

TEST(PaperWorkloads, GoogLeNetFromItsChannelTable) {
  const Workload g = googlenetWorkload();
  EXPECT_EQ(g.batch_per_node, 128);
  ASSERT_EQ(g.layers.size(), 12u);
  EXPECT_EQ(fullyConnected(g.layers), std::vector<std::string>{"classifier"});
  // The classifier's inputs are inception 5b's concatenated branches: 384 + 384 + 128 + 128.
  EXPECT_EQ(g.layers.back().m, 1000);
  EXPECT_EQ(g.layers.back().n, 1024);
  // Rows of Szegedy et al. Table 1 whose printed params agree with the channel columns:
  // conv2 112K (64*64 + 9*64*192 = 114,688 weights), inception 3a 159K (163,328 weights).
  EXPECT_EQ(g.layers[1].params, 114'688 + 64 + 192);
  EXPECT_EQ(g.layers[2].params, 163'328 + 368);
  // 7.0M in all. [Poseidon 2015] 5.1.2, [Poseidon ATC'17] Table 3 say "5M"; the table's own params column sums to 6.8M.
  EXPECT_EQ(totalParams(g.layers), 6'998'552);
}

TEST(PaperWorkloads, GoogLeNetAuxiliaryHeads) {
  const std::vector<LayerShape> layers = googlenetLayers(true);
  EXPECT_EQ(fullyConnected(layers), (std::vector<std::string>{"loss1_fc", "loss1_classifier", "loss2_fc",
                                                              "loss2_classifier", "classifier"}));
  // The heads sit on inception 4a (512 channels) and 4d (528 channels).
  EXPECT_EQ(layers[5].name, "loss1_conv");
  EXPECT_EQ(layers[5].params, 512 * 128 + 128);
  EXPECT_EQ(layers[11].name, "loss2_conv");
  EXPECT_EQ(layers[11].params, 528 * 128 + 128);
  // 13.38M floats: 53.5 MB in float32, the size of Caffe's bvlc_googlenet weights.
  EXPECT_EQ(totalParams(layers), 13'378'280);
}

TEST(LayersFromTensors, GroupsWeightAndBiasAndNamesBadInput) {
  const std::vector<ps::TensorSpec> good = {{"conv.weight", 27}, {"conv.bias", 3}, {"fc1.weight", 12}, {"fc1.bias", 4}};
  auto layers = layersFromTensors(good);
  ASSERT_TRUE(layers.isOk()) << layers.status().toString();
  ASSERT_EQ(layers->size(), 2u);
  EXPECT_EQ((*layers)[0].params, 30);
  EXPECT_EQ((*layers)[1].m, 4);
  EXPECT_EQ((*layers)[1].n, 3);

  auto message = [](std::vector<ps::TensorSpec> tensors) {
    auto result = layersFromTensors(tensors);
    return result.isOk() ? std::string("ok") : result.status().message();
  };
  EXPECT_EQ(message({{"conv.kernel", 3}}), "tensor 'conv.kernel' is not named '<layer>.weight' or '<layer>.bias'");
  EXPECT_EQ(message({{"conv.weight", 3}, {"conv.weight", 3}}), "tensor 'conv.weight' appears twice");
  EXPECT_EQ(message({{"conv.weight", 0}}), "tensor 'conv.weight' has 0 elements, expected 1..2^53");
  EXPECT_EQ(message({{"fc1.weight", 12}}),
            "FC layer 'fc1' has weight 12 and bias 0, expected a bias of M outputs dividing the weight");
  EXPECT_EQ(message({{"fc1.weight", 12}, {"fc1.bias", 5}}),
            "FC layer 'fc1' has weight 12 and bias 5, expected a bias of M outputs dividing the weight");
}

TEST(LayersFromTensors, AgreesWithThePsModelZoo) {
  const auto tensors = ps::vgg19(21841);
  auto layers = layersFromTensors(tensors);
  ASSERT_TRUE(layers.isOk());
  uint64_t tensor_total = 0;
  for (const auto& tensor : tensors) tensor_total += tensor.elements;
  EXPECT_EQ(static_cast<uint64_t>(totalParams(*layers)), tensor_total);
  EXPECT_EQ(layers->size() * 2, tensors.size());
}

}  // namespace
}  // namespace poseidon::trainer
