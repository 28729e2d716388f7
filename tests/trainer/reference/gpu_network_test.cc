// The Fashion CNN built from the GPU twins (cudaKit) against the same CNN on the CPU, end to end:
// the same parameters from the same seed, forward, backward with its hooks and factors, and the
// local optimizer's step run on the device. Skips, saying why, where no CUDA device exists.
//
// Tolerances. The sums differ in order layer after layer (gpu_layers_test.cc: ~1e-6 relative
// each), and the errors compound through 4 products and their adjoints. Worse, an error in the
// last bit can flip a ReLU (a value within 1e-7 of 0) or a max-pool decision (two values within
// 1e-7 of each other) somewhere among the ~10^5 such decisions of a batch, and a flipped one routes
// one gradient element elsewhere. So whole tensors are compared in the L2 norm, where a few
// flipped elements weigh little: 1e-4 relative for activations and gradients, ~100x the
// compounded rounding and still 10^4 below any real mistake (a wrong layout or a missing term
// changes a tensor by O(1) of its norm). The loss is a mean of smooth functions of the logits:
// 1e-5 relative.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/optimizer_config.h"
#include "tests/trainer/reference/gpu_twin.h"
#include "tests/trainer/reference/gradient_check.h"
#include "trainer/reference/cuda/layer_kit_cuda.h"
#include "trainer/reference/fashion_cnn.h"
#include "trainer/reference/local_optimizer.h"

namespace poseidon::trainer::reference::testing {
namespace {

constexpr size_t kBatch = 8;
constexpr uint64_t kSeed = 5;
constexpr double kTensorTolerance = 1e-4;

std::vector<int32_t> labels() { return {3, 7, 0, 9, 1, 1, 5, 2}; }
std::vector<float> images() { return randomValues(kBatch * 28 * 28, 41, 0.0f, 1.0f); }

class GpuFashionCnn : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    Result<Network> cpu = buildFashionCnn(kBatch, kSeed);
    Result<Network> gpu = buildFashionCnn(cudaKit(context()), kBatch, kSeed);
    ASSERT_TRUE(cpu.isOk()) << cpu.status().toString();
    ASSERT_TRUE(gpu.isOk()) << gpu.status().toString();
    cpu_ = std::make_unique<Network>(std::move(cpu).value());
    gpu_ = std::make_unique<Network>(std::move(gpu).value());
  }
  std::vector<float> gpuParams(size_t l) { return downloaded(device(), gpu_->params(l)); }
  std::vector<float> gpuGrads(size_t l) { return downloaded(device(), gpu_->grads(l)); }
  static std::vector<float> host(std::span<const float> s) { return {s.begin(), s.end()}; }

  std::unique_ptr<Network> cpu_;
  std::unique_ptr<Network> gpu_;
};

TEST_F(GpuFashionCnn, SameDescriptionAndTheSameParameterBitsFromTheSameSeed) {
  EXPECT_EQ(gpu_->describe(), cpu_->describe());
  EXPECT_EQ(&gpu_->memory(), &device());
  ASSERT_EQ(gpu_->parametricCount(), 4u);
  for (size_t l = 0; l < 4; ++l) EXPECT_EQ(gpuParams(l), host(cpu_->params(l))) << "layer " << l;
}

TEST_F(GpuFashionCnn, ForwardAndBackwardMatchTheCpuNetwork) {
  const Result<LossResult> want = cpu_->forward(images(), labels());
  const Result<LossResult> got = gpu_->forward(images(), labels());
  ASSERT_TRUE(want.isOk() && got.isOk()) << got.status().toString();
  EXPECT_NEAR(got->loss, want->loss, 1e-5 * want->loss);
  EXPECT_EQ(got->correct, want->correct);
  EXPECT_TRUE(closeInNorm(downloaded(device(), gpu_->logits()), host(cpu_->logits()), kTensorTolerance, "logits"));

  ASSERT_TRUE(cpu_->backward().isOk());
  ASSERT_TRUE(gpu_->backward().isOk());
  for (size_t l = 0; l < 4; ++l) {
    EXPECT_TRUE(
        closeInNorm(gpuGrads(l), host(cpu_->grads(l)), kTensorTolerance, "grads of layer " + std::to_string(l)));
  }
}

TEST_F(GpuFashionCnn, HooksRunInTheCpuOrderAndFactorsMatch) {
  std::vector<std::string> cpu_calls;
  std::vector<std::string> gpu_calls;
  const auto record = [](std::vector<std::string>& calls) {
    return NetworkHooks{.before_forward =
                            [&calls](size_t l) {
                              calls.push_back("forward " + std::to_string(l));
                              return Status::ok();
                            },
                        .gradient_ready =
                            [&calls](size_t l) {
                              calls.push_back("ready " + std::to_string(l));
                              return Status::ok();
                            }};
  };
  cpu_->setHooks(record(cpu_calls));
  gpu_->setHooks(record(gpu_calls));
  for (Network* net : {cpu_.get(), gpu_.get()}) {
    ASSERT_TRUE(net->setFactorsOnly(2, true).isOk());
    ASSERT_TRUE(net->forward(images(), labels()).isOk());
    ASSERT_TRUE(net->backward().isOk());
  }
  EXPECT_EQ(gpu_calls, cpu_calls);
  EXPECT_FALSE(gpu_->setFactorsOnly(0, true).isOk());  // a conv layer has no factors
  for (const size_t l : {2u, 3u}) {
    const Factors want = cpu_->factors(l).value();
    const Factors got = gpu_->factors(l).value();
    EXPECT_TRUE(closeInNorm(downloaded(device(), got.input), host(want.input), kTensorTolerance, "X"));
    EXPECT_TRUE(
        closeInNorm(downloaded(device(), got.output_gradient), host(want.output_gradient), kTensorTolerance, "dY"));
  }
}

TEST_F(GpuFashionCnn, TheLocalOptimizerStepsOnTheDevice) {
  const kernels::OptimizerConfig config = kernels::parseOptimizer("sgd:lr=0.1,momentum=0.9").value();
  LocalOptimizer cpu_opt = LocalOptimizer::create(*cpu_, config).value();
  LocalOptimizer gpu_opt = LocalOptimizer::create(*gpu_, config).value();
  for (int step = 0; step < 3; ++step) {
    ASSERT_TRUE(cpu_->forward(images(), labels()).isOk());
    ASSERT_TRUE(gpu_->forward(images(), labels()).isOk());
    ASSERT_TRUE(cpu_->backward().isOk());
    ASSERT_TRUE(gpu_->backward().isOk());
    ASSERT_TRUE(cpu_opt.step(*cpu_).isOk());
    const Status status = gpu_opt.step(*gpu_);
    ASSERT_TRUE(status.isOk()) << status.toString();
  }
  ASSERT_TRUE(context().synchronize().isOk());
  for (size_t l = 0; l < 4; ++l) {
    EXPECT_TRUE(
        closeInNorm(gpuParams(l), host(cpu_->params(l)), kTensorTolerance, "params of layer " + std::to_string(l)));
  }
}

}  // namespace
}  // namespace poseidon::trainer::reference::testing
