// Element conversions between float and the 16-bit wire formats (bfloat16, IEEE binary16).
//
// Written as integer and exact float operations rather than with the hardware's conversion
// instructions, so the CPU twin (any ISA, even without F16C) and the CUDA kernel produce the same
// bits from the same source. Rounding is to nearest, ties to even, like cvt.rn on the GPU and
// vcvtps2ph on x86; a NaN stays a NaN (made quiet, sign and leading payload kept), overflow goes
// to infinity and binary16 keeps its subnormals. The binary16 functions give exactly the bits of
// x86's F16C instructions for every input (tests/kernels/convert_test.cc), which the CPU twin
// uses where the CPU has them. Every branch is a select the vectoriser turns into a blend.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/optimizer_element.h"  // POSEIDON_HD

namespace poseidon::kernels {

POSEIDON_HD inline uint32_t floatBits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);  // the defined way to type-pun; compiles to nothing
  return u;
}

POSEIDON_HD inline float bitsFloat(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

// bfloat16 is the top half of a float: round the low 16 bits away, ties to even. Adding 0x7fff
// plus the kept half's lowest bit carries into the kept half exactly when the dropped half is
// above one half ulp, or equal to it with an odd kept half; a carry out of the largest finite
// value lands on infinity, as rounding requires.
POSEIDON_HD inline uint16_t floatToBf16Bits(float x) {
  const uint32_t u = floatBits(x);
  const bool nan = (u & 0x7fffffffu) > 0x7f800000u;
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  return static_cast<uint16_t>(nan ? (u >> 16) | 0x0040u : rounded);
}

POSEIDON_HD inline float bf16BitsToFloat(uint16_t h) { return bitsFloat(static_cast<uint32_t>(h) << 16); }

// binary16: 5 exponent bits (bias 15), 10 mantissa bits.
POSEIDON_HD inline uint16_t floatToHalfBits(float x) {
  const uint32_t u = floatBits(x);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t a = u & 0x7fffffffu;  // |x|
  // |x| >= 65536 (2^16) is past binary16's range whatever the rounding; a NaN stays a quiet NaN.
  const uint32_t special = a > 0x7f800000u ? 0x7e00u | ((a >> 13) & 0x3ffu) : 0x7c00u;
  // Normal results: rebias the exponent (127 -> 15) and round the 13 dropped mantissa bits to
  // nearest even the same way as bfloat16 above. A carry may run into the exponent, which is
  // right (1.111..1 x 2^e rounds up to 2^(e+1)), including past 65504 into infinity.
  const uint32_t normal = (a - ((127u - 15u) << 23) + 0xfffu + ((a >> 13) & 1u)) >> 13;
  // |x| < 2^-14 gives a binary16 subnormal (or zero), whose unit is 2^-24. Adding 0.5 (whose
  // ulp as a float is 2^-24) makes the float adder round |x| to a multiple of 2^-24, to nearest
  // even; the low mantissa bits of the sum are then that multiple. Exact float addition, same on
  // every IEEE machine that does not flush subnormals (the GPU is compiled with -ftz=false).
  const uint32_t subnormal = floatBits(bitsFloat(a) + 0.5f) - 0x3f000000u;
  const uint32_t magnitude = a >= 0x47800000u ? special : (a < 0x38800000u ? subnormal : normal);
  return static_cast<uint16_t>(sign | magnitude);
}

POSEIDON_HD inline float halfBitsToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = h & 0x7c00u;
  const uint32_t mantissa = h & 0x3ffu;
  // Normal: rebias 15 -> 127. Infinity: all-ones exponent. NaN: payload kept and made quiet, as
  // the hardware conversions do (vcvtph2ps, cvt.f32.f16), so a CPU twin may use them.
  const uint32_t normal = ((exponent + ((127u - 15u) << 10)) << 13) | (mantissa << 13);
  const uint32_t special = 0x7f800000u | (mantissa != 0 ? 0x00400000u : 0u) | (mantissa << 13);
  // Subnormal (or zero): mantissa x 2^-24, exact in float (at most 10 significant bits). Signed
  // int to float: a vector instruction everywhere, where unsigned needs branches before AVX-512.
  const uint32_t subnormal = floatBits(static_cast<float>(static_cast<int32_t>(mantissa)) * 5.9604644775390625e-8f);
  const uint32_t magnitude = exponent == 0x7c00u ? special : (exponent == 0 ? subnormal : normal);
  return bitsFloat(sign | magnitude);
}

}  // namespace poseidon::kernels
