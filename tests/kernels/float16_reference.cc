#include "tests/kernels/float16_reference.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace poseidon::kernels {
namespace {

struct Format {
  int fraction_bits;  // stored mantissa bits
  int bias;
  int exponent_bits;
  int minExponent() const { return 1 - bias; }
  int maxExponent() const { return (1 << exponent_bits) - 2 - bias; }
  double maxFinite() const { return std::ldexp(2.0 - std::ldexp(1.0, -fraction_bits), maxExponent()); }
  uint16_t infinityBits() const { return static_cast<uint16_t>(((1u << exponent_bits) - 1) << fraction_bits); }
};

constexpr Format kHalf{10, 15, 5};
constexpr Format kBf16{7, 127, 8};

uint16_t encode(const Format& f, double x) {
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  if (std::isnan(x)) return static_cast<uint16_t>(sign | f.infinityBits() | (1u << (f.fraction_bits - 1)));
  const double a = std::abs(x);
  if (a == 0) return sign;
  if (std::isinf(a)) return static_cast<uint16_t>(sign | f.infinityBits());
  int e = std::ilogb(a);
  if (e < f.minExponent()) e = f.minExponent();
  const double quantum = std::ldexp(1.0, e - f.fraction_bits);
  const double r = std::nearbyint(a / quantum) * quantum;  // default rounding: nearest, ties to even
  if (r > f.maxFinite()) return static_cast<uint16_t>(sign | f.infinityBits());
  if (r < std::ldexp(1.0, f.minExponent())) {  // subnormal (or zero): count of the smallest quantum
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(r / std::ldexp(1.0, f.minExponent() - f.fraction_bits)));
  }
  const int re = std::ilogb(r);
  const auto mantissa = static_cast<uint32_t>((std::ldexp(r, -re) - 1.0) * std::ldexp(1.0, f.fraction_bits));
  return static_cast<uint16_t>(sign | (static_cast<uint32_t>(re + f.bias) << f.fraction_bits) | mantissa);
}

double decode(const Format& f, uint16_t bits) {
  const double sign = (bits & 0x8000) ? -1.0 : 1.0;
  const uint32_t e = (bits >> f.fraction_bits) & ((1u << f.exponent_bits) - 1);
  const uint32_t m = bits & ((1u << f.fraction_bits) - 1);
  if (e == (1u << f.exponent_bits) - 1) {
    return m == 0 ? sign * std::numeric_limits<double>::infinity()
                  : std::copysign(std::numeric_limits<double>::quiet_NaN(), sign);
  }
  if (e == 0) return sign * std::ldexp(static_cast<double>(m), f.minExponent() - f.fraction_bits);
  return sign * std::ldexp(1.0 + std::ldexp(static_cast<double>(m), -f.fraction_bits), static_cast<int>(e) - f.bias);
}

uint32_t bitsOf(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

float floatOf(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

}  // namespace

uint16_t referenceToHalf(double x) { return encode(kHalf, x); }
uint16_t referenceToBf16(double x) { return encode(kBf16, x); }
double referenceFromHalf(uint16_t bits) { return decode(kHalf, bits); }
double referenceFromBf16(uint16_t bits) { return decode(kBf16, bits); }

uint32_t referencePack(PackedType type, float x, float scale) {
  // The exact product of two floats fits a double; one rounding to float is IEEE float multiply.
  const float product = static_cast<float>(static_cast<double>(x) * scale);
  switch (type) {
    case PackedType::kBf16: return referenceToBf16(product);
    case PackedType::kF16: return referenceToHalf(product);
    case PackedType::kF32: break;
  }
  return bitsOf(product);
}

uint32_t referenceUnpack(PackedType type, uint32_t packed_bits, float scale) {
  double value = 0;
  switch (type) {
    case PackedType::kBf16: value = referenceFromBf16(static_cast<uint16_t>(packed_bits)); break;
    case PackedType::kF16: value = referenceFromHalf(static_cast<uint16_t>(packed_bits)); break;
    case PackedType::kF32: value = floatOf(packed_bits); break;
  }
  return bitsOf(static_cast<float>(value * scale));
}

bool sameValueBits(PackedType type, uint32_t a, uint32_t b) {
  const bool wide = type == PackedType::kF32;
  auto isNan = [&](uint32_t u) {
    return wide                       ? (u & 0x7fffffffu) > 0x7f800000u
           : type == PackedType::kF16 ? (u & 0x7fffu) > 0x7c00u
                                      : (u & 0x7fffu) > 0x7f80u;
  };
  const uint32_t sign = wide ? 0x80000000u : 0x8000u;
  if (isNan(a) || isNan(b)) return isNan(a) && isNan(b) && (a & sign) == (b & sign);
  return a == b;
}

}  // namespace poseidon::kernels
