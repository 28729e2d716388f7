// WfbpPipeline: syncs are collected as they finish, not as they were started, so the layer nearest
// the input (reported and started last by the backward pass) can be waited for while larger
// layers' syncs still run; the iteration closes once every layer is in.
#include "trainer/wfbp/pipeline.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace poseidon::trainer {
namespace {

constexpr size_t kLayers = 3;
constexpr uint64_t kFloats = 4;

model::Model threeLayers() {
  return model::Model("three", {model::Layer::other("conv1", kFloats), model::Layer::other("conv2", kFloats),
                                model::Layer::other("fc", kFloats)});
}

// A LayerSync whose syncs finish when the test says so.
class ManualSync final : public LayerSync {
 public:
  ManualSync() : model_(threeLayers()), params_(kLayers, std::vector<float>(kFloats)), grads_(params_) {}

  size_t layerCount() const override { return kLayers; }
  const model::Layer& layer(size_t layer) const override { return model_.layers()[layer]; }
  std::span<float> params(size_t layer) override { return params_[layer]; }
  Status bindParams(size_t, std::span<float>) override { return Status::ok(); }
  uint64_t iteration() const override { return iteration_; }
  std::span<float> u(size_t) override { return {}; }
  std::span<float> v(size_t) override { return {}; }
  std::span<float> gradient(size_t layer) override { return grads_[layer]; }

  transport::RequestPtr startLayer(size_t layer, Deadline) override {
    std::lock_guard lock(mutex_);
    auto request = std::make_shared<transport::Request>("sync of layer " + std::to_string(layer));
    started_.resize(kLayers);
    started_[layer] = request;
    ++starts_;
    return request;
  }
  Result<LayerSyncResult> waitLayer(size_t, Deadline) override { return LayerSyncResult{}; }
  Status endIteration(Deadline) override {
    ++iteration_;
    return Status::ok();
  }
  Status finish(Deadline) override { return Status::ok(); }

  // Waits until `count` syncs were started.
  bool waitForStarts(size_t count) {
    for (int i = 0; i < 10000; ++i) {
      {
        std::lock_guard lock(mutex_);
        if (starts_ >= count) return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
  }
  void finishSync(size_t layer) {
    std::lock_guard lock(mutex_);
    started_.at(layer)->complete(Status::ok());
  }

 private:
  model::Model model_;
  std::vector<std::vector<float>> params_, grads_;
  std::mutex mutex_;
  std::vector<transport::RequestPtr> started_;
  size_t starts_ = 0;
  std::atomic<uint64_t> iteration_{0};
};

TEST(WfbpPipeline, TheFirstLayerIsUpdatedAsSoonAsItsSyncFinishesWhateverWasStartedBefore) {
  ManualSync sync;
  std::vector<std::vector<float>> grads(kLayers, std::vector<float>(kFloats, 1.0f));
  std::vector<LayerSource> sources(kLayers);
  for (size_t l = 0; l < kLayers; ++l) {
    sources[l].gradient = grads[l].data();
    sources[l].params = sync.params(l);
  }
  WfbpPipeline pipeline(sync, SyncUnits::unmerged(threeLayers()), sources, PipelineOptions{});
  const auto soon = [] { return Deadline::after(std::chrono::seconds(10)); };
  for (size_t l = kLayers; l-- > 0;) ASSERT_TRUE(pipeline.gradientReady(l).isOk());  // the backward pass
  ASSERT_TRUE(pipeline.endIteration().isOk());
  ASSERT_TRUE(sync.waitForStarts(kLayers));

  sync.finishSync(0);  // conv1, started last, comes back first
  EXPECT_TRUE(pipeline.waitForParameters(0, soon()).isOk());
  EXPECT_EQ(pipeline.waitForParameters(2, Deadline::after(std::chrono::milliseconds(50))).code(), StatusCode::kTimeout);
  sync.finishSync(2);
  EXPECT_TRUE(pipeline.waitForParameters(2, soon()).isOk());
  EXPECT_EQ(pipeline.drain(Deadline::after(std::chrono::milliseconds(50))).code(), StatusCode::kTimeout)
      << "the iteration closed with conv2 still running";
  sync.finishSync(1);
  EXPECT_TRUE(pipeline.waitForParameters(1, soon()).isOk());
  EXPECT_TRUE(pipeline.drain(soon()).isOk());
  EXPECT_EQ(sync.iteration(), 1u);

  // The next iteration starts afresh: its syncs are collected the same way.
  for (size_t l = kLayers; l-- > 0;) ASSERT_TRUE(pipeline.gradientReady(l).isOk());
  ASSERT_TRUE(pipeline.endIteration().isOk());
  ASSERT_TRUE(sync.waitForStarts(2 * kLayers));
  for (size_t l = 0; l < kLayers; ++l) sync.finishSync(l);
  for (size_t l = 0; l < kLayers; ++l) EXPECT_TRUE(pipeline.waitForParameters(l, soon()).isOk());
  EXPECT_TRUE(pipeline.drain(soon()).isOk());
  EXPECT_EQ(sync.iteration(), 2u);
}

}  // namespace
}  // namespace poseidon::trainer
