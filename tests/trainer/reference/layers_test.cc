// Each reference layer: forward against a naive loop in double, backward against central finite
// differences of the layer itself.
//
// Tolerances. FC and conv are linear in x, in W and in b, so a central difference has no
// truncation error at any step; its only error is float rounding in the forward outputs. An
// output summing n products has error at most about n * 2^-24 * S (S: the sum of the products'
// magnitudes, here a few units), so with r in [-1, 1] the loss L = sum r y is off by at most
// 2 * sum_j |r_j| n 2^-24 S_j between the two evaluations; over the step 2h = 0.5 that is below
// 1e-3 for the shapes here (worst case; the errors are random and measure ~2e-6). A wrong index
// or a missing term is off by ~0.1 or more. ReLU and max-pool are exact in float away from their
// kinks, which the inputs avoid by more than h, so only the double sum of L rounds: 1e-6. The
// softmax loss is smooth: truncation h^2 / 6 * |L'''| ~ 1e-7 at h = 1e-3, and dlogits is a
// float: 1e-5.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "tests/trainer/reference/gradient_check.h"
#include "trainer/reference/conv2d.h"
#include "trainer/reference/fully_connected.h"
#include "trainer/reference/max_pool.h"
#include "trainer/reference/relu.h"
#include "trainer/reference/softmax_cross_entropy.h"

