// The CPU twin of the fused chunk update: every optimizer against a double-precision reference
// over several steps, on odd sizes and unaligned buffers; bit-identity between summing n
// gradients in the kernel and handing it one gradient pre-summed in the same order (what the
// parameter server's tests rely on); the argument checks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <tuple>

#include "kernels/chunk_update.h"
#include "tests/kernels/expect_rejected.h"
#include "tests/kernels/reference.h"
#include "tests/kernels/update_case.h"

namespace poseidon::kernels {
namespace {

using ReferenceParam = std::tuple<ElementRule, int, size_t>;  // rule, gradients, elements

class ChunkUpdateReference : public ::testing::TestWithParam<ReferenceParam> {};

TEST_P(ChunkUpdateReference, MatchesDoublePrecisionOverSeveralSteps) {
  const auto [rule, n, count] = GetParam();
  UpdateCase c(rule, count, n, 1234u + static_cast<uint32_t>(n));
  for (uint64_t t = 0; t < 3; ++t) {
    if (t > 0) c.newGradients();
    const std::vector<float> w0(c.params.data(), c.params.data() + count);
    const std::vector<float> s0(c.state0.data(), c.state0.data() + count);
    const std::vector<float> s1(c.state1.data(), c.state1.data() + count);
    const ChunkUpdate update = c.update(t);
    chunkUpdateCpu(update);
    // The tolerance is updateTolerance(n) (tests/kernels/reference.h): n gradients are the terms.
    const auto sums = [&](size_t i) {
      double sum = 0, sum_abs = 0;
      for (const UnalignedBuffer& g : c.gradients) {
        sum += g[i];
        sum_abs += std::abs(static_cast<double>(g[i]));
      }
      return std::pair{sum, sum_abs};
    };
    expectMatchesReference(rule, update.step, count, static_cast<size_t>(n), sums, {w0.data(), s0.data(), s1.data()},
                           {c.params.data(), c.state0.data(), c.state1.data()}, "step " + std::to_string(t));
  }
}

INSTANTIATE_TEST_SUITE_P(AllOptimizers, ChunkUpdateReference,
                         ::testing::Combine(::testing::ValuesIn(kAllRules), ::testing::Range(1, 6),
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
                         ::testing::Combine(::testing::ValuesIn(kAllRules),
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

TEST(ChunkUpdateArguments, NameTheBadField) {
  UpdateCase c(ElementRule::kAdam, 8, 2, 1u);
  const ChunkUpdate good = c.update(0);
  EXPECT_NO_THROW(chunkUpdateCpu(good));

  const float* with_null[] = {c.gradients[0].data(), nullptr};
  const float* overlapping[] = {c.params.data() + 3};
  expectEachRejected(chunkUpdateCpu, good,
                     {{[](ChunkUpdate& u) { u.params = nullptr; }, "params is null"},
                      {[](ChunkUpdate& u) { u.gradients = {}; }, "gradients is empty"},
                      {[&](ChunkUpdate& u) { u.gradients = with_null; }, "gradients[1] is null"},
                      {[](ChunkUpdate& u) { u.state1 = nullptr; }, "state1 is null but adam needs 2"},
                      {[](ChunkUpdate& u) {
                         u.state0 = nullptr;
                         u.step.kind = OptimizerKind::kSgd;
                         u.step.momentum = 0.9f;
                       },
                       "state0 is null but sgd with momentum 0.9 needs 1"},
                      {[](ChunkUpdate& u) { u.step.kind = static_cast<OptimizerKind>(7); }, "step.kind 7"},
                      {[&](ChunkUpdate& u) { u.gradients = overlapping; }, "params overlaps gradients[0]"},
                      {[](ChunkUpdate& u) { u.state1 = u.state0 + 1; }, "state0 overlaps state1"}});
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
