// The 16-bit conversions (kernels/convert_element.h) against a reference computed from the
// formats' definitions in double: every 16-bit pattern both ways, the midpoints between every
// pair of neighbours (the ties), and a million random float patterns over all exponents. The
// tolerance is zero: rounding to nearest even has one right answer (NaNs: any quiet NaN of the
// same sign). Where the CPU has F16C, binary16 must give the hardware conversions' exact bits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/convert_element.h"
#include "kernels/cpu_isa.h"
#include "tests/kernels/float16_reference.h"
#include "tests/kernels/random_values.h"

namespace poseidon::kernels {
namespace {

// Floats that exercise every path: random bit patterns (all exponents, NaNs, subnormals) and the
// edges of binary16 and bfloat16.
std::vector<float> testFloats() {
  std::vector<float> values = {0.0f,
                               -0.0f,
                               1.0f,
                               -1.0f,
                               65504.0f,
                               65519.996f,
                               65520.0f,
                               -65520.0f,
                               65536.0f,
                               std::ldexp(1.0f, -14),
                               std::ldexp(1.0f, -24),
                               std::ldexp(1.0f, -25),
                               std::ldexp(3.0f, -26),
                               std::ldexp(1.0f, -26),
                               std::numeric_limits<float>::max(),
                               std::numeric_limits<float>::infinity(),
                               -std::numeric_limits<float>::infinity(),
                               std::numeric_limits<float>::quiet_NaN(),
                               -std::numeric_limits<float>::quiet_NaN(),
                               std::numeric_limits<float>::denorm_min(),
                               std::numeric_limits<float>::min()};
  std::mt19937 random(7);
  for (int n = 0; n < 1000000; ++n) values.push_back(bitsFloat(static_cast<uint32_t>(random())));
  // Values near binary16's range, where most of its rounding cases are.
  std::uniform_int_distribution<int> exponent(-30, 17);
  for (int n = 0; n < 200000; ++n) values.push_back(std::ldexp(uniformFloat(random, 1.0f, 2.0f), exponent(random)));
  return values;
}

// One 16-bit format: the kernels' conversions and the reference's.
struct Format {
  const char* name;
  PackedType type;
  uint16_t (*narrow)(float);
  float (*widen)(uint16_t);
  uint16_t (*reference_narrow)(double);
  double (*reference_widen)(uint16_t);
  uint16_t largest_finite;
};

const Format kFormats[] = {
    {"half", PackedType::kF16, floatToHalfBits, halfBitsToFloat, referenceToHalf, referenceFromHalf, 0x7bff},
    {"bf16", PackedType::kBf16, floatToBf16Bits, bf16BitsToFloat, referenceToBf16, referenceFromBf16, 0x7f7f},
};

void PrintTo(const Format& format, std::ostream* out) { *out << format.name; }

class Conversion : public ::testing::TestWithParam<Format> {};

TEST_P(Conversion, EveryPatternWidensToItsValue) {
  const Format& f = GetParam();
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float got = f.widen(static_cast<uint16_t>(h));
    const double want = f.reference_widen(static_cast<uint16_t>(h));
    ASSERT_TRUE(sameValueBits(PackedType::kF32, floatBits(got), floatBits(static_cast<float>(want)))) << std::hex << h;
  }
}

TEST_P(Conversion, EveryPatternRoundTrips) {
  const Format& f = GetParam();
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const uint16_t back = f.narrow(f.widen(static_cast<uint16_t>(h)));
    ASSERT_TRUE(sameValueBits(f.type, back, h)) << std::hex << h << " came back as " << back;
  }
}

TEST_P(Conversion, TiesBetweenNeighboursGoToEven) {
  const Format& f = GetParam();
  for (uint32_t h = 0; h < f.largest_finite; ++h) {  // every finite non-negative value and its finite successor
    const double below = f.reference_widen(static_cast<uint16_t>(h));
    const double mid = (below + f.reference_widen(static_cast<uint16_t>(h + 1))) / 2;
    const auto x = static_cast<float>(mid);  // exact: a midpoint has at most 12 significant bits
    ASSERT_EQ(f.narrow(x), f.reference_narrow(mid)) << std::hex << h;
    ASSERT_EQ(f.narrow(x) & 1u, 0u) << std::hex << h;
    ASSERT_EQ(f.narrow(-x), f.reference_narrow(-mid)) << std::hex << h;
  }
}

TEST_P(Conversion, NarrowsLikeTheReference) {
  const Format& f = GetParam();
  for (float x : testFloats()) {
    const uint16_t got = f.narrow(x), want = f.reference_narrow(x);
    ASSERT_TRUE(sameValueBits(f.type, got, want))
        << x << " (0x" << std::hex << floatBits(x) << "): got 0x" << got << ", want 0x" << want;
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, Conversion, ::testing::ValuesIn(kFormats),
                         [](const ::testing::TestParamInfo<Format>& test) { return std::string(test.param.name); });

#if defined(__x86_64__)
// Through the vector form: clang's _cvtss_sh is a macro with a C compound literal (-Wpedantic).
[[gnu::target("f16c")]] uint16_t hardwareHalf(float x) {
  const __m128i h = _mm_cvtps_ph(_mm_set_ss(x), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  return static_cast<uint16_t>(_mm_extract_epi16(h, 0));
}

[[gnu::target("f16c")]] float hardwareWiden(uint16_t h) { return _cvtsh_ss(h); }

// The CPU twin uses F16C where it exists, so the bits must be the same to the last NaN payload.
TEST(Half, NarrowsExactlyLikeF16c) {
  if (!cpuHasF16c()) GTEST_SKIP() << "this CPU has no F16C";
  for (float x : testFloats()) {
    ASSERT_EQ(floatToHalfBits(x), hardwareHalf(x)) << x << " (0x" << std::hex << floatBits(x) << ")";
  }
}

TEST(Half, WidensExactlyLikeF16c) {
  if (!cpuHasF16c()) GTEST_SKIP() << "this CPU has no F16C";
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    ASSERT_EQ(floatBits(halfBitsToFloat(static_cast<uint16_t>(h))), floatBits(hardwareWiden(static_cast<uint16_t>(h))))
        << std::hex << h;
  }
}
#endif

TEST(Bf16, LargestFiniteRoundsUpToInfinityOnlyPastHalfAnUlp) {
  EXPECT_EQ(floatToBf16Bits(std::numeric_limits<float>::max()), 0x7f80u);  // 0x7f7fffff: above the midpoint
  EXPECT_EQ(floatToBf16Bits(bitsFloat(0x7f7f7fffu)), 0x7f7fu);             // below it
}

}  // namespace
}  // namespace poseidon::kernels
