// A naive double-precision reference for the 16-bit formats, written from their definitions
// (value = (-1)^s x 1.m x 2^(e - bias), subnormals m x 2^(emin - fraction bits)) rather than
// from bit tricks, so it checks kernels/convert_element.h independently.
#pragma once

#include <cstdint>

#include "kernels/pack.h"

namespace poseidon::kernels {

// x rounded to nearest, ties to even, into the 16-bit format's bits; NaN gives some quiet NaN.
uint16_t referenceToHalf(double x);
uint16_t referenceToBf16(double x);
// The value of a 16-bit pattern (NaN for NaN patterns).
double referenceFromHalf(uint16_t bits);
double referenceFromBf16(uint16_t bits);

// The float / 16-bit pack and unpack of one element by the reference: pack rounds the float
// product x * scale (one float multiplication, as the kernels do), then converts; unpack widens
// and multiplies in float. Returned as the packed type's bits (pack) or float bits (unpack).
uint32_t referencePack(PackedType type, float x, float scale);
uint32_t referenceUnpack(PackedType type, uint32_t packed_bits, float scale);

// Bit equality, except that any NaN equals any NaN of the same sign: payloads are not promised.
bool sameValueBits(PackedType type, uint32_t a, uint32_t b);

}  // namespace poseidon::kernels
