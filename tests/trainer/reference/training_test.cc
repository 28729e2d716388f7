// Training: a small network learns a separable problem with the local optimizer (and provably
// would not without the steps), and the local step gives the bits of the library's replica step.
#include <gtest/gtest.h>

#include <bit>
#include <random>
#include <vector>

#include "kernels/optimizer_config.h"
#include "trainer/reference/conv2d.h"
#include "trainer/reference/fashion_cnn.h"
#include "trainer/reference/fully_connected.h"
#include "trainer/reference/local_optimizer.h"
#include "trainer/reference/max_pool.h"
#include "trainer/reference/relu.h"
#include "trainer/reference/seeded_init.h"
#include "trainer/sync/replica.h"

namespace poseidon::trainer::reference {
namespace {

constexpr size_t kBatch = 16;
constexpr size_t kClasses = 4;
constexpr size_t kSide = 8;

// conv 3x3 (4 channels, pad 1) + ReLU, max-pool 2, FC 64 -> 4.
Network smallNetwork(uint64_t seed) {
  std::vector<std::unique_ptr<Layer>> layers;
  layers.push_back(Conv2d::create("conv", kBatch, {1, kSide, kSide}, {4, 3, 1}).value());
  layers.push_back(std::make_unique<Relu>("relu", kBatch, layers.back()->outputShape()));
  layers.push_back(MaxPool2d::create("pool", kBatch, layers.back()->outputShape()).value());
  layers.push_back(FullyConnected::create("fc", kBatch, layers.back()->outputShape(), kClasses).value());
  Result<Network> network = Network::create("small", kBatch, {1, kSide, kSide}, std::move(layers), kClasses);
  EXPECT_TRUE(network.isOk()) << network.status().toString();
  EXPECT_TRUE(network->initialize(seed).isOk());
  return std::move(network).value();
}

// Class c: a bright 4 x 4 block in quadrant c of an 8 x 8 image of noise in [0, 0.5).
struct Batch {
  std::vector<float> images;
  std::vector<int32_t> labels;
};

Batch syntheticBatch(std::mt19937_64& rng) {
  Batch batch{std::vector<float>(kBatch * kSide * kSide), std::vector<int32_t>(kBatch)};
  for (size_t k = 0; k < kBatch; ++k) {
    const auto label = static_cast<size_t>(rng() % kClasses);
    batch.labels[k] = static_cast<int32_t>(label);
    for (size_t h = 0; h < kSide; ++h) {
      for (size_t w = 0; w < kSide; ++w) {
        const size_t quadrant = (h / 4) * 2 + w / 4;
        batch.images[(k * kSide + h) * kSide + w] = 0.5f * unitFloat(rng) + (quadrant == label ? 0.5f : 0.0f);
      }
    }
  }
  return batch;
}

struct Outcome {
  double first_loss = 0.0;
  double last_loss = 0.0;   // mean over the last 20 steps
  size_t last_correct = 0;  // of the last 20 steps' 320 samples
};

Outcome train(const std::string& optimizer, size_t steps) {
  Network network = smallNetwork(1);
  Result<LocalOptimizer> local = LocalOptimizer::create(network, kernels::parseOptimizer(optimizer).value());
  EXPECT_TRUE(local.isOk()) << local.status().toString();
  std::mt19937_64 rng(2);
  Outcome outcome;
  for (size_t s = 0; s < steps; ++s) {
    const Batch batch = syntheticBatch(rng);
    const Result<LossResult> loss = network.forward(batch.images, batch.labels);
    EXPECT_TRUE(loss.isOk());
    EXPECT_TRUE(network.backward().isOk());
    EXPECT_TRUE(local->step(network).isOk());
    if (s == 0) outcome.first_loss = loss->loss;
    if (s + 20 >= steps) {
      outcome.last_loss += loss->loss / 20;
      outcome.last_correct += loss->correct;
    }
  }
  return outcome;
}

TEST(Training, SgdWithMomentumLearnsASeparableProblem) {
  const Outcome outcome = train("sgd:lr=0.05,momentum=0.9", 300);
  ::testing::Test::RecordProperty("first_loss", std::to_string(outcome.first_loss));
  ::testing::Test::RecordProperty("last_loss", std::to_string(outcome.last_loss));
  EXPECT_GT(outcome.first_loss, 1.0);  // ~log 4 at the start
  EXPECT_LT(outcome.last_loss, 0.1 * outcome.first_loss);
  EXPECT_GE(outcome.last_correct, 20 * kBatch * 95 / 100);
}

TEST(Training, AdamLearnsIt) {
  const Outcome outcome = train("adam:lr=0.01", 200);
  EXPECT_LT(outcome.last_loss, 0.1 * outcome.first_loss);
}

TEST(Training, WithoutStepsTheSameCheckFails) {
  // The control: a learning rate of 0 leaves the loss near log 4, so the checks above do test
  // the learning.
  const Outcome outcome = train("sgd:lr=0", 60);
  EXPECT_GT(outcome.last_loss, 0.5 * outcome.first_loss);
}

TEST(LocalOptimizer, GivesTheBitsOfTheLibrarysReplicaStep) {
  // The library's worker applies the same fused update to its replica (trainer/sync/replica.h)
  // from the summed gradient; with one worker the sum is this gradient. The replica covers every
  // parameter of a convolution and an FC layer's weight (its bias is not synced yet).
  Result<Network> built = buildFashionCnn(2, 9);
  ASSERT_TRUE(built.isOk());
  Network& network = built.value();
  const kernels::OptimizerConfig config = kernels::parseOptimizer("adam:lr=0.001,wd=1e-4").value();
  Replica replica(network.describe(), config);
  for (size_t l = 0; l < network.parametricCount(); ++l) {
    std::copy_n(network.params(l).begin(), replica.params(l).size(), replica.params(l).begin());
  }
  Result<LocalOptimizer> local = LocalOptimizer::create(network, config);
  ASSERT_TRUE(local.isOk());
  std::mt19937_64 rng(3);
  for (uint64_t t = 0; t < 3; ++t) {
    std::vector<float> images(2 * 28 * 28);
    for (float& v : images) v = unitFloat(rng);
    ASSERT_TRUE(network.forward(images, std::vector<int32_t>{1, 8}).isOk());
    ASSERT_TRUE(network.backward().isOk());
    for (size_t l = 0; l < network.parametricCount(); ++l) {
      ASSERT_TRUE(replica.applyStep(l, network.grads(l).data(), t).isOk());
    }
    ASSERT_TRUE(local->step(network).isOk());
    for (size_t l = 0; l < network.parametricCount(); ++l) {
      const auto ours = network.params(l);
      const auto theirs = replica.params(l);
      for (size_t i = 0; i < theirs.size(); ++i) {
        ASSERT_EQ(std::bit_cast<uint32_t>(ours[i]), std::bit_cast<uint32_t>(theirs[i]))
            << "step " << t << ", layer " << l << ", parameter " << i;
      }
    }
  }
  EXPECT_EQ(local->steps(), 3u);
}

TEST(LocalOptimizer, RefusesFactorsOnlyLayersAndSummation) {
  Network network = smallNetwork(1);
  EXPECT_FALSE(LocalOptimizer::create(network, kernels::parseOptimizer("sum").value()).isOk());
  Result<LocalOptimizer> local = LocalOptimizer::create(network, kernels::parseOptimizer("sgd").value());
  ASSERT_TRUE(local.isOk());
  ASSERT_TRUE(network.setFactorsOnly(1, true).isOk());
  const Status status = local->step(network);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("fc is in factors-only mode"), std::string::npos) << status.message();
}

}  // namespace
}  // namespace poseidon::trainer::reference
