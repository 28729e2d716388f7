// Trace models: per-layer FLOPs of layers whose counts are known by hand, the split of the
// papers' single-GPU time summing to batch / rate, forward a third of it, and the bad inputs.
#include "trainer/trace/trace_model.h"

#include <gtest/gtest.h>

#include "model/zoo.h"
#include "trainer/trace/single_gpu_rate.h"

namespace poseidon::trainer::trace {
namespace {

const TraceLayer& layerNamed(const TraceModel& trace, const std::string& name) {
  for (const TraceLayer& layer : trace.layers) {
    if (layer.real.name() == name) return layer;
  }
  ADD_FAILURE() << "no layer " << name;
  return trace.layers.front();
}

TEST(TraceModel, FlopsOfKnownLayers) {
  auto trace = buildTraceModel(model::vgg19(), 35.5, 1);
  ASSERT_TRUE(trace.isOk()) << trace.status().toString();
  // VGG19's first conv: 64 filters of 3 x 3 x 3 over a 224 x 224 map, plus one bias add per output.
  EXPECT_DOUBLE_EQ(layerNamed(*trace, "conv1").forward_flops, 2.0 * 64 * 3 * 3 * 3 * 224 * 224 + 64.0 * 224 * 224);
  // fc6: 4096 x 25088 with bias.
  EXPECT_DOUBLE_EQ(layerNamed(*trace, "fc6").forward_flops, 2.0 * 4096 * 25088 + 4096);
  // The whole network: about 39.3 GFLOPs (19.6G multiply-adds) per image, as published.
  double total = 0;
  for (const TraceLayer& layer : trace->layers) total += layer.forward_flops;
  EXPECT_NEAR(total / 1e9, 39.3, 0.2);
}

TEST(TraceModel, SplitSumsToThePapersTimeByFlops) {
  for (const std::string& name : model::zooNames()) {
    auto model = model::zooModel(name);
    ASSERT_TRUE(model.isOk());
    auto rate = paperRate(*model);
    ASSERT_TRUE(rate.isOk()) << rate.status().toString();
    auto trace = buildTraceModel(*model, rate->images_per_s, 10);
    ASSERT_TRUE(trace.isOk()) << trace.status().toString();
    const double iteration = static_cast<double>(model->batch()) / rate->images_per_s;
    EXPECT_NEAR(trace->computeSeconds(), iteration, 1e-9 * iteration) << name;
    EXPECT_NEAR(trace->forwardSeconds(), iteration / 3, 1e-9 * iteration) << name;
    const double flops = model->forwardFlops();
    for (const TraceLayer& layer : trace->layers) {
      EXPECT_NEAR(layer.forward_s + layer.backward_s, iteration * layer.forward_flops / flops, 1e-12)
          << layer.real.name();
      EXPECT_DOUBLE_EQ(layer.backward_s, kBackwardOverForward * layer.forward_s) << layer.real.name();
      EXPECT_EQ(layer.scaled.name(), layer.real.name());
      EXPECT_EQ(layer.scaled.kind(), layer.real.kind());
    }
  }
}

TEST(TraceModel, PapersRates) {
  EXPECT_DOUBLE_EQ(paperRate(model::googlenet())->images_per_s, 257);
  EXPECT_DOUBLE_EQ(paperRate(model::vgg19())->images_per_s, 35.5);
  EXPECT_DOUBLE_EQ(paperRate(model::vgg19_22k())->images_per_s, 34.2);
  EXPECT_DOUBLE_EQ(paperRate(model::inceptionV3())->images_per_s, 43.2);
  EXPECT_DOUBLE_EQ(paperRate(model::alexnet())->images_per_s, 1024);
  // ResNet-50 from VGG19 by FLOPs: 4.1G multiply-adds against 19.6G, about 170 images/s.
  EXPECT_NEAR(paperRate(model::resnet50())->images_per_s, 170, 10);
  auto custom = paperRate(model::Model("custom", {model::Layer::fullyConnected("f", 2, 2, false)}));
  ASSERT_FALSE(custom.isOk());
  EXPECT_NE(custom.status().message().find("'custom'"), std::string::npos) << custom.status().toString();
}

TEST(TraceModel, BatchNormHasNoTimeOfItsOwn) {
  auto trace = buildTraceModel(model::resnet50(), 170, 1);
  ASSERT_TRUE(trace.isOk());
  size_t others = 0;
  for (const TraceLayer& layer : trace->layers) {
    if (layer.real.kind() != model::LayerKind::kOther) continue;
    ++others;
    EXPECT_EQ(layer.forward_s + layer.backward_s, 0.0) << layer.real.name();
  }
  EXPECT_GT(others, 0u);
}

TEST(TraceModel, BadInputsNameTheValue) {
  auto zero_rate = buildTraceModel(model::vgg19(), 0, 1);
  ASSERT_FALSE(zero_rate.isOk());
  EXPECT_NE(zero_rate.status().message().find("0 images/s"), std::string::npos) << zero_rate.status().toString();
  EXPECT_FALSE(buildTraceModel(model::vgg19(), 35.5, 0.5).isOk());
  auto no_flops = buildTraceModel(model::Model("bn-only", {model::Layer::other("bn", 4, 4)}), 10, 1);
  ASSERT_FALSE(no_flops.isOk());
  EXPECT_NE(no_flops.status().message().find("FLOPs"), std::string::npos) << no_flops.status().toString();
}

}  // namespace
}  // namespace poseidon::trainer::trace
