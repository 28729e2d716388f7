// The double-precision reference of one optimizer step per element, and the check of a whole
// update's outputs against it, for the kernel suites (chunk update, SF update).
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <functional>
#include <string>
#include <utility>

#include "kernels/optimizer_element.h"

namespace poseidon::kernels {

// An output's exact value (in double, from the same float inputs) and its scale: the same formula
// over absolute values, i.e. the magnitude the float rounding errors are relative to.
struct Expected {
  double value = 0;
  double scale = 0;
};

struct ExpectedElement {
  Expected w, state0, state1;
};

// The element update in double. `sum` and `sum_abs` are the exact gradient sum and the sum of
// its terms' absolute values; w, s0, s1 the float inputs.
ExpectedElement reference(ElementRule rule, const OptimizerStep& step, double sum, double sum_abs, double w, double s0,
                          double s1);

// Tolerance, relative to an output's scale, for a gradient that is a float sum of `terms` terms
// (each addition or fused multiply-add one rounding). Every float operation rounds with relative
// error at most u = FLT_EPSILON / 2. Summing n terms in order errs by at most (n - 1) u sum|t|
// (the recursive-summation bound; with FMA, n u sum|t| since the first term rounds too);
// scaling, decay and any optimizer add a chain of at most 16 more roundings, each bounded by u
// times the output's scale (squares double the gradient's share). Allowing (n + 16) FLT_EPSILON
// scale, about twice that bound, is still ~1e-6 relative for small n: a wrong term, a wrong order
// of a bias correction or a lost weight decay misses it by orders of magnitude.
double updateTolerance(size_t terms);

// Checks one output array against the reference; reports the first mismatch and how many.
class OutputCheck {
 public:
  OutputCheck(const char* name, double tolerance) : name_(name), tolerance_(tolerance) {}
  void check(size_t i, float got, const Expected& want);
  ::testing::AssertionResult result() const;

 private:
  const char* name_;
  double tolerance_;
  size_t failures_ = 0;
  std::string first_;
};

struct UpdateBuffers {
  const float* params;
  const float* state0;
  const float* state1;
};

// Exact gradient of element i: {sum, sum of absolute values of its terms}.
using ExactSums = std::function<std::pair<double, double>(size_t)>;

// EXPECTs every output of an update of `count` elements (the state words the rule uses) within
// updateTolerance(terms) of the reference applied to `before`; `context` goes into failures.
void expectMatchesReference(ElementRule rule, const OptimizerStep& step, size_t count, size_t terms,
                            const ExactSums& sums, UpdateBuffers before, UpdateBuffers after,
                            const std::string& context);

}  // namespace poseidon::kernels
