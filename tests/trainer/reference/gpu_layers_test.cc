// Each GPU twin against its CPU layer on the same inputs and parameters: forward and backward.
// Skips, saying why, where no CUDA device exists.
//
// Tolerances. ReLU and max-pooling compute the same comparisons in the same order: equal bits.
// FC and conv are float sums in another order (OpenBLAS's blocking on the CPU; cuBLAS's tiles and
// cuDNN's implicit GEMM on the GPU, both in fp32 with FMA). A sum of n products rounded in any
// order is within about sqrt(n) u sum|terms| of the exact value in the typical case (u = 2^-24),
// n u sum|terms| at worst; with random-sign data the result's scale is about sqrt(n) |term|, so
// the relative error in the max norm is of the order sqrt(n) u: 1e-6 for the largest sum here
// (the conv's dW, n = K H' W' = 400). 1e-5 leaves a margin of ten for the worst element, and
// still catches any wrong index, transpose or missing term (errors of order 1).
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "tests/trainer/reference/gpu_twin.h"
#include "tests/trainer/reference/gradient_check.h"
#include "trainer/reference/conv2d.h"
#include "trainer/reference/cuda/conv2d_cuda.h"
#include "trainer/reference/cuda/fully_connected_cuda.h"
#include "trainer/reference/cuda/max_pool_cuda.h"
#include "trainer/reference/cuda/relu_cuda.h"
#include "trainer/reference/cuda/softmax_cross_entropy_cuda.h"
#include "trainer/reference/fully_connected.h"
#include "trainer/reference/max_pool.h"
#include "trainer/reference/relu.h"
#include "trainer/reference/softmax_cross_entropy.h"

