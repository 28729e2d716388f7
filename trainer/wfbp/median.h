// The median of timing samples, as the backward profile and the link probe's fit take it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace poseidon::trainer {

// The median of a non-empty list (the mean of the middle two for an even count); reorders it.
inline double median(std::vector<double>& values) {
  const auto middle = static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), values.begin() + middle, values.end());
  const double upper = values[static_cast<size_t>(middle)];
  if (values.size() % 2 == 1) return upper;
  return (*std::max_element(values.begin(), values.begin() + middle) + upper) / 2;
}

}  // namespace poseidon::trainer
