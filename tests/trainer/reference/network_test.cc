// The network: the CNN's shape and description, seeded and bit-reproducible initialisation and
// steps, the two hooks (order, failure, and the wait-free contract that a layer's parameters are
// not read after its gradient is reported), the factors-only mode and caller-bound memory.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <vector>

#include "tests/trainer/reference/gradient_check.h"
#include "trainer/reference/fashion_cnn.h"
#include "trainer/reference/fully_connected.h"
#include "trainer/reference/relu.h"
#include "trainer/reference/seeded_init.h"

namespace poseidon::trainer::reference {
namespace {

using testing::randomValues;

constexpr size_t kBatch = 2;

Network cnn(uint64_t seed) {
  Result<Network> network = buildFashionCnn(kBatch, seed);
  EXPECT_TRUE(network.isOk()) << network.status().toString();
  return std::move(network).value();
}

std::vector<int32_t> labels() { return {3, 7}; }

std::vector<float> images() { return randomValues(kBatch * 28 * 28, 40, 0.0f, 1.0f); }

void step(Network& network) {
  ASSERT_TRUE(network.forward(images(), labels()).isOk());
  ASSERT_TRUE(network.backward().isOk());
}

std::vector<float> allGrads(Network& network) {
  std::vector<float> grads;
  for (size_t l = 0; l < network.parametricCount(); ++l)
    grads.insert(grads.end(), network.grads(l).begin(), network.grads(l).end());
  return grads;
}

std::vector<float> allParams(Network& network) {
  std::vector<float> params;
  for (size_t l = 0; l < network.parametricCount(); ++l)
    params.insert(params.end(), network.params(l).begin(), network.params(l).end());
  return params;
}

bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::bit_cast<uint32_t>(a[i]) != std::bit_cast<uint32_t>(b[i])) return false;
  }
  return true;
}

TEST(FashionCnn, HasThePaperShapesAndDescribesItself) {
  Network network = cnn(1);
  ASSERT_EQ(network.parametricCount(), 4u);
  const std::vector<size_t> expected = {832, 51264, 1606144, 5130};
  for (size_t l = 0; l < 4; ++l) EXPECT_EQ(network.parametric(l).parameterCount(), expected[l]) << l;
  const model::Model model = network.describe();
  EXPECT_TRUE(model.validate().isOk()) << model.validate().toString();
  EXPECT_EQ(model, fashionCnnModel(kBatch));
  EXPECT_EQ(model.totalParams(), 832u + 51264 + 1606144 + 5130);
  EXPECT_EQ(model.batch(), kBatch);
  EXPECT_EQ(model.layers()[2].fc(), (model::FcShape{512, 3136, true}));
  EXPECT_EQ(model.layers()[0].conv().out_h, 28u);
  EXPECT_EQ(model.layers()[1].conv().out_h, 14u);
  for (size_t l = 0; l < 4; ++l) {
    EXPECT_EQ(model.layers()[l].params(), network.params(l).size()) << model.layers()[l].name();
  }
}

TEST(Initialisation, IsPortableAndSeeded) {
  // std::mt19937_64's 10000th output from the default seed is fixed by the standard
  // ([rand.predef]); the float is its top 24 bits times 2^-24.
  std::mt19937_64 rng;
  rng.discard(9999);
  EXPECT_EQ(unitFloat(rng), static_cast<float>(9981545732273789042ULL >> 40) / 16777216.0f);

  Network a = cnn(7), b = cnn(7), c = cnn(8);
  EXPECT_TRUE(sameBits(allParams(a), allParams(b)));
  EXPECT_FALSE(sameBits(allParams(a), allParams(c)));
  // PyTorch's bound for conv1: 1 / sqrt(25); every value inside it, and not all of one sign.
  const auto conv1 = a.params(0);
  float low = 1, high = -1;
  for (float v : conv1) {
    low = std::min(low, v);
    high = std::max(high, v);
  }
  EXPECT_GE(low, -0.2f);
  EXPECT_LT(high, 0.2f);
  EXPECT_LT(low, -0.15f);
  EXPECT_GT(high, 0.15f);
  // Each layer has its own stream: layer 1's draws do not start where layer 0's ended.
  EXPECT_NE(layerSeed(7, 0), layerSeed(7, 1));
}

