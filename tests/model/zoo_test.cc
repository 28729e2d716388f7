// The zoo against the published parameter counts, and a few per-layer shapes of each network.
#include <gtest/gtest.h>

#include "model/zoo.h"

namespace poseidon::model {
namespace {

const Layer& layer(const Model& model, const std::string& name) {
  const Layer* found = model.findLayer(name);
  EXPECT_NE(found, nullptr) << name << " not in " << model.name();
  static const Layer kNone;
  return found != nullptr ? *found : kNone;
}

TEST(Zoo, EveryModelIsValidAndNamedAsListed) {
  for (const std::string& name : zooNames()) {
    auto model = zooModel(name);
    ASSERT_TRUE(model.isOk()) << model.status().toString();
    EXPECT_EQ(model->name(), name);
    EXPECT_TRUE(model->validate().isOk()) << model->validate().toString();
  }
  EXPECT_EQ(zooModel("resnet-50").status().message(),
            "model 'resnet-50' is not in the zoo (alexnet, alexnet-torchvision, vgg19, vgg19-22k, googlenet, "
            "googlenet-aux, resnet50, inception-v3, inception-v3-noaux)");
}

// Published totals: each comment says where the figure comes from.
TEST(Zoo, ParameterCountsMatchThePublishedFigures) {
  // Caffe's bvlc_alexnet (grouped convolutions): 60,965,224, the figure usually quoted for
  // Krizhevsky et al.'s "60 million parameters".
  EXPECT_EQ(alexnet().totalParams(), 60'965'224u);
  // torchvision.models.alexnet: 61,100,840 (torchvision's model table).
  EXPECT_EQ(alexnetTorchvision().totalParams(), 61'100'840u);
  // torchvision.models.vgg19: 143,667,240; [Poseidon ATC'17] Table 3's "143M".
  EXPECT_EQ(vgg19().totalParams(), 143'667'240u);
  // 143,667,240 - 4,097,000 (the 1K classifier) + 4096 * 21841 + 21841: the papers' "229M".
  EXPECT_EQ(vgg19_22k().totalParams(), 229'052'817u);
  // bvlc_googlenet's weights and biases, 6,998,552 without and 13,378,280 (53.5 MB of float32,
  // the size of the released caffemodel) with the auxiliary heads.
  EXPECT_EQ(googlenet(false).totalParams(), 6'998'552u);
  EXPECT_EQ(googlenet(true).totalParams(), 13'378'280u);
  // torchvision.models.resnet50: 25,557,032.
  EXPECT_EQ(resnet50().totalParams(), 25'557'032u);
  // torchvision.models.inception_v3: 27,161,264 with the auxiliary classifier, 23,834,568 without.
  EXPECT_EQ(inceptionV3(true).totalParams(), 27'161'264u);
  EXPECT_EQ(inceptionV3(false).totalParams(), 23'834'568u);
}

// What the parameter server's table (ps/model_zoo.cc) had: 38 tensors, the same names, sizes and
// order, so checkpoints and chunk layouts of VGG19 stay as they were.
TEST(Zoo, Vgg19KeepsThePsTensorList) {
  const std::vector<Tensor> tensors = vgg19().tensors();
  ASSERT_EQ(tensors.size(), 38u);
  EXPECT_EQ(tensors[0].name, "conv1.weight");
  EXPECT_EQ(tensors[0].floats, 3u * 3 * 3 * 64);
  EXPECT_EQ(tensors[1].name, "conv1.bias");
  EXPECT_EQ(tensors[31].name, "conv16.bias");
  EXPECT_EQ(tensors[32].name, "fc6.weight");
  EXPECT_EQ(tensors[32].floats, 25088u * 4096);
  EXPECT_EQ(tensors[33].name, "fc6.bias");
  EXPECT_EQ(tensors[33].floats, 4096u);
  EXPECT_EQ(vgg19_22k().tensors().back().floats, 21841u);
}

// The layers the cost model (trainer/hybcomm/cost_model.h) prices: 19, FC fc6..fc8 with M outputs,
// N inputs.
TEST(Zoo, Vgg19LayersAsTheCostModelPricesThem) {
  const Model vgg = vgg19();
  EXPECT_EQ(vgg.batch(), 32u);
  ASSERT_EQ(vgg.layers().size(), 19u);
  EXPECT_EQ(vgg.fcLayers(), (std::vector<size_t>{16, 17, 18}));
  const Layer& fc6 = vgg.layers()[16];
  EXPECT_EQ(fc6.name(), "fc6");
  EXPECT_EQ(fc6.fc(), (FcShape{4096, 25088, true}));
  EXPECT_EQ(fc6.denseFloats(), 4096u * 25088);
  EXPECT_EQ(vgg.layers()[0].kind(), LayerKind::kConvolution);
  EXPECT_EQ(vgg.layers()[0].params(), 3u * 3 * 3 * 64 + 64);
  EXPECT_EQ(vgg.layers()[15].conv().out_h, 14u);
  EXPECT_EQ(vgg19_22k().layers()[18].fc(), (FcShape{21841, 4096, true}));
  // Its FC layers hold 86% of the parameters ([Poseidon analysis] section 6.4 says "~30% FC").
  uint64_t fc = 0;
  for (size_t l : vgg.fcLayers()) fc += vgg.layers()[l].params();
  EXPECT_NEAR(static_cast<double>(fc) / static_cast<double>(vgg.totalParams()), 0.86, 0.005);
}

// sfb/googlenet.cc priced Table 1's rows; summing the real layers of each row gives its figures.
TEST(Zoo, GoogLeNetReproducesTheTableRows) {
  const Model g = googlenet(false);
  EXPECT_EQ(g.batch(), 128u);
  ASSERT_EQ(g.fcLayers().size(), 1u);
  const Layer& classifier = g.layers()[g.fcLayers()[0]];
  EXPECT_EQ(classifier.name(), "loss3/classifier");
  EXPECT_EQ(classifier.fc(), (FcShape{1000, 1024, true}));  // 5b's 384 + 384 + 128 + 128 channels
  auto rowParams = [&](const std::string& prefix) {
    uint64_t total = 0;
    for (const Layer& layer : g.layers()) total += layer.name().starts_with(prefix) ? layer.params() : 0;
    return total;
  };
  EXPECT_EQ(rowParams("conv1/"), 7u * 7 * 3 * 64 + 64);
  EXPECT_EQ(rowParams("conv2/"), 114'688u + 64 + 192);    // Table 1's 112K
  EXPECT_EQ(rowParams("inception_3a/"), 163'328u + 368);  // Table 1's 159K
  EXPECT_EQ(g.layers().size(), 3u + 9 * 6 + 1);
  const Layer& reduce = layer(g, "inception_4c/5x5");
  EXPECT_EQ(reduce.conv().in_channels, 24u);
  EXPECT_EQ(reduce.conv().out_channels, 64u);
  EXPECT_EQ(reduce.conv().out_h, 14u);

  const Model aux = googlenet(true);
  std::vector<std::string> fc;
  for (size_t l : aux.fcLayers()) fc.push_back(aux.layers()[l].name());
  EXPECT_EQ(fc, (std::vector<std::string>{"loss1/fc", "loss1/classifier", "loss2/fc", "loss2/classifier",
                                          "loss3/classifier"}));
  // The heads sit on inception 4a (512 channels) and 4d (528), pooled to 4 x 4.
  EXPECT_EQ(layer(aux, "loss1/conv").params(), 512u * 128 + 128);
  EXPECT_EQ(layer(aux, "loss2/conv").params(), 528u * 128 + 128);
  EXPECT_EQ(layer(aux, "loss1/fc").fc(), (FcShape{1024, 2048, true}));
  // In forward order: each head right after the module it reads.
  const auto& layers = aux.layers();
  for (size_t l = 1; l < layers.size(); ++l) {
    if (layers[l].name() == "loss2/conv") {
      EXPECT_EQ(layers[l - 1].name(), "inception_4d/pool_proj");
    }
  }
}

TEST(Zoo, AlexNetVariants) {
  const Model caffe = alexnet();
  EXPECT_EQ(caffe.batch(), 256u);
  const ConvShape conv2 = layer(caffe, "conv2").conv();
  EXPECT_EQ(conv2.groups, 2u);
  EXPECT_EQ(conv2.in_channels, 48u);
  EXPECT_EQ(conv2.out_h, 27u);
  EXPECT_EQ(layer(caffe, "conv1").conv().out_h, 55u);
  EXPECT_EQ(layer(caffe, "fc6").fc(), (FcShape{4096, 9216, true}));  // 256 x 6 x 6 inputs
  const Model tv = alexnetTorchvision();
  EXPECT_EQ(layer(tv, "conv2").conv().groups, 1u);
  EXPECT_EQ(layer(tv, "conv2").conv().out_channels, 192u);
  EXPECT_EQ(layer(tv, "fc6").fc(), (FcShape{4096, 9216, true}));
}

TEST(Zoo, ResNet50Shapes) {
  const Model r = resnet50();
  // conv1 + bn1, 16 blocks of 3 conv + 3 bn, 4 projections (conv + bn), fc.
  EXPECT_EQ(r.layers().size(), 2u + 16 * 6 + 4 * 2 + 1);
  EXPECT_EQ(r.fcLayers().size(), 1u);
  EXPECT_EQ(layer(r, "fc").fc(), (FcShape{1000, 2048, true}));
  const ConvShape c = layer(r, "layer2.0.conv2").conv();
  EXPECT_EQ(c.stride, 2u);  // v1.5: the 3x3 carries the stride
  EXPECT_EQ(c.out_h, 28u);
  EXPECT_FALSE(c.bias);
  EXPECT_EQ(layer(r, "layer4.2.conv3").conv().out_h, 7u);
  EXPECT_EQ(layer(r, "layer3.0.downsample.0").conv().in_channels, 512u);
  const Layer& bn = layer(r, "layer1.0.bn3");
  EXPECT_EQ(bn.kind(), LayerKind::kOther);
  ASSERT_EQ(bn.tensors().size(), 2u);
  EXPECT_EQ(bn.tensors()[0].name, "layer1.0.bn3.weight");
  EXPECT_EQ(bn.tensors()[1].floats, 256u);
}

TEST(Zoo, InceptionV3Shapes) {
  const Model v3 = inceptionV3(true);
  EXPECT_EQ(v3.input(), (InputShape{3, 299, 299}));
  EXPECT_EQ(layer(v3, "Conv2d_4a_3x3.conv").conv().out_h, 71u);
  EXPECT_EQ(layer(v3, "Mixed_5b.branch_pool.conv").conv().in_channels, 192u);
  const ConvShape factorised = layer(v3, "Mixed_6b.branch7x7_2.conv").conv();
  EXPECT_EQ(factorised.kernel_h, 1u);
  EXPECT_EQ(factorised.kernel_w, 7u);
  EXPECT_EQ(factorised.out_h, 17u);
  EXPECT_EQ(layer(v3, "Mixed_7c.branch_pool.conv").conv().in_channels, 2048u);
  EXPECT_EQ(layer(v3, "Mixed_7a.branch3x3_2.conv").conv().out_h, 8u);
  EXPECT_EQ(layer(v3, "AuxLogits.conv1.conv").conv().out_h, 1u);
  std::vector<std::string> fc;
  for (size_t l : v3.fcLayers()) fc.push_back(v3.layers()[l].name());
  EXPECT_EQ(fc, (std::vector<std::string>{"AuxLogits.fc", "fc"}));
  EXPECT_EQ(inceptionV3(false).findLayer("AuxLogits.fc"), nullptr);
}

}  // namespace
}  // namespace poseidon::model