namespace poseidon::trainer::reference {
namespace {

using testing::centralDifferences;
using testing::layerLoss;
using testing::randomValues;

constexpr double kLinearTolerance = 1e-3;
constexpr float kLinearStep = 0.25f;

void expectNear(std::span<const float> analytic, const std::vector<double>& numeric, double tolerance,
                const char* what) {
  ASSERT_EQ(analytic.size(), numeric.size()) << what;
  double worst = 0.0;
  for (size_t i = 0; i < numeric.size(); ++i) {
    const double error = std::abs(static_cast<double>(analytic[i]) - numeric[i]);
    worst = std::max(worst, error);
    EXPECT_LE(error, tolerance) << what << "[" << i << "]: analytic " << analytic[i] << ", numeric " << numeric[i];
  }
  ::testing::Test::RecordProperty(std::string("worst_error_") + what, std::to_string(worst));
}

// |float result - double reference| within the rounding of a sum of `terms` products whose
// magnitudes add up to `magnitude`: terms * 2^-24 * magnitude, doubled for slack.
void expectWithinRounding(float value, double reference, size_t terms, double magnitude, const std::string& where) {
  const double bound = 2.0 * static_cast<double>(terms) * std::ldexp(1.0, -24) * magnitude + 1e-30;
  EXPECT_LE(std::abs(static_cast<double>(value) - reference), bound)
      << where << ": " << value << " against " << reference;
}

// Runs backward with dy = r and checks dx, and the parameter gradient when the layer has one,
// against central differences of L = sum r * forward(x).
void checkGradients(Layer& layer, ParametricLayer* parametric, std::vector<float> x, float step, double tolerance) {
  const std::vector<float> r = randomValues(layer.outputSize(), 99);
  std::vector<float> y(layer.outputSize());
  std::vector<float> dx(layer.inputSize());
  ASSERT_TRUE(layer.forward(x, y).isOk());
  ASSERT_TRUE(layer.backward(x, y, r, dx).isOk());
  const std::vector<float> grads =
      parametric ? std::vector<float>(parametric->grads().begin(), parametric->grads().end()) : std::vector<float>();
  const auto loss = [&] { return layerLoss(layer, x, r); };
  expectNear(dx, centralDifferences(x, step, loss), tolerance, "dx");
  if (parametric) expectNear(grads, centralDifferences(parametric->params(), step, loss), tolerance, "dparams");
}

// The created layer with parameters of order 1 (not its own initialisation), so every term
// matters to the checks.
template <typename T>
std::unique_ptr<T> withParams(Result<std::unique_ptr<T>> created, uint64_t seed) {
  EXPECT_TRUE(created.isOk()) << created.status().toString();
  std::unique_ptr<T> layer = std::move(created).value();
  const std::vector<float> params = randomValues(layer->parameterCount(), seed);
  std::copy(params.begin(), params.end(), layer->params().begin());
  return layer;
}

std::unique_ptr<FullyConnected> makeFc(size_t batch, SampleShape input, size_t outputs, uint64_t seed) {
  return withParams(FullyConnected::create("fc", batch, input, outputs), seed);
}

TEST(FullyConnected, ForwardIsXTimesWTransposedPlusBias) {
  const size_t k = 3, n = 7, m = 5;
  auto fc = makeFc(k, {n, 1, 1}, m, 1);
  const std::vector<float> x = randomValues(k * n, 2);
  std::vector<float> y(k * m);
  ASSERT_TRUE(fc->forward(x, y).isOk());
  const auto w = fc->weight();
  const auto b = fc->bias();
  for (size_t s = 0; s < k; ++s) {
    for (size_t o = 0; o < m; ++o) {
      double sum = b[o];
      double magnitude = std::abs(b[o]);
      for (size_t i = 0; i < n; ++i) {
        const double term = static_cast<double>(x[s * n + i]) * w[o * n + i];
        sum += term;
        magnitude += std::abs(term);
      }
      expectWithinRounding(y[s * m + o], sum, n + 1, magnitude,
                           "y[" + std::to_string(s) + "][" + std::to_string(o) + "]");
    }
  }
}

TEST(FullyConnected, BackwardMatchesFiniteDifferences) {
  // The input as 2 x 2 x 2 checks that a C x H x W input is taken flattened.
  auto fc = makeFc(3, {2, 2, 2}, 5, 3);
  checkGradients(*fc, fc.get(), randomValues(3 * 8, 4), kLinearStep, kLinearTolerance);
}

TEST(FullyConnected, FactorsOnlyGivesTheSameDxAndBiasAndLeavesTheWeightGradient) {
  const size_t k = 4, n = 6, m = 3;
  auto dense = makeFc(k, {n, 1, 1}, m, 5);
  auto factors_only = makeFc(k, {n, 1, 1}, m, 5);
  factors_only->setFormWeightGradient(false);
  const std::vector<float> x = randomValues(k * n, 6);
  const std::vector<float> dy = randomValues(k * m, 7);
  std::vector<float> y(k * m), dx_dense(k * n), dx_factors(k * n);
  const float sentinel = 12345.0f;
  std::fill(factors_only->grads().begin(), factors_only->grads().end(), sentinel);
  ASSERT_TRUE(dense->forward(x, y).isOk());
  ASSERT_TRUE(dense->backward(x, y, dy, dx_dense).isOk());
  ASSERT_TRUE(factors_only->forward(x, y).isOk());
  ASSERT_TRUE(factors_only->backward(x, y, dy, dx_factors).isOk());
  EXPECT_EQ(dx_dense, dx_factors);
  const auto bias_dense = dense->grads().subspan(m * n);
  const auto bias_factors = factors_only->grads().subspan(m * n);
  EXPECT_TRUE(std::equal(bias_dense.begin(), bias_dense.end(), bias_factors.begin()));
  for (float g : factors_only->grads().first(m * n)) ASSERT_EQ(g, sentinel);
  // The factors are X (K x N) and dY (K x M); dW = dY^T X from them, in double.
  ASSERT_TRUE(std::equal(x.begin(), x.end(), factors_only->savedInput().begin(), factors_only->savedInput().end()));
  ASSERT_TRUE(
      std::equal(dy.begin(), dy.end(), factors_only->outputGradient().begin(), factors_only->outputGradient().end()));
  for (size_t o = 0; o < m; ++o) {
    for (size_t i = 0; i < n; ++i) {
      double sum = 0.0, magnitude = 0.0;
      for (size_t s = 0; s < k; ++s) {
        const double term = static_cast<double>(dy[s * m + o]) * x[s * n + i];
        sum += term;
        magnitude += std::abs(term);
      }
      expectWithinRounding(dense->grads()[o * n + i], sum, k, magnitude, "dW");
    }
  }
}

TEST(FullyConnected, SavedInputIsTheLayersOwnCopy) {
  auto fc = makeFc(2, {3, 1, 1}, 2, 8);
  std::vector<float> x = randomValues(6, 9);
  const std::vector<float> original = x;
  std::vector<float> y(4);
  ASSERT_TRUE(fc->forward(x, y).isOk());
  std::fill(x.begin(), x.end(), 0.0f);  // the caller reuses its buffer (the next batch)
  EXPECT_TRUE(std::equal(original.begin(), original.end(), fc->savedInput().begin()));
}

TEST(FullyConnected, RefusesWrongSizesNamingThem) {
  auto fc = makeFc(2, {3, 1, 1}, 2, 10);
  std::vector<float> x(5), y(4);
  const Status status = fc->forward(x, y);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("input has 5 floats, expected 6"), std::string::npos) << status.message();
  EXPECT_FALSE(FullyConnected::create("fc", 2, {0, 1, 1}, 2).isOk());
}

struct ConvCase {
  size_t batch, channels, height, width, out_channels, kernel, pad;
};

void PrintTo(const ConvCase& c, std::ostream* out) {
  *out << "K" << c.batch << " C" << c.channels << " " << c.height << "x" << c.width << " O" << c.out_channels << " k"
       << c.kernel << " pad " << c.pad;
}

class Conv2dTest : public ::testing::TestWithParam<ConvCase> {
 protected:
  std::unique_ptr<Conv2d> make(uint64_t seed) {
    const ConvCase c = GetParam();
    return withParams(
        Conv2d::create("conv", c.batch, {c.channels, c.height, c.width}, {c.out_channels, c.kernel, c.pad}), seed);
  }
};

TEST_P(Conv2dTest, ForwardMatchesDirectConvolution) {
  const ConvCase c = GetParam();
  auto conv = make(11);
  const size_t out_h = c.height + 2 * c.pad - c.kernel + 1;
  const size_t out_w = c.width + 2 * c.pad - c.kernel + 1;
  ASSERT_EQ(conv->outputShape(), (SampleShape{c.out_channels, out_h, out_w}));
  const std::vector<float> x = randomValues(conv->inputSize(), 12);
  std::vector<float> y(conv->outputSize());
  ASSERT_TRUE(conv->forward(x, y).isOk());
  const auto w = conv->weight();
  const auto b = conv->bias();
  const auto at = [&](size_t s, size_t ch, ptrdiff_t h, ptrdiff_t v) -> double {
    if (h < 0 || v < 0 || h >= static_cast<ptrdiff_t>(c.height) || v >= static_cast<ptrdiff_t>(c.width)) return 0.0;
    return x[((s * c.channels + ch) * c.height + static_cast<size_t>(h)) * c.width + static_cast<size_t>(v)];
  };
  const auto pad = static_cast<ptrdiff_t>(c.pad);
  for (size_t s = 0; s < c.batch; ++s) {
    for (size_t o = 0; o < c.out_channels; ++o) {
      for (size_t oh = 0; oh < out_h; ++oh) {
        for (size_t ow = 0; ow < out_w; ++ow) {
          double sum = b[o], magnitude = std::abs(b[o]);
          for (size_t ch = 0; ch < c.channels; ++ch) {
            for (size_t i = 0; i < c.kernel; ++i) {
              for (size_t j = 0; j < c.kernel; ++j) {
                const double term =
                    w[((o * c.channels + ch) * c.kernel + i) * c.kernel + j] *
                    at(s, ch, static_cast<ptrdiff_t>(oh + i) - pad, static_cast<ptrdiff_t>(ow + j) - pad);
                sum += term;
                magnitude += std::abs(term);
              }
            }
          }
          const float value = y[((s * c.out_channels + o) * out_h + oh) * out_w + ow];
          expectWithinRounding(value, sum, c.channels * c.kernel * c.kernel + 1, magnitude,
                               "y at sample " + std::to_string(s) + ", channel " + std::to_string(o) + ", (" +
                                   std::to_string(oh) + ", " + std::to_string(ow) + ")");
        }
      }
    }
  }
}

TEST_P(Conv2dTest, BackwardMatchesFiniteDifferences) {
  auto conv = make(13);
  checkGradients(*conv, conv.get(), randomValues(conv->inputSize(), 14), kLinearStep, kLinearTolerance);
}

// Non-square images, several channels, padding kept, padding larger than needed, no padding.
INSTANTIATE_TEST_SUITE_P(Shapes, Conv2dTest,
                         ::testing::Values(ConvCase{2, 2, 5, 6, 3, 3, 1}, ConvCase{2, 1, 6, 5, 2, 5, 2},
                                           ConvCase{1, 3, 4, 5, 2, 3, 0}, ConvCase{3, 2, 3, 3, 2, 3, 2}));

TEST(Conv2d, RefusesAKernelWiderThanThePaddedInput) {
  const Result<std::unique_ptr<Conv2d>> conv = Conv2d::create("conv9", 1, {1, 4, 4}, {2, 7, 1});
  ASSERT_FALSE(conv.isOk());
  EXPECT_NE(conv.status().message().find("conv9"), std::string::npos) << conv.status().message();
}

TEST(Relu, BackwardMatchesFiniteDifferences) {
  // Magnitudes in [0.1, 1), both signs: every input is further than the step from the kink at 0.
  std::vector<float> x = randomValues(2 * 3 * 4 * 4, 20, 0.1f, 1.0f);
  const std::vector<float> sign = randomValues(x.size(), 21);
  for (size_t i = 0; i < x.size(); ++i) x[i] = sign[i] < 0 ? -x[i] : x[i];
  Relu relu("relu", 2, {3, 4, 4});
  checkGradients(relu, nullptr, x, 0.05f, 1e-6);
}

TEST(MaxPool2d, ForwardTakesEachWindowsMaximumAndDropsAnOddEdge) {
  auto pool = MaxPool2d::create("pool", 1, {1, 3, 5}).value();
  ASSERT_EQ(pool->outputShape(), (SampleShape{1, 1, 2}));
  const std::vector<float> x = {1,  9,  2,  3,  99,  //
                                4,  5,  8,  7,  99,  //
                                99, 99, 99, 99, 99};
  std::vector<float> y(2);
  ASSERT_TRUE(pool->forward(x, y).isOk());
  EXPECT_EQ(y, (std::vector<float>{9, 8}));
}

TEST(MaxPool2d, BackwardMatchesFiniteDifferences) {
  // Distinct values 0.05 apart: a step of 0.01 never changes which input is a window's maximum.
  auto pool = MaxPool2d::create("pool", 2, {3, 4, 6}).value();
  std::vector<float> x(pool->inputSize());
  std::iota(x.begin(), x.end(), 0.0f);
  std::shuffle(x.begin(), x.end(), std::mt19937_64(22));
  for (float& v : x) v *= 0.05f;
  checkGradients(*pool, nullptr, x, 0.01f, 1e-6);
}

TEST(SoftmaxCrossEntropy, LossAndGradientMatchFiniteDifferences) {
  const size_t k = 4, classes = 5;
  SoftmaxCrossEntropy loss(k, classes);
  std::vector<float> logits = randomValues(k * classes, 30, -2.0f, 2.0f);
  const std::vector<int32_t> labels = {0, 3, 4, 1};
  const Result<LossResult> result = loss.forward(logits, labels);
  ASSERT_TRUE(result.isOk());
  // The mean of -log softmax at the label, directly.
  double expected = 0.0;
  size_t correct = 0;
  for (size_t s = 0; s < k; ++s) {
    double sum = 0.0;
    for (size_t c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(logits[s * classes + c]));
    expected -= std::log(std::exp(static_cast<double>(logits[s * classes + static_cast<size_t>(labels[s])])) / sum);
    const auto first = logits.begin() + static_cast<ptrdiff_t>(s * classes);
    correct += static_cast<size_t>(std::max_element(first, first + static_cast<ptrdiff_t>(classes)) - first) ==
               static_cast<size_t>(labels[s]);
  }
  EXPECT_NEAR(result->loss, expected / k, 1e-12);
  EXPECT_EQ(result->correct, correct);
  std::vector<float> dlogits(k * classes);
  ASSERT_TRUE(loss.backward(dlogits).isOk());
  const auto value = [&] { return loss.forward(logits, labels).value().loss; };
  expectNear(dlogits, centralDifferences(logits, 1e-3f, value), 1e-5, "dlogits");
}

TEST(SoftmaxCrossEntropy, IsStableForHugeLogitsAndCountsCorrect) {
  SoftmaxCrossEntropy loss(2, 3);
  const std::vector<float> logits = {1000.0f, 0.0f, -1000.0f, 0.0f, 0.0f, 1e30f};
  const Result<LossResult> result = loss.forward(logits, std::vector<int32_t>{0, 1});
  ASSERT_TRUE(result.isOk());
  EXPECT_TRUE(std::isfinite(result->loss));
  EXPECT_NEAR(result->loss, 1e30 / 2, 1e24);  // sample 0 costs ~0, sample 1 ~1e30
  EXPECT_EQ(result->correct, 1u);
}

TEST(SoftmaxCrossEntropy, RefusesALabelOutOfRange) {
  SoftmaxCrossEntropy loss(2, 3);
  const Result<LossResult> result = loss.forward(std::vector<float>(6), std::vector<int32_t>{0, 3});
  ASSERT_FALSE(result.isOk());
  EXPECT_NE(result.status().message().find("sample 1 has label 3, expected 0..2"), std::string::npos)
      << result.status().message();
}

}  // namespace
}  // namespace poseidon::trainer::reference
