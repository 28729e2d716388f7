#include "tests/trainer/reference/gradient_check.h"

#include <random>
#include <stdexcept>

#include "trainer/reference/seeded_init.h"

namespace poseidon::trainer::reference::testing {

std::vector<float> randomValues(size_t n, uint64_t seed, float lo, float hi) {
  std::mt19937_64 rng(seed);
  std::vector<float> values(n);
  for (float& v : values) v = lo + (hi - lo) * unitFloat(rng);
  return values;
}

double weightedSum(std::span<const float> y, std::span<const float> r) {
  double sum = 0.0;
  for (size_t i = 0; i < y.size(); ++i) sum += static_cast<double>(y[i]) * static_cast<double>(r[i]);
  return sum;
}

std::vector<double> centralDifferences(std::span<float> values, float h, const std::function<double()>& loss) {
  std::vector<double> result(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const float original = values[i];
    const float up = original + h;
    const float down = original - h;
    values[i] = up;
    const double loss_up = loss();
    values[i] = down;
    const double loss_down = loss();
    values[i] = original;
    result[i] = (loss_up - loss_down) / (static_cast<double>(up) - static_cast<double>(down));
  }
  return result;
}

double layerLoss(Layer& layer, std::span<const float> x, std::span<const float> r) {
  std::vector<float> y(layer.outputSize());
  const Status status = layer.forward(x, y);
  if (!status.isOk()) throw std::runtime_error(status.toString());
  return weightedSum(y, r);
}

}  // namespace poseidon::trainer::reference::testing