TEST(Determinism, TwoNetworksFromOneSeedGiveTheSameBits) {
  Network a = cnn(5), b = cnn(5);
  step(a);
  step(b);
  EXPECT_TRUE(sameBits(allGrads(a), allGrads(b)));
  const std::vector<float> logits_a(a.logits().begin(), a.logits().end());
  const std::vector<float> logits_b(b.logits().begin(), b.logits().end());
  EXPECT_TRUE(sameBits(logits_a, logits_b));
  // And a second step on the same network repeats the first exactly (no state leaks across).
  const std::vector<float> first = allGrads(a);
  step(a);
  EXPECT_TRUE(sameBits(first, allGrads(a)));
}

TEST(Hooks, RunInForwardOrderThenBackwardOrder) {
  Network network = cnn(1);
  std::vector<std::string> calls;
  network.setHooks({.before_forward =
                        [&](size_t l) {
                          calls.push_back("wait " + std::to_string(l));
                          return Status::ok();
                        },
                    .gradient_ready =
                        [&](size_t l) {
                          calls.push_back("ready " + std::to_string(l));
                          return Status::ok();
                        }});
  step(network);
  const std::vector<std::string> expected = {"wait 0",  "wait 1",  "wait 2",  "wait 3",
                                             "ready 3", "ready 2", "ready 1", "ready 0"};
  EXPECT_EQ(calls, expected);
}

TEST(Hooks, AFailingHookStopsThePassWithItsStatus) {
  Network network = cnn(1);
  network.setHooks({.before_forward = [](size_t l) {
    return l == 2 ? makeStatus(StatusCode::kTimeout, "layer {} never arrived", l) : Status::ok();
  }});
  const Result<LossResult> result = network.forward(images(), labels());
  ASSERT_FALSE(result.isOk());
  EXPECT_EQ(result.status().code(), StatusCode::kTimeout);
  EXPECT_EQ(network.backward().code(), StatusCode::kInvalidArgument);  // no successful forward
}

TEST(Hooks, ALayersGradientIsFinalAndItsParametersUnusedOnceReported) {
  // Wait-free backprop starts layer l's sync, which rewrites its parameters, as soon as
  // gradient_ready(l) returns. So at that moment the layer's gradient must be complete, and the
  // rest of backward must not read the layer's parameters: scribbling over them must change none
  // of the other layers' gradients.
  Network reference = cnn(3), scribbled = cnn(3);
  step(reference);
  const std::vector<float> expected = allGrads(reference);
  std::vector<std::vector<float>> reported(4);
  scribbled.setHooks({.gradient_ready = [&](size_t l) {
    reported[l].assign(scribbled.grads(l).begin(), scribbled.grads(l).end());
    std::fill(scribbled.params(l).begin(), scribbled.params(l).end(), std::nanf(""));
    return Status::ok();
  }});
  step(scribbled);
  EXPECT_TRUE(sameBits(allGrads(scribbled), expected));
  for (size_t l = 0; l < 4; ++l) {
    EXPECT_TRUE(sameBits(reported[l], std::vector<float>(reference.grads(l).begin(), reference.grads(l).end()))) << l;
  }
}

