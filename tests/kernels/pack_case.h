// A layer group's host buffers for the pack suites: tensors of given sizes (unaligned, values
// over the whole float range with some infinities, NaNs and -0) as pieces at ascending offsets
// with gaps of 0..3 elements, and a packed buffer one element past an allocation, pre-filled with
// a sentinel byte so untouched gaps can be seen.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "kernels/pack.h"
#include "tests/kernels/update_case.h"

namespace poseidon::kernels {

inline constexpr uint8_t kPackSentinel = 0xa5;

// Sizes with the edge cases: empty, single, odd, one past a power of two.
inline std::vector<size_t> groupSizes() { return {17, 0, 1, 1000, 3, 65537, 2}; }

struct PackCase {
  PackCase(const std::vector<size_t>& sizes, PackedType type, uint32_t seed);
  PackCase(const PackCase&) = delete;  // pieces point into this object's tensors
  PackCase& operator=(const PackCase&) = delete;

  void* packed() { return storage.data() + packedBytes(type); }
  // Element e of the packed buffer as bits (16 or 32).
  uint32_t packedBits(uint64_t e) const;
  PackJob job(float scale) { return {pieces, packed(), packed_count, type, scale}; }

  PackedType type;
  std::mt19937 random;
  std::vector<UnalignedBuffer> tensors;
  std::vector<PackPiece> pieces;
  uint64_t packed_count = 0;
  std::vector<unsigned char> storage;  // one packed element of slack, then the packed buffer
};

}  // namespace poseidon::kernels
