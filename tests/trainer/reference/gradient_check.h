// What the reference layers' tests share: seeded test data, a naive scalar loss, and central
// finite differences.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "trainer/reference/layer.h"

namespace poseidon::trainer::reference::testing {

// n values uniform in [lo, hi), from std::mt19937_64(seed) (the library's portable conversion).
std::vector<float> randomValues(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f);

// L = sum_i r_i y_i in double: the scalar whose gradient dL/dy is r.
double weightedSum(std::span<const float> y, std::span<const float> r);

// dL/dv_i by central differences: each v_i is moved to v_i + h and v_i - h (in float, as the layer
// sees it), loss() is evaluated at both, and the difference is divided by the step actually taken
// ((v_i + h) - (v_i - h) after rounding to float, which is not exactly 2h). v is restored.
std::vector<double> centralDifferences(std::span<float> values, float h, const std::function<double()>& loss);

// forward(x) of a layer, then the loss above with weights r.
double layerLoss(Layer& layer, std::span<const float> x, std::span<const float> r);

}  // namespace poseidon::trainer::reference::testing
