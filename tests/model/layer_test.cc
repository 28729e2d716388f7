// Layers and models: their tensors, FLOPs and the validation messages.
#include <gtest/gtest.h>

#include "model/model.h"

namespace poseidon::model {
namespace {

std::string message(const Status& status) { return status.isOk() ? "ok" : status.message(); }

TEST(Layer, FullyConnectedTensorsAreWeightThenBias) {
  const Layer fc = Layer::fullyConnected("fc7", 4096, 9216, true);
  EXPECT_EQ(fc.kind(), LayerKind::kFullyConnected);
  ASSERT_EQ(fc.tensors().size(), 2u);
  EXPECT_EQ(fc.tensors()[0], (Tensor{"fc7.weight", 4096u * 9216, {4096, 9216}}));
  EXPECT_EQ(fc.tensors()[1], (Tensor{"fc7.bias", 4096, {4096}}));
  EXPECT_EQ(fc.params(), 4096u * 9216 + 4096);
  EXPECT_EQ(fc.denseFloats(), 4096u * 9216);  // the papers price the weight only
  EXPECT_EQ(Layer::fullyConnected("a", 3, 4, false).tensors().size(), 1u);
  EXPECT_EQ(fc.forwardFlops(), 2.0 * 4096 * 9216 + 4096);
}

TEST(Layer, ConvolutionFlopsFollowFromTheOutputMap) {
  // VGG19's conv1_1: 64 filters of 3 x 3 x 3 over a 224 x 224 map.
  ConvShape shape{.out_channels = 64, .in_channels = 3, .kernel_h = 3, .kernel_w = 3, .out_h = 224, .out_w = 224};
  const Layer plain = Layer::convolution("c", shape);
  EXPECT_EQ(plain.forwardFlops(), 2.0 * 64 * 224 * 224 * 27);  // 173,408,256
  EXPECT_EQ(plain.forwardFlops(), 173'408'256.0);
  shape.bias = true;
  const Layer biased = Layer::convolution("c", shape);
  EXPECT_EQ(biased.forwardFlops(), 173'408'256.0 + 64 * 224 * 224);
  EXPECT_EQ(biased.tensors()[0].shape, (std::vector<uint64_t>{64, 3, 3, 3}));
  EXPECT_EQ(biased.params(), 64u * 27 + 64);
  // Groups: each filter sees in_channels of the input, so FLOPs and weights shrink alike.
  ConvShape grouped{
      .out_channels = 256, .in_channels = 48, .kernel_h = 5, .kernel_w = 5, .groups = 2, .out_h = 27, .out_w = 27};
  EXPECT_EQ(Layer::convolution("g", grouped).forwardFlops(), 2.0 * 256 * 48 * 25 * 27 * 27);
  EXPECT_EQ(Layer::other("bn", 64, 64).forwardFlops(), 0.0);
}

TEST(Layer, ValidationNamesTheLayerAndTheValue) {
  EXPECT_EQ(message(Layer::fullyConnected("", 1, 1, false).validate()), "layer has an empty name");
  EXPECT_EQ(message(Layer::fullyConnected("a,b", 1, 1, false).validate()),
            "layer 'a,b' has ',' in its name, expected none of , ; = : + or white space");
  EXPECT_EQ(message(Layer::fullyConnected("fc", 0, 5, true).validate()),
            "fc layer 'fc' is 0 x 5, expected M >= 1 and N >= 1");
  EXPECT_EQ(message(Layer::fullyConnected("fc", 99999999999, 99999999999, false).validate()),
            "fc layer 'fc': tensor 'fc.weight' of 99999999999 x 99999999999 exceeds 2^53 floats");
  EXPECT_EQ(message(Layer::other("big", {{"a", uint64_t{1} << 53}, {"b", 1}}).validate()),
            "other layer 'big' has 9007199254740993 floats in all, exceeds 2^53");
  EXPECT_EQ(message(Layer::other("x", 0).validate()), "layer 'x': tensor 'x' has 0 floats, expected >= 1");
  EXPECT_EQ(message(Layer::other("x", std::vector<NamedCount>{}).validate()), "layer 'x' has no tensors");
  EXPECT_EQ(message(Layer::other("x", {{"x w", 3}}).validate()),
            "tensor 'x w' has ' ' in its name, expected none of , ; = : + or white space");
  ConvShape shape{
      .out_channels = 3, .in_channels = 1, .kernel_h = 3, .kernel_w = 3, .groups = 2, .out_h = 1, .out_w = 1};
  EXPECT_EQ(message(Layer::convolution("c", shape).validate()),
            "conv layer 'c' has 3 output channels in 2 groups, expected a multiple of the groups");
  shape.groups = 1;
  shape.out_w = 0;
  EXPECT_EQ(message(Layer::convolution("c", shape).validate()), "conv layer 'c' has output width 0, expected >= 1");
  shape.out_w = 1;
  EXPECT_EQ(message(Layer::convolution("c", shape).validate()), "ok");
}

TEST(Model, TensorsInModelOrderAndLayerStarts) {
  const Model model("m",
                    {Layer::other("bn", 4, 4), Layer::fullyConnected("fc1", 3, 2, true),
                     Layer::fullyConnected("fc2", 5, 3, false), Layer::other("t", 7)},
                    16, InputShape{1, 2, 3});
  std::vector<std::string> names;
  for (const Tensor& tensor : model.tensors()) names.push_back(tensor.name);
  EXPECT_EQ(names, (std::vector<std::string>{"bn.weight", "bn.bias", "fc1.weight", "fc1.bias", "fc2.weight", "t"}));
  EXPECT_EQ(model.layerStarts(), (std::vector<size_t>{0, 2, 4, 5}));
  EXPECT_EQ(model.fcLayers(), (std::vector<size_t>{1, 2}));
  EXPECT_EQ(model.totalParams(), 8u + 9 + 15 + 7);
  EXPECT_EQ(model.batch(), 16u);
  EXPECT_EQ(model.findLayer("fc2")->fc().rows, 5u);
  EXPECT_EQ(model.findLayer("fc3"), nullptr);
  EXPECT_TRUE(model.validate().isOk());
}

TEST(Model, ValidationNamesTheModelAndTheLayer) {
  const Layer fc = Layer::fullyConnected("fc", 2, 2, true);
  EXPECT_EQ(message(Model("", {fc}).validate()), "a model has an empty name");
  EXPECT_EQ(message(Model("m", {}).validate()), "model 'm' has no layers");
  EXPECT_EQ(message(Model("m", {fc}, 0).validate()), "model 'm' has batch K = 0, expected >= 1");
  EXPECT_EQ(message(Model("m", {fc, fc}).validate()), "model 'm': layer 'fc' is named twice (layers 0 and 1)");
  EXPECT_EQ(message(Model("m", {fc, Layer::other("x", {{"fc.bias", 2}})}).validate()),
            "model 'm': tensor 'fc.bias' of layer 'x' is named as one of layer 'fc'");
  EXPECT_EQ(message(Model("m", {fc, Layer::fullyConnected("z", 0, 1, false)}).validate()),
            "model 'm': fc layer 'z' is 0 x 1, expected M >= 1 and N >= 1");
  const Layer half = Layer::other("a", uint64_t{1} << 52);
  EXPECT_EQ(message(Model("m", {half, Layer::other("b", uint64_t{1} << 52), Layer::other("c", 1)}).validate()),
            "model 'm': 9007199254740993 floats up to layer 'c' exceed 2^53");
}

}  // namespace
}  // namespace poseidon::model
