#include "tests/kernels/sf_case.h"

#include <cmath>
#include <random>

#include "tests/kernels/random_values.h"

namespace poseidon::kernels {

std::string shapeName(const SfShape& s) {
  return std::to_string(s.rows) + "x" + std::to_string(s.cols) + "_k" + std::to_string(s.rank) + "_p" +
         std::to_string(s.peers);
}

std::vector<SfShape> testShapes() {
  std::vector<SfShape> shapes = {{1, 1, 1, 1},   {13, 33, 3, 2},    {11, 31, 5, 1},   {7, 17, 1, 4},
                                 {25, 65, 0, 2}, {30, 300, 256, 4}, {130, 129, 20, 3}};
  std::mt19937 random(2024);
  std::uniform_int_distribution<size_t> side(1, 150), rank(1, 40), peers(1, 5);
  for (int n = 0; n < 6; ++n) shapes.push_back({side(random), side(random), rank(random), peers(random)});
  return shapes;
}

SfCase::SfCase(ElementRule rule, SfShape shape_, uint32_t seed)
    : shape(shape_), weights(rule, shape_.rows * shape_.cols, 0, seed) {
  for (size_t p = 0; p < shape.peers; ++p) {
    u.emplace_back(shape.rows * shape.rank);
    v.emplace_back(shape.cols * shape.rank);
    u_pointers.push_back(u.back().data());
    v_pointers.push_back(v.back().data());
  }
  newFactors();
}

void SfCase::newFactors() {
  for (size_t p = 0; p < shape.peers; ++p) {
    for (size_t e = 0; e < u[p].size(); ++e) u[p][e] = uniformFloat(weights.random, -1.0f, 1.0f);
    for (size_t e = 0; e < v[p].size(); ++e) v[p][e] = uniformFloat(weights.random, -1.0f, 1.0f);
  }
}

SfUpdate SfCase::update(uint64_t t) {
  SfUpdate s;
  s.params = weights.params.data();
  s.state0 = weights.state0.data();
  s.state1 = weights.state1.data();
  s.rows = shape.rows;
  s.cols = shape.cols;
  s.rank = shape.rank;
  s.u = u_pointers;
  s.v = v_pointers;
  s.step = testStep(weights.rule, static_cast<int>(shape.peers), t);
  return s;
}

std::pair<double, double> SfCase::exactGradient(size_t i, size_t j) const {
  // Products of two floats are exact in double; the double sum's own error (depth x 2^-53
  // relative) is far below any float tolerance.
  double sum = 0, sum_abs = 0;
  for (size_t p = 0; p < shape.peers; ++p) {
    for (size_t k = 0; k < shape.rank; ++k) {
      const double term = static_cast<double>(u[p][i * shape.rank + k]) * v[p][j * shape.rank + k];
      sum += term;
      sum_abs += std::abs(term);
    }
  }
  return {sum, sum_abs};
}

}  // namespace poseidon::kernels
