// kernels::sumInto against the plain scalar loop, bit for bit: every length up to a few vector
// widths past the widest register (the vector body, its remainder, and no body at all), at every
// misalignment of either range, over random bit patterns of every exponent (NaNs, infinities,
// subnormals, signed zeros), and one long range. An element summed twice, skipped, or taken from
// the wrong index shows as a bit difference.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/sum_into.h"

namespace poseidon::kernels {
namespace {

std::vector<float> randomFloats(size_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> values(count);
  for (float& value : values) value = std::bit_cast<float>(static_cast<uint32_t>(rng()));
  return values;
}

// The same sum, one element at a time, kept scalar by the volatile read.
std::vector<float> scalarSum(const float* sum, const float* addend, size_t count) {
  std::vector<float> out(sum, sum + count);
  for (size_t i = 0; i < count; ++i) {
    volatile float a = addend[i];
    out[i] = a + out[i];
  }
  return out;
}

// A NaN result matches any NaN: with two NaN operands IEEE leaves open whose payload survives,
// and a compiler may swap the operands of a commutative add.
void expectBitsEqual(const std::vector<float>& expected, const float* got, size_t count, const std::string& where) {
  for (size_t i = 0; i < count; ++i) {
    if (std::isnan(expected[i])) {
      ASSERT_TRUE(std::isnan(got[i])) << where << ": element " << i << " of " << count;
      continue;
    }
    ASSERT_EQ(std::bit_cast<uint32_t>(expected[i]), std::bit_cast<uint32_t>(got[i]))
        << where << ": element " << i << " of " << count;
  }
}

TEST(SumInto, EveryLengthAndMisalignmentGivesTheScalarBits) {
  constexpr size_t kMaxLength = 80;  // five 16-float vectors and a remainder
  constexpr size_t kMaxShift = 16;
  const std::vector<float> addends = randomFloats(kMaxLength + kMaxShift, 1);
  const std::vector<float> sums = randomFloats(kMaxLength + kMaxShift, 2);
  for (size_t length = 0; length <= kMaxLength; ++length) {
    for (size_t shift_sum = 0; shift_sum < kMaxShift; shift_sum += 3) {
      for (size_t shift_addend = 0; shift_addend < kMaxShift; shift_addend += 5) {
        std::vector<float> sum = sums;
        const float* addend = addends.data() + shift_addend;
        const std::vector<float> expected = scalarSum(sum.data() + shift_sum, addend, length);
        kernels::sumInto(sum.data() + shift_sum, addend, length);
        expectBitsEqual(expected, sum.data() + shift_sum, length,
                        "length " + std::to_string(length) + ", shifts " + std::to_string(shift_sum) + "/" +
                            std::to_string(shift_addend));
        // Nothing outside the range is touched.
        for (size_t i = 0; i < shift_sum; ++i) {
          ASSERT_EQ(std::bit_cast<uint32_t>(sum[i]), std::bit_cast<uint32_t>(sums[i])) << "before the range at " << i;
        }
        for (size_t i = shift_sum + length; i < sum.size(); ++i) {
          ASSERT_EQ(std::bit_cast<uint32_t>(sum[i]), std::bit_cast<uint32_t>(sums[i])) << "past the range at " << i;
        }
      }
    }
  }
}

TEST(SumInto, ALongRangeGivesTheScalarBits) {
  constexpr size_t kCount = (size_t{1} << 20) + 7;
  const std::vector<float> addend = randomFloats(kCount, 3);
  std::vector<float> sum = randomFloats(kCount, 4);
  const std::vector<float> expected = scalarSum(sum.data(), addend.data(), kCount);
  kernels::sumInto(sum.data(), addend.data(), kCount);
  expectBitsEqual(expected, sum.data(), kCount, "1 Mi + 7 floats");
}

}  // namespace
}  // namespace poseidon::kernels