namespace poseidon::trainer::reference::testing {
namespace {

constexpr double kSumTolerance = 1e-5;
constexpr size_t kBatch = 4;

class GpuLayers : public GpuTest {};

void expectTwins(const LayerRun& gpu, const LayerRun& cpu, double tolerance) {
  EXPECT_TRUE(closeInMaxNorm(gpu.y, cpu.y, tolerance, "y"));
  EXPECT_TRUE(closeInMaxNorm(gpu.dx, cpu.dx, tolerance, "dx"));
  EXPECT_TRUE(closeInMaxNorm(gpu.grads, cpu.grads, tolerance, "grads"));
}

// The CPU layer initialised from `seed`, its parameters copied to the twin, one forward and one
// backward of both on random x (from seed + 1) and dy (seed + 2); returns the twin's run.
LayerRun expectParametricTwins(ParametricLayer& cpu, ParametricLayer& gpu, uint64_t seed, bool want_dx = true) {
  EXPECT_TRUE(cpu.initialize(seed).isOk());
  copyParameters(cpu, gpu);
  const std::vector<float> x = randomValues(cpu.inputSize(), seed + 1);
  const std::vector<float> dy = randomValues(cpu.outputSize(), seed + 2);
  LayerRun run = runLayer(gpu, x, dy, want_dx);
  expectTwins(run, runLayer(cpu, x, dy, want_dx), kSumTolerance);
  EXPECT_EQ(gpu.describe(), cpu.describe());
  return run;
}

TEST_F(GpuLayers, FullyConnectedMatchesTheCpuLayer) {
  const SampleShape input{4, 3, 3};  // flattened: N = 36
  auto cpu = FullyConnected::create("fc", kBatch, input, 20).value();
  auto gpu = FullyConnectedCuda::create(context(), "fc", kBatch, input, 20).value();
  expectParametricTwins(*cpu, *gpu, 10);
}

TEST_F(GpuLayers, FullyConnectedFactorsOnlyFormsDxAndDbButNotDw) {
  auto cpu = FullyConnected::create("fc", kBatch, {12, 1, 1}, 5).value();
  auto gpu = FullyConnectedCuda::create(context(), "fc", kBatch, {12, 1, 1}, 5).value();
  cpu->setFormWeightGradient(false);
  gpu->setFormWeightGradient(false);
  const LayerRun g = expectParametricTwins(*cpu, *gpu, 20);
  // dW was never written: the zeros the gradients started with.
  for (size_t i = 0; i < gpu->weightCount(); ++i) ASSERT_EQ(g.grads[i], 0.0f) << "weight gradient " << i;
  // The saved X is a copy of the input: exact.
  EXPECT_EQ(downloaded(device(), gpu->savedInput()), randomValues(cpu->inputSize(), 21));
}

TEST_F(GpuLayers, Conv2dMatchesTheCpuLayer) {
  const Conv2dOptions options{.out_channels = 5, .kernel = 5, .pad = 2};
  auto cpu = Conv2d::create("conv", kBatch, {3, 10, 10}, options).value();
  auto gpu = Conv2dCuda::create(context(), "conv", kBatch, {3, 10, 10}, options).value();
  expectParametricTwins(*cpu, *gpu, 30);
}

TEST_F(GpuLayers, Conv2dWithoutPaddingAndWithoutDx) {
  const Conv2dOptions options{.out_channels = 3, .kernel = 3, .pad = 0};
  auto cpu = Conv2d::create("conv", kBatch, {2, 9, 7}, options).value();
  auto gpu = Conv2dCuda::create(context(), "conv", kBatch, {2, 9, 7}, options).value();
  expectParametricTwins(*cpu, *gpu, 40, /*want_dx=*/false);
}

TEST_F(GpuLayers, ReluGivesTheCpuBits) {
  const SampleShape shape{3, 5, 5};
  Relu cpu("relu", kBatch, shape);
  ReluCuda gpu(context(), "relu", kBatch, shape);
  std::vector<float> x = randomValues(cpu.inputSize(), 10);
  x[0] = 0.0f;  // the subgradient at 0 is 0 on both
  x[1] = -0.0f;
  const std::vector<float> dy = randomValues(cpu.outputSize(), 11);
  expectTwins(runLayer(gpu, x, dy), runLayer(cpu, x, dy), 0.0);
}

TEST_F(GpuLayers, MaxPoolGivesTheCpuBitsAndTiesGoToTheFirstMaximum) {
  const SampleShape input{2, 7, 9};  // odd sides: the last row and column are dropped
  auto cpu = MaxPool2d::create("pool", kBatch, input).value();
  auto gpu = MaxPool2dCuda::create(context(), "pool", kBatch, input).value();
  // Four levels only, so most windows hold a tie: the gradient must go to the first maximum.
  std::vector<float> x = randomValues(cpu->inputSize(), 12);
  for (float& v : x) v = static_cast<float>(static_cast<int>((v + 1.0f) * 2.0f));
  const std::vector<float> dy = randomValues(cpu->outputSize(), 13);
  expectTwins(runLayer(*gpu, x, dy), runLayer(*cpu, x, dy), 0.0);
}

TEST_F(GpuLayers, SoftmaxCrossEntropyMatchesTheCpuLoss) {
  constexpr size_t kClasses = 10;
  SoftmaxCrossEntropy cpu(kBatch, kClasses);
  auto gpu = SoftmaxCrossEntropyCuda::create(context(), kBatch, kClasses).value();
  std::vector<float> logits = randomValues(kBatch * kClasses, 14, -5.0f, 5.0f);
  logits[3] = logits[7] = 9.0f;  // sample 0: a tie for the top, the first counts
  const std::vector<int32_t> labels{3, 1, 9, 0};
  const FloatBlock device_logits = uploaded(device(), logits);
  const Result<LossResult> want = cpu.forward(logits, labels);
  const Result<LossResult> got = gpu->forward(device_logits.span(), labels);
  ASSERT_TRUE(want.isOk() && got.isOk()) << got.status().toString();
  // Double exp / log on both sides, summed in the same order: equal to rounding of double.
  EXPECT_NEAR(got->loss, want->loss, 1e-12 * want->loss);
  EXPECT_EQ(got->correct, want->correct);
  std::vector<float> cpu_grad(logits.size());
  const FloatBlock gpu_grad = uploaded(device(), cpu_grad);
  ASSERT_TRUE(cpu.backward(cpu_grad).isOk());
  ASSERT_TRUE(gpu->backward(gpu_grad.span()).isOk());
  // The probabilities are rounded to float from doubles that agree to ~1e-16: the same float but
  // in a rare rounding tie, so at most one float ulp apart (1.2e-7 relative).
  EXPECT_TRUE(closeInMaxNorm(downloaded(device(), gpu_grad.span()), cpu_grad, 3e-7, "dlogits"));
}

TEST_F(GpuLayers, TheTwinsCheckArgumentsAsTheCpuLayersDo) {
  auto gpu = FullyConnectedCuda::create(context(), "fc", kBatch, {6, 1, 1}, 3).value();
  const FloatBlock small = uploaded(device(), std::vector<float>(5));
  const FloatBlock y = uploaded(device(), std::vector<float>(gpu->outputSize()));
  const Status status = gpu->forward(small.span(), y.span());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("layer fc: the input has 5 floats, expected 24"), std::string::npos)
      << status.message();
  EXPECT_FALSE(FullyConnectedCuda::create(context(), "fc", 0, {6, 1, 1}, 3).isOk());
  EXPECT_FALSE(MaxPool2dCuda::create(context(), "pool", kBatch, {1, 1, 1}, 2).isOk());
  auto loss = SoftmaxCrossEntropyCuda::create(context(), 2, 10).value();
  const FloatBlock logits = uploaded(device(), std::vector<float>(20));
  const Result<LossResult> bad = loss->forward(logits.span(), std::vector<int32_t>{0, 10});
  EXPECT_NE(bad.status().message().find("sample 1 has label 10"), std::string::npos) << bad.status().message();
}

}  // namespace
}  // namespace poseidon::trainer::reference::testing
