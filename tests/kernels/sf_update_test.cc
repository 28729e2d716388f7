// The CPU twin of the fused SF reconstruction + update:
// - against a double-precision reference for every optimizer on random and edge shapes (odd
//   sizes, sizes off every tile and block multiple, unaligned buffers, rank 0);
// - every vector path this CPU can run gives the generic path's bits;
// - against the explicit-gradient path: G built in the promised order and handed to the chunk
//   update gives the same bits; each peer's U_p V_p^T built naively as a float matrix and summed
//   by the chunk update gives the same result within tolerance;
// - the OpenBLAS method within the same tolerance; the argument checks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <tuple>

#include "kernels/chunk_update.h"
#include "kernels/sf_update.h"
#include "tests/kernels/expect_rejected.h"
#include "tests/kernels/reference.h"
#include "tests/kernels/sf_case.h"

namespace poseidon::kernels {
namespace {

struct Snapshot {
  explicit Snapshot(const UpdateCase& c)
      : params(c.params.data(), c.params.data() + c.count),
        state0(c.state0.data(), c.state0.data() + c.count),
        state1(c.state1.data(), c.state1.data() + c.count) {}
  UpdateBuffers buffers() const { return {params.data(), state0.data(), state1.data()}; }
  std::vector<float> params, state0, state1;
};

UpdateBuffers buffersOf(const UpdateCase& c) { return {c.params.data(), c.state0.data(), c.state1.data()}; }

void expectReference(const SfCase& c, const Snapshot& before, const OptimizerStep& step, const std::string& context) {
  const size_t cols = c.shape.cols;
  const auto sums = [&](size_t e) { return c.exactGradient(e / cols, e % cols); };
  // Tolerance: updateTolerance(P * rank) (tests/kernels/reference.h): every element's gradient is
  // a float sum of P * rank fused multiply-adds, each one rounding.
  expectMatchesReference(c.weights.rule, step, c.weights.count, c.shape.peers * c.shape.rank, sums, before.buffers(),
                         buffersOf(c.weights), context);
}

::testing::AssertionResult sameBits(const UpdateCase& a, const UpdateCase& b) {
  const size_t bytes = a.count * sizeof(float);
  const std::pair<const char*, std::pair<const float*, const float*>> arrays[] = {
      {"params", {a.params.data(), b.params.data()}},
      {"state0", {a.state0.data(), b.state0.data()}},
      {"state1", {a.state1.data(), b.state1.data()}}};
  for (const auto& [name, pair] : arrays) {
    if (std::memcmp(pair.first, pair.second, bytes) != 0) return ::testing::AssertionFailure() << name << " differ";
  }
  return ::testing::AssertionSuccess();
}

using ShapeParam = std::tuple<ElementRule, SfShape>;

std::string paramName(const ::testing::TestParamInfo<ShapeParam>& test) {
  return ruleName(std::get<0>(test.param)) + "_" + shapeName(std::get<1>(test.param));
}

class SfUpdateReference : public ::testing::TestWithParam<ShapeParam> {};

TEST_P(SfUpdateReference, MatchesDoublePrecisionOverTwoSteps) {
  const auto [rule, shape] = GetParam();
  SfCase c(rule, shape, 17u);
  for (uint64_t t = 0; t < 2; ++t) {
    if (t > 0) c.newFactors();
    const Snapshot before(c.weights);
    const SfUpdate update = c.update(t);
    sfUpdateCpu(update);
    expectReference(c, before, update.step, "step " + std::to_string(t));
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, SfUpdateReference,
                         ::testing::Combine(::testing::ValuesIn(kAllRules), ::testing::ValuesIn(testShapes())),
                         paramName);

class SfUpdateIsas : public ::testing::TestWithParam<ShapeParam> {};

TEST_P(SfUpdateIsas, EveryVectorPathGivesTheGenericBits) {
  const auto [rule, shape] = GetParam();
  SfCase generic(rule, shape, 5u);
  SfUpdate update = generic.update(0);
  update.isa = CpuIsa::kGeneric;
  sfUpdateCpu(update);
  for (CpuIsa isa : {CpuIsa::kAvx2, CpuIsa::kAvx512, CpuIsa::kAuto}) {
    if (!cpuHasIsa(isa)) {
      std::cout << "isa " << isaName(isa) << " not on this CPU; not compared\n";
      continue;
    }
    SfCase vector(rule, shape, 5u);
    update = vector.update(0);
    update.isa = isa;
    sfUpdateCpu(update);
    EXPECT_TRUE(sameBits(generic.weights, vector.weights)) << "isa " << isaName(isa);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, SfUpdateIsas,
                         ::testing::Combine(::testing::Values(ElementRule::kSgdMomentum, ElementRule::kAdam),
                                            ::testing::ValuesIn(testShapes())),
                         paramName);

class SfUpdateVsExplicitGradient : public ::testing::TestWithParam<ShapeParam> {};

// G in the promised order (p, then k ascending, one fma each, from +0), then the chunk update
// with G as its only gradient: what a server would do with the reconstructed gradient. Same bits.
TEST_P(SfUpdateVsExplicitGradient, GradientInTheSameOrderGivesTheSameBits) {
  const auto [rule, shape] = GetParam();
  SfCase sf(rule, shape, 23u), explicit_path(rule, shape, 23u);
  const SfUpdate update = sf.update(0);
  sfUpdateCpu(update);

  UnalignedBuffer g(shape.rows * shape.cols);
  for (size_t i = 0; i < shape.rows; ++i) {
    for (size_t j = 0; j < shape.cols; ++j) {
      float sum = 0.0f;
      for (size_t p = 0; p < shape.peers; ++p) {
        for (size_t k = 0; k < shape.rank; ++k) {
          sum = std::fma(explicit_path.u[p][i * shape.rank + k], explicit_path.v[p][j * shape.rank + k], sum);
        }
      }
      g[i * shape.cols + j] = sum;
    }
  }
  ChunkUpdate chunk = explicit_path.weights.update(0);
  const float* gradient = g.data();
  chunk.gradients = std::span<const float* const>(&gradient, 1);
  chunk.step = update.step;
  chunkUpdateCpu(chunk);
  EXPECT_TRUE(sameBits(sf.weights, explicit_path.weights));
}

// The data-parallel way: each peer's gradient U_p V_p^T as a float matrix (plain multiply and
// add, as any GEMM might), the P gradients summed by the chunk update in rank order. A different
// rounding sequence, so equal within tolerance: both are within updateTolerance(P * rank + P)
// of the exact result, so they differ by at most twice that.
TEST_P(SfUpdateVsExplicitGradient, PerPeerGradientsThroughTheChunkUpdateAgreeWithinTolerance) {
  const auto [rule, shape] = GetParam();
  SfCase sf(rule, shape, 29u), explicit_path(rule, shape, 29u);
  const Snapshot before(sf.weights);
  const SfUpdate update = sf.update(0);
  sfUpdateCpu(update);

  std::vector<UnalignedBuffer> gradients;
  std::vector<const float*> pointers;
  for (size_t p = 0; p < shape.peers; ++p) {
    gradients.emplace_back(shape.rows * shape.cols);
    for (size_t i = 0; i < shape.rows; ++i) {
      for (size_t j = 0; j < shape.cols; ++j) {
        float sum = 0.0f;
        for (size_t k = 0; k < shape.rank; ++k) {
          const float product = explicit_path.u[p][i * shape.rank + k] * explicit_path.v[p][j * shape.rank + k];
          sum += product;
        }
        gradients.back()[i * shape.cols + j] = sum;
      }
    }
  }
  for (const UnalignedBuffer& g : gradients) pointers.push_back(g.data());
  ChunkUpdate chunk = explicit_path.weights.update(0);
  chunk.gradients = pointers;
  chunk.step = update.step;
  chunkUpdateCpu(chunk);

  const double tolerance = 2 * updateTolerance(shape.peers * shape.rank + shape.peers);
  const int words = stateWords(update.step.kind, update.step.momentum);
  OutputCheck params("params", tolerance), state0("state0", tolerance), state1("state1", tolerance);
  for (size_t e = 0; e < sf.weights.count; ++e) {
    const auto [sum, sum_abs] = sf.exactGradient(e / shape.cols, e % shape.cols);
    const ExpectedElement scale =
        reference(rule, update.step, sum, sum_abs, before.params[e], before.state0[e], before.state1[e]);
    params.check(e, sf.weights.params[e], {explicit_path.weights.params[e], scale.w.scale});
    if (words >= 1) state0.check(e, sf.weights.state0[e], {explicit_path.weights.state0[e], scale.state0.scale});
    if (words >= 2) state1.check(e, sf.weights.state1[e], {explicit_path.weights.state1[e], scale.state1.scale});
  }
  EXPECT_TRUE(params.result());
  EXPECT_TRUE(state0.result());
  EXPECT_TRUE(state1.result());
}

INSTANTIATE_TEST_SUITE_P(Shapes, SfUpdateVsExplicitGradient,
                         ::testing::Combine(::testing::ValuesIn(kAllRules), ::testing::ValuesIn(testShapes())),
                         paramName);

class SfUpdateBlas : public ::testing::TestWithParam<ShapeParam> {};

// OpenBLAS sums each sgemm's k in its own order, so only the tolerance holds (the bound is the
// same for any order of P * rank terms).
TEST_P(SfUpdateBlas, MatchesDoublePrecision) {
  if (!sfBlasAvailable()) GTEST_SKIP() << "this build has no OpenBLAS (SfMethod::kBlas)";
  const auto [rule, shape] = GetParam();
  SfCase c(rule, shape, 31u);
  const Snapshot before(c.weights);
  SfUpdate update = c.update(0);
  update.method = SfMethod::kBlas;
  sfUpdateCpu(update);
  expectReference(c, before, update.step, "blas");
}

INSTANTIATE_TEST_SUITE_P(Shapes, SfUpdateBlas,
                         ::testing::Combine(::testing::Values(ElementRule::kSgdMomentum, ElementRule::kAdagrad),
                                            ::testing::ValuesIn(testShapes())),
                         paramName);

TEST(SfUpdateArguments, NameTheBadField) {
  SfCase c(ElementRule::kAdam, {5, 7, 3, 2}, 1u);
  const SfUpdate good = c.update(0);
  EXPECT_NO_THROW(sfUpdateCpu(good));

  const float* with_null[] = {c.u_pointers[0], nullptr};
  const float* overlapping[] = {c.weights.params.data() + 2, c.u_pointers[1]};
  expectEachRejected(sfUpdateCpu, good,
                     {{[](SfUpdate& u) { u.params = nullptr; }, "params is null"},
                      {[](SfUpdate& u) { u.u = {}; }, "u is empty"},
                      {[](SfUpdate& u) { u.v = u.v.first(1); }, "u has 2 factors but v has 1"},
                      {[&](SfUpdate& u) { u.u = with_null; }, "u[1] is null"},
                      {[](SfUpdate& u) { u.state1 = nullptr; }, "state1 is null but adam needs 2"},
                      {[](SfUpdate& u) { u.step.kind = static_cast<OptimizerKind>(9); }, "step.kind 9"},
                      {[](SfUpdate& u) { u.method = static_cast<SfMethod>(5); }, "method 5"},
                      {[](SfUpdate& u) { u.isa = static_cast<CpuIsa>(8); }, "isa 8"},
                      {[&](SfUpdate& u) { u.u = overlapping; }, "params overlaps u[0]"}});
  if (!sfBlasAvailable()) {
    SfUpdate u = good;
    u.method = SfMethod::kBlas;
    expectRejected(sfUpdateCpu, u, "needs a build with OpenBLAS");
  }
}

TEST(SfUpdateArguments, EmptyMatrixIsANoOp) {
  SfCase c(ElementRule::kSgd, {4, 4, 2, 1}, 2u);
  SfUpdate u = c.update(0);
  u.rows = 0;
  EXPECT_NO_THROW(sfUpdateCpu(u));
  u.rows = 4;
  u.cols = 0;
  EXPECT_NO_THROW(sfUpdateCpu(u));
}

}  // namespace
}  // namespace poseidon::kernels
