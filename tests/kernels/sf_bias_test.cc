// The FC bias gradient from sufficient factors: U's row sums, summed over peers in rank order.
// The order is the contract (every replica, and a PS summing the workers' own row sums, must get
// the same bits), so the test checks it against the loop it names, bit for bit, on values whose
// sums round differently in another order.
#include "kernels/sf_bias.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace poseidon::kernels {
namespace {

TEST(SfBias, RowSumsInRankThenBatchOrder) {
  const size_t rows = 5, rank = 7, peers = 3;
  std::vector<std::vector<float>> u(peers, std::vector<float>(rows * rank));
  for (size_t p = 0; p < peers; ++p) {
    for (size_t i = 0; i < rows * rank; ++i) {
      // Mixed magnitudes and signs: 1e8-scale terms make order visible in the rounding.
      const float big = (i % 3 == 0) ? 1e8f : 1.0f;
      u[p][i] = big * static_cast<float>((static_cast<int>(i * 7 + p * 13) % 11) - 5) / 3.0f;
    }
  }
  std::vector<const float*> pointers;
  for (const auto& up : u) pointers.push_back(up.data());
  std::vector<float> out(rows);
  sfBiasGradient(rows, rank, pointers, out.data());

  for (size_t i = 0; i < rows; ++i) {
    float expected = 0.0f;
    for (size_t p = 0; p < peers; ++p) {
      float r = 0.0f;
      for (size_t k = 0; k < rank; ++k) r += u[p][i * rank + k];
      expected += r;
    }
    EXPECT_EQ(std::memcmp(&out[i], &expected, sizeof(float)), 0) << "row " << i;
  }
  // And one peer's row sums added by a summing server in rank order give the same bits.
  std::vector<float> own(rows), summed(rows, 0.0f);
  for (size_t p = 0; p < peers; ++p) {
    sfBiasGradient(rows, rank, std::span<const float* const>(&pointers[p], 1), own.data());
    for (size_t i = 0; i < rows; ++i) summed[i] += own[i];
  }
  EXPECT_EQ(std::memcmp(summed.data(), out.data(), rows * sizeof(float)), 0);
}

TEST(SfBias, ZeroRankGivesZero) {
  std::vector<float> out(3, 7.0f);
  const float* none = nullptr;
  sfBiasGradient(3, 0, std::span<const float* const>(&none, 1), out.data());
  for (float v : out) EXPECT_EQ(v, 0.0f);
}

}  // namespace
}  // namespace poseidon::kernels
