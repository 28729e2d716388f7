// The link scale: s from the real rate and the cap, and layers shrunk by s with the ratios the
// schemes are priced by kept (PS's M*N and SFB's K(M+N) both by s for an FC layer).
#include "trainer/trace/link_scale.h"

#include <gtest/gtest.h>

#include "model/zoo.h"
#include "trainer/trace/trace_model.h"

namespace poseidon::trainer::trace {
namespace {

TEST(LinkScale, FactorIsRealOverCapAtLeastOne) {
  auto ten = chooseLinkScale(10e9, 100e6);
  ASSERT_TRUE(ten.isOk());
  EXPECT_DOUBLE_EQ(ten->factor, 100);
  EXPECT_DOUBLE_EQ(ten->scaled_bps, 100e6);
  auto under = chooseLinkScale(50e6, 100e6);  // already under the cap: nothing to scale
  ASSERT_TRUE(under.isOk());
  EXPECT_DOUBLE_EQ(under->factor, 1);
  EXPECT_DOUBLE_EQ(under->scaled_bps, 50e6);
  auto bad = chooseLinkScale(0, 100e6);
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("link rate 0"), std::string::npos) << bad.status().toString();
  EXPECT_FALSE(chooseLinkScale(10e9, -1).isOk());
}

TEST(LinkScale, FcKeepsBothSchemesRatios) {
  const model::Layer fc6 = model::Layer::fullyConnected("fc6", 4096, 25088, true);
  auto scaled = scaleLayer(fc6, 100);
  ASSERT_TRUE(scaled.isOk());
  EXPECT_TRUE(scaled->isFullyConnected());
  EXPECT_EQ(scaled->fc().rows, 410u);  // 4096 / 10, rounded
  EXPECT_EQ(scaled->fc().cols, 2509u);
  EXPECT_TRUE(scaled->fc().bias);
  const uint64_t k = scaledBatch(32, 100);
  EXPECT_EQ(k, 3u);
  // M*N by s, K(M+N) by s, to rounding.
  EXPECT_NEAR(static_cast<double>(scaled->fc().rows * scaled->fc().cols) / (4096.0 * 25088 / 100), 1, 0.01);
  EXPECT_NEAR(static_cast<double>(k * (scaled->fc().rows + scaled->fc().cols)) / (32.0 * (4096 + 25088) / 100), 1, 0.1);
}

TEST(LinkScale, ConvAndOtherByParameterCountAtLeastOne) {
  const model::Layer conv = model::Layer::convolution(
      "c",
      {.out_channels = 64, .in_channels = 3, .kernel_h = 3, .kernel_w = 3, .out_h = 224, .out_w = 224, .bias = true});
  auto scaled = scaleLayer(conv, 10);
  ASSERT_TRUE(scaled.isOk());
  EXPECT_TRUE(scaled->isConvolution());
  EXPECT_EQ(scaled->params(), 179u);  // 1792 / 10
  auto tiny = scaleLayer(model::Layer::other("bn", 4, 4), 1000);
  ASSERT_TRUE(tiny.isOk());
  EXPECT_EQ(tiny->params(), 1u);  // never 0: the layer still syncs
  EXPECT_FALSE(scaleLayer(conv, 0.5).isOk());
}

TEST(LinkScale, ModelBytesShrinkByTheFactor) {
  auto trace = buildTraceModel(model::vgg19(), 35.5, 100);
  ASSERT_TRUE(trace.isOk());
  EXPECT_NEAR(static_cast<double>(trace->scaledParams()) * 100 / static_cast<double>(trace->realParams()), 1, 0.01);
  const model::Model scaled = trace->scaledModel();
  EXPECT_TRUE(scaled.validate().isOk()) << scaled.validate().toString();
  EXPECT_EQ(scaled.batch(), 3u);
}

TEST(LinkScale, ChunkShrinksWithAFloor) {
  EXPECT_EQ(scaledChunkBytes(2 << 20, 1), uint64_t{2} << 20);
  EXPECT_EQ(scaledChunkBytes(2 << 20, 100), 20968u);  // 2 MiB / 100, down to a multiple of 4
  EXPECT_EQ(scaledChunkBytes(2 << 20, 1e6), 4096u);
}

}  // namespace
}  // namespace poseidon::trainer::trace
