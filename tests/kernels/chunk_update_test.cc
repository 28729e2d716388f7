// The CPU twin of the fused chunk update: every optimizer against a double-precision reference
// over several steps, on odd sizes and unaligned buffers; bit-identity between summing n
// gradients in the kernel and handing it one gradient pre-summed in the same order (what the
// parameter server's tests rely on); the argument checks.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <tuple>

#include "kernels/chunk_update.h"
#include "tests/kernels/update_case.h"

namespace poseidon::kernels {
namespace {

constexpr ElementRule kRules[] = {ElementRule::kSgd, ElementRule::kSgdMomentum, ElementRule::kSgdNesterov,
                                  ElementRule::kAdagrad, ElementRule::kAdam};

// An output's exact value (in double, from the same float inputs) and its scale: the same formula
// over absolute values, i.e. the magnitude the float rounding errors are relative to.
struct Expected {
  double value = 0;
  double scale = 0;
};

struct ExpectedElement {
  Expected w, state0, state1;
};

// The element update in double. `sum` and `sum_abs` are the exact sum of the gradients and of
// their absolute values; w, s0, s1 the float inputs.
ExpectedElement reference(ElementRule rule, const OptimizerStep& step, double sum, double sum_abs, double w,
                          double s0, double s1) {
  const double lr = step.lr, m = step.momentum, eps = step.eps;
  const double d = sum * step.grad_scale + step.weight_decay * w;
  const double d_abs = sum_abs * step.grad_scale + step.weight_decay * std::abs(w);
  ExpectedElement e;
  switch (rule) {
    case ElementRule::kSgd: e.w = {w - lr * d, std::abs(w) + lr * d_abs}; break;
    case ElementRule::kSgdMomentum:
    case ElementRule::kSgdNesterov: {
      e.state0 = {m * s0 + d, m * std::abs(s0) + d_abs};
      if (rule == ElementRule::kSgdMomentum) {
        e.w = {w - lr * e.state0.value, std::abs(w) + lr * e.state0.scale};
      } else {
        e.w = {w - lr * (d + m * e.state0.value), std::abs(w) + lr * (d_abs + m * e.state0.scale)};
      }
      break;
    }
    case ElementRule::kAdagrad: {
      e.state0 = {s0 + d * d, s0 + d_abs * d_abs};
      const double denominator = std::sqrt(e.state0.value) + eps;
      // The accumulator's relative error reaches w through the square root and the division.
      const double relative_acc = e.state0.scale / e.state0.value;
      e.w = {w - lr * d / denominator, std::abs(w) + lr * (d_abs + std::abs(d) * relative_acc) / denominator};
      break;
    }
    case ElementRule::kAdam: {
      const double b1 = step.beta1, b2 = step.beta2, bc1 = step.bias_correction1, bc2 = step.bias_correction2;
      e.state0 = {b1 * s0 + (1 - b1) * d, b1 * std::abs(s0) + (1 - b1) * d_abs};
      e.state1 = {b2 * s1 + (1 - b2) * d * d, b2 * s1 + (1 - b2) * d_abs * d_abs};
      const double denominator = std::sqrt(e.state1.value / bc2) + eps;
      const double relative_v = e.state1.scale / e.state1.value;
      e.w = {w - lr * (e.state0.value / bc1) / denominator,
             std::abs(w) + lr * (e.state0.scale / bc1 + std::abs(e.state0.value / bc1) * relative_v) / denominator};
      break;
    }
  }
  return e;
}

// Tolerance. Every float operation rounds with relative error at most u = FLT_EPSILON / 2.
// Summing n gradients in order errs by at most (n - 1) u sum|g_k| (the recursive-summation
// bound); scaling, decay and any optimizer add a chain of at most 16 more roundings, each
// bounded by u times the output's scale (squares double the gradient's share). Allowing
// (n + 16) FLT_EPSILON scale, about twice that bound, is still ~1e-6 relative: a wrong term, a
// wrong order of a bias correction or a lost weight decay misses it by orders of magnitude.
double tolerance(size_t gradients) { return (static_cast<double>(gradients) + 16.0) * FLT_EPSILON; }

// Checks one output array against the reference; reports the first mismatch and how many.
class OutputCheck {
 public:
  OutputCheck(const char* name, double tolerance) : name_(name), tolerance_(tolerance) {}
  void check(size_t i, float got, const Expected& want) {
    const double error = std::abs(static_cast<double>(got) - want.value);
    if (error <= tolerance_ * want.scale) return;
    if (failures_++ == 0) {
      first_ = (::testing::Message() << name_ << "[" << i << "] = " << got << ", reference " << want.value
                                     << ", error " << error << " > " << tolerance_ * want.scale)
                   .GetString();
    }
  }
  ::testing::AssertionResult result() const {
    if (failures_ == 0) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << failures_ << " element(s) off; first " << first_;
  }

