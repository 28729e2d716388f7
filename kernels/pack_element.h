// The element operations of pack / unpack for each packed type, shared by the CPU twin and the
// CUDA kernel so both produce the same bits (kernels/convert_element.h does the rounding).
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/convert_element.h"
#include "kernels/pack.h"

namespace poseidon::kernels {

template <PackedType T>
struct PackedElement;

template <>
struct PackedElement<PackedType::kF32> {
  using Storage = float;
  POSEIDON_HD static float store(float x) { return x; }
  POSEIDON_HD static float load(float x) { return x; }
};

template <>
struct PackedElement<PackedType::kBf16> {
  using Storage = uint16_t;
  POSEIDON_HD static uint16_t store(float x) { return floatToBf16Bits(x); }
  POSEIDON_HD static float load(uint16_t x) { return bf16BitsToFloat(x); }
};

template <>
struct PackedElement<PackedType::kF16> {
  using Storage = uint16_t;
  POSEIDON_HD static uint16_t store(float x) { return floatToHalfBits(x); }
  POSEIDON_HD static float load(uint16_t x) { return halfBitsToFloat(x); }
};

// One element each way: the scale is applied in float, before narrowing and after widening.
template <PackedType T>
POSEIDON_HD inline typename PackedElement<T>::Storage packElement(float x, float scale) {
  return PackedElement<T>::store(x * scale);
}

template <PackedType T>
POSEIDON_HD inline float unpackElement(typename PackedElement<T>::Storage x, float scale) {
  return PackedElement<T>::load(x) * scale;
}

// Calls f(std::integral_constant<PackedType, type>{}) so a launcher instantiates its loop for the
// type chosen at run time (the type is checked valid before this is called).
template <typename F>
decltype(auto) withPackedType(PackedType type, F&& f) {
  switch (type) {
    case PackedType::kBf16: return f(std::integral_constant<PackedType, PackedType::kBf16>{});
    case PackedType::kF16: return f(std::integral_constant<PackedType, PackedType::kF16>{});
    case PackedType::kF32: break;
  }
  return f(std::integral_constant<PackedType, PackedType::kF32>{});
}

}  // namespace poseidon::kernels