TEST(FactorsOnly, GivesTheSameBitsEverywhereButTheWeightGradientWhichTheFactorsForm) {
  Network dense = cnn(4), factored = cnn(4);
  ASSERT_TRUE(factored.setFactorsOnly(2, true).isOk());
  ASSERT_TRUE(factored.setFactorsOnly(3, true).isOk());
  EXPECT_EQ(factored.setFactorsOnly(0, true).code(), StatusCode::kInvalidArgument);  // a convolution
  EXPECT_TRUE(factored.factorsOnly(2));
  EXPECT_FALSE(dense.factorsOnly(2));
  // The factors are where they will be: the library registers them before the first step.
  const float* input_before = factored.factors(2)->input.data();
  const float* gradient_before = factored.factors(2)->output_gradient.data();
  step(dense);
  step(factored);
  EXPECT_EQ(factored.factors(2)->input.data(), input_before);
  EXPECT_EQ(factored.factors(2)->output_gradient.data(), gradient_before);
  for (size_t l : {0, 1}) {
    EXPECT_TRUE(sameBits(std::vector<float>(dense.grads(l).begin(), dense.grads(l).end()),
                         std::vector<float>(factored.grads(l).begin(), factored.grads(l).end())))
        << l;
  }
  for (size_t l : {2, 3}) {
    const auto& layer = dense.parametric(l);
    const size_t weights = layer.weightCount();
    const auto bias_dense = dense.grads(l).subspan(weights);
    const auto bias_factored = factored.grads(l).subspan(weights);
    EXPECT_TRUE(std::equal(bias_dense.begin(), bias_dense.end(), bias_factored.begin())) << l;
    const Result<Factors> factors = factored.factors(l);
    ASSERT_TRUE(factors.isOk());
    const size_t m = layer.biasCount(), n = weights / m;
    ASSERT_EQ(factors->input.size(), kBatch * n);
    ASSERT_EQ(factors->output_gradient.size(), kBatch * m);
    // dW = U V^T = dY^T X: K = 2 products per entry, formed in double, against sgemm's floats.
    for (size_t o = 0; o < m; ++o) {
      for (size_t i = 0; i < n; ++i) {
        double sum = 0.0, magnitude = 0.0;
        for (size_t k = 0; k < kBatch; ++k) {
          const double term = static_cast<double>(factors->output_gradient[k * m + o]) * factors->input[k * n + i];
          sum += term;
          magnitude += std::abs(term);
        }
        ASSERT_LE(std::abs(dense.grads(l)[o * n + i] - sum), 4 * std::ldexp(magnitude, -24) + 1e-30) << l;
      }
    }
  }
  EXPECT_EQ(factored.factors(1).status().code(), StatusCode::kInvalidArgument);  // a convolution
}

TEST(Bind, MovesParametersAndGradientsIntoTheCallersMemory) {
  Network owned = cnn(6), bound = cnn(6);
  std::vector<std::vector<float>> params(4), grads(4);
  for (size_t l = 0; l < 4; ++l) {
    params[l].assign(bound.params(l).size(), 0.0f);
    grads[l].assign(bound.params(l).size(), 0.0f);
    ASSERT_TRUE(bound.bind(l, params[l], grads[l]).isOk());
    EXPECT_EQ(bound.params(l).data(), params[l].data());
  }
  EXPECT_TRUE(sameBits(allParams(owned), allParams(bound)));  // the values came along
  step(owned);
  step(bound);
  for (size_t l = 0; l < 4; ++l) {
    EXPECT_TRUE(sameBits(grads[l], std::vector<float>(owned.grads(l).begin(), owned.grads(l).end()))) << l;
  }
  std::vector<float> wrong(3), overlap(2 * 832);
  EXPECT_EQ(bound.bind(0, wrong, grads[0]).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bound.bind(0, std::span<float>(overlap).first(832), std::span<float>(overlap).subspan(1, 832)).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(bound.bind(4, params[0], grads[0]).code(), StatusCode::kInvalidArgument);
}

TEST(Network, RefusesLayersThatDoNotChainNamingThem) {
  std::vector<std::unique_ptr<Layer>> layers;
  layers.push_back(FullyConnected::create("fc1", 2, {4, 1, 1}, 3).value());
  layers.push_back(std::make_unique<Relu>("relu1", 2, SampleShape{5, 1, 1}));
  const Result<Network> network = Network::create("broken", 2, {4, 1, 1}, std::move(layers), 3);
  ASSERT_FALSE(network.isOk());
  EXPECT_NE(network.status().message().find("relu1"), std::string::npos) << network.status().message();
}

TEST(Network, RefusesInputAndLabelsOfTheWrongSize) {
  Network network = cnn(1);
  EXPECT_EQ(network.forward(std::vector<float>(10), labels()).status().code(), StatusCode::kInvalidArgument);
  const Result<LossResult> bad_label = network.forward(images(), std::vector<int32_t>{0, 10});
  ASSERT_FALSE(bad_label.isOk());
  EXPECT_NE(bad_label.status().message().find("label 10"), std::string::npos) << bad_label.status().message();
}

}  // namespace
}  // namespace poseidon::trainer::reference