 private:
  const char* name_;
  double tolerance_;
  size_t failures_ = 0;
  std::string first_;
};

using ReferenceParam = std::tuple<ElementRule, int, size_t>;  // rule, gradients, elements

class ChunkUpdateReference : public ::testing::TestWithParam<ReferenceParam> {};

TEST_P(ChunkUpdateReference, MatchesDoublePrecisionOverSeveralSteps) {
  const auto [rule, n, count] = GetParam();
  UpdateCase c(rule, count, n, 1234u + static_cast<uint32_t>(n));
  const int words = stateWords(c.update(0).step.kind, c.update(0).step.momentum);
  for (uint64_t t = 0; t < 3; ++t) {
    if (t > 0) c.newGradients();
    const std::vector<float> w0(c.params.data(), c.params.data() + count);
    const std::vector<float> s0(c.state0.data(), c.state0.data() + count);
    const std::vector<float> s1(c.state1.data(), c.state1.data() + count);
    const ChunkUpdate update = c.update(t);
    chunkUpdateCpu(update);

    OutputCheck params("params", tolerance(n)), state0("state0", tolerance(n)), state1("state1", tolerance(n));
    for (size_t i = 0; i < count; ++i) {
      double sum = 0, sum_abs = 0;
      for (const UnalignedBuffer& g : c.gradients) {
        sum += g[i];
        sum_abs += std::abs(static_cast<double>(g[i]));
      }
      const ExpectedElement e = reference(rule, update.step, sum, sum_abs, w0[i], s0[i], s1[i]);
      params.check(i, c.params[i], e.w);
      if (words >= 1) state0.check(i, c.state0[i], e.state0);
      if (words >= 2) state1.check(i, c.state1[i], e.state1);
    }
    EXPECT_TRUE(params.result()) << "step " << t;
    EXPECT_TRUE(state0.result()) << "step " << t;
    EXPECT_TRUE(state1.result()) << "step " << t;
  }
}

INSTANTIATE_TEST_SUITE_P(AllOptimizers, ChunkUpdateReference,
                         ::testing::Combine(::testing::ValuesIn(kRules), ::testing::Range(1, 6),
                                            ::testing::Values<size_t>(1, 3, 17, 1000003)),
                         [](const ::testing::TestParamInfo<ReferenceParam>& test) {
                           return caseName(std::get<0>(test.param), std::get<1>(test.param)) + "_" +
                                  std::to_string(std::get<2>(test.param));
                         });

using IdentityParam = std::tuple<ElementRule, int>;  // rule, gradients

class ChunkUpdatePresummed : public ::testing::TestWithParam<IdentityParam> {};

// n gradients summed by the kernel give the same bits as one gradient summed beforehand in rank
// order by a plain loop: the server may sum as pushes arrive and still match a replica.
TEST_P(ChunkUpdatePresummed, GivesTheSameBitsAsSummingInTheKernel) {
  const auto [rule, n] = GetParam();
  constexpr size_t kCount = 100003;  // many of the generic path's blocks and a remainder
  UpdateCase in_kernel(rule, kCount, n, 99u);
  UpdateCase presummed(rule, kCount, n, 99u);
  UnalignedBuffer sum(kCount);
  const float* sum_pointer = sum.data();
  for (uint64_t t = 0; t < 3; ++t) {
    if (t > 0) {
      in_kernel.newGradients();
      presummed.newGradients();
    }
    chunkUpdateCpu(in_kernel.update(t));

    for (size_t i = 0; i < kCount; ++i) {
      float g = presummed.gradients[0][i];
      for (int k = 1; k < n; ++k) g += presummed.gradients[k][i];
      sum[i] = g;
    }
    ChunkUpdate update = presummed.update(t);  // grad_scale stays 1/n
    update.gradients = std::span<const float* const>(&sum_pointer, 1);
    chunkUpdateCpu(update);

    const size_t bytes = kCount * sizeof(float);
    ASSERT_EQ(std::memcmp(in_kernel.params.data(), presummed.params.data(), bytes), 0) << "params, step " << t;
    ASSERT_EQ(std::memcmp(in_kernel.state0.data(), presummed.state0.data(), bytes), 0) << "state0, step " << t;
    ASSERT_EQ(std::memcmp(in_kernel.state1.data(), presummed.state1.data(), bytes), 0) << "state1, step " << t;
  }
}

INSTANTIATE_TEST_SUITE_P(AllOptimizers, ChunkUpdatePresummed,
                         ::testing::Combine(::testing::ValuesIn(kRules),
                                            ::testing::Values(1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17)),
                         [](const ::testing::TestParamInfo<IdentityParam>& test) {
                           return caseName(std::get<0>(test.param), std::get<1>(test.param));
                         });

// A check of the formulas themselves, independent of the reference above: first steps whose
// results are known in closed form.
TEST(ChunkUpdateKnownValues, FirstStepsOfEachOptimizer) {
  float g = 2.0f;
  const float* grads[] = {&g};
  auto run = [&](OptimizerStep step, float w, float s0 = 0, float s1 = 0) {
    ChunkUpdate u;
    u.params = &w;
    u.state0 = &s0;
    u.state1 = &s1;
    u.count = 1;
    u.gradients = grads;
    u.step = step;
    chunkUpdateCpu(u);
    return std::tuple{w, s0, s1};
  };
  OptimizerStep sgd;
  sgd.lr = 0.25f;
  sgd.weight_decay = 0.5f;
  EXPECT_EQ(std::get<0>(run(sgd, 1.0f)), 1.0f - 0.25f * (2.0f + 0.5f));

  OptimizerStep nesterov = sgd;
  nesterov.weight_decay = 0;
  nesterov.momentum = 0.5f;
  nesterov.nesterov = true;
  const auto [nw, nv, unused] = run(nesterov, 1.0f, 1.0f);
  EXPECT_EQ(nv, 0.5f + 2.0f);
  EXPECT_EQ(nw, 1.0f - 0.25f * (2.0f + 0.5f * 2.5f));

  // Adagrad's and Adam's first steps from zero state move w by lr against the gradient's sign.
  OptimizerStep adagrad;
  adagrad.kind = OptimizerKind::kAdagrad;
  adagrad.lr = 0.125f;
  EXPECT_NEAR(std::get<0>(run(adagrad, 1.0f)), 1.0f - 0.125f, 1e-7);
  OptimizerStep adam;
  adam.kind = OptimizerKind::kAdam;
  adam.lr = 0.125f;
  adam.bias_correction1 = 1.0f - adam.beta1;
  adam.bias_correction2 = 1.0f - adam.beta2;
  EXPECT_NEAR(std::get<0>(run(adam, 1.0f)), 1.0f - 0.125f, 1e-6);
}

void expectRejected(const ChunkUpdate& update, const std::string& needle) {
  try {
    chunkUpdateCpu(update);
    ADD_FAILURE() << "accepted an update that should fail with '" << needle << "'";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(ChunkUpdateArguments, NameTheBadField) {
  UpdateCase c(ElementRule::kAdam, 8, 2, 1u);
  const ChunkUpdate good = c.update(0);
  EXPECT_NO_THROW(chunkUpdateCpu(good));

  ChunkUpdate u = good;
  u.params = nullptr;
  expectRejected(u, "params is null");
  u = good;
  u.gradients = {};
  expectRejected(u, "gradients is empty");
  const float* with_null[] = {c.gradients[0].data(), nullptr};
  u = good;
  u.gradients = with_null;
  expectRejected(u, "gradients[1] is null");
  u = good;
  u.state1 = nullptr;
  expectRejected(u, "state1 is null but adam needs 2");
  u = good;
  u.state0 = nullptr;
  u.step.kind = OptimizerKind::kSgd;
  u.step.momentum = 0.9f;
  expectRejected(u, "state0 is null but sgd with momentum 0.9 needs 1");
  u = good;
  u.step.kind = static_cast<OptimizerKind>(7);
  expectRejected(u, "step.kind 7");
  const float* overlapping[] = {c.params.data() + 3};
  u = good;
  u.gradients = overlapping;
  expectRejected(u, "params overlaps gradients[0]");
  u = good;
  u.state1 = u.state0 + 1;
  expectRejected(u, "state0 overlaps state1");
}

TEST(ChunkUpdateArguments, PlainSgdNeedsNoState) {
  UpdateCase c(ElementRule::kSgd, 5, 1, 2u);
  ChunkUpdate u = c.update(0);
  u.state0 = nullptr;
  u.state1 = nullptr;
  EXPECT_NO_THROW(chunkUpdateCpu(u));
}

}  // namespace
}  // namespace poseidon::kernels
