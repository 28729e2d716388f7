// The overlap query: which sync intervals of layer L overlap backward intervals of layers below L
// (earlier from the input), and for how long.
#include <gtest/gtest.h>

#include "trainer/timeline/overlap.h"
#include "trainer/timeline/recorder.h"

namespace poseidon::trainer::timeline {
namespace {

class OverlapQuery : public ::testing::Test {
 protected:
  OverlapQuery() {
    compute_ = *recorder_.addLane("compute");
    sync_ = *recorder_.addLane("sync-0");
    for (const char* layer : {"conv1", "conv2", "fc1", "fc2"}) recorder_.internName(layer);
  }
  void backward(const char* layer, int64_t start, int64_t end) {
    recorder_.record(compute_, recorder_.internName(layer), Category::kBackward, start, end);
  }
  void sync(const char* layer, int64_t start, int64_t end) {
    recorder_.record(sync_, recorder_.internName(layer), Category::kSync, start, end);
  }

  Recorder recorder_{RecorderOptions{}};
  LaneId compute_ = 0;
  LaneId sync_ = 0;
  const std::vector<std::string> layers_ = {"conv1", "conv2", "fc1", "fc2"};
};

TEST_F(OverlapQuery, SyncOfALayerOverlapsTheBackwardOfLayersBelowOnly) {
  // Backward runs from the output down: fc2, fc1, conv2, conv1.
  backward("fc2", 0, 10);
  backward("fc1", 10, 30);
  backward("conv2", 30, 50);
  backward("conv1", 50, 60);
  sync("fc2", 10, 40);    // overlaps fc1 (20) and conv2 (10)
  sync("fc1", 35, 45);    // overlaps conv2 only (10): its own backward ended at 30
  sync("conv1", 55, 70);  // nothing below conv1
  sync("conv2", 5, 8);    // during fc2's backward: above conv2, does not count
  recorder_.record(compute_, recorder_.internName("fc1"), Category::kForward, 0, 100);  // ignored: not backward
  Result<std::vector<SyncOverlap>> overlaps = syncOverlapsWithBackwardBelow(recorder_.snapshot(), layers_);
  ASSERT_TRUE(overlaps) << overlaps.status().toString();
  ASSERT_EQ(overlaps->size(), 4u);
  const Trace trace = recorder_.snapshot();
  const SyncOverlap& fc2 = (*overlaps)[0];
  EXPECT_EQ(trace.nameOf(fc2.sync), "fc2");
  ASSERT_EQ(fc2.backward.size(), 2u);
  EXPECT_EQ(trace.nameOf(fc2.backward[0]), "fc1");
  EXPECT_EQ(trace.nameOf(fc2.backward[1]), "conv2");
  EXPECT_EQ(fc2.overlapped_ns, 30);
  ASSERT_EQ((*overlaps)[1].backward.size(), 1u);
  EXPECT_EQ(trace.nameOf((*overlaps)[1].backward[0]), "conv2");
  EXPECT_EQ((*overlaps)[1].overlapped_ns, 10);
  EXPECT_TRUE((*overlaps)[2].backward.empty());
  EXPECT_EQ((*overlaps)[2].overlapped_ns, 0);
  EXPECT_TRUE((*overlaps)[3].backward.empty());
}

TEST_F(OverlapQuery, OverlappedTimeIsTheUnionNotTheSum) {
  // Two lanes computing backward at once (e.g. two streams) under one sync: 10..30 covered once.
  const LaneId other = *recorder_.addLane("compute-1");
  backward("conv1", 10, 25);
  recorder_.record(other, recorder_.internName("conv2"), Category::kBackward, 15, 30);
  sync("fc1", 0, 40);
  Result<std::vector<SyncOverlap>> overlaps = syncOverlapsWithBackwardBelow(recorder_.snapshot(), layers_);
  ASSERT_TRUE(overlaps) << overlaps.status().toString();
  ASSERT_EQ(overlaps->size(), 1u);
  EXPECT_EQ((*overlaps)[0].backward.size(), 2u);
  EXPECT_EQ((*overlaps)[0].overlapped_ns, 20);
}

TEST_F(OverlapQuery, UnknownLayerIsNamed) {
  sync("fc3", 0, 1);
  const Result<std::vector<SyncOverlap>> overlaps = syncOverlapsWithBackwardBelow(recorder_.snapshot(), layers_);
  ASSERT_FALSE(overlaps);
  EXPECT_NE(overlaps.status().message().find("sync interval of layer \"fc3\", not among the 4 layers given"),
            std::string::npos)
      << overlaps.status().message();
}

}  // namespace
}  // namespace poseidon::trainer::timeline
