#include "tests/kernels/pack_case.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace poseidon::kernels {
namespace {

void fillTensor(UnalignedBuffer& t, std::mt19937& random) {
  std::uniform_int_distribution<int> exponent(-30, 20), special(0, 199);
  for (size_t i = 0; i < t.size(); ++i) {
    switch (special(random)) {
      case 0: t[i] = std::numeric_limits<float>::infinity(); break;
      case 1: t[i] = -std::numeric_limits<float>::quiet_NaN(); break;
      case 2: t[i] = -0.0f; break;
      // A signed 32-bit draw rounded to float: every mantissa bit random, so the packings' rounding
      // sees every case of the bits they drop. Scaled to [-2, 2) times 2^exponent.
      default: t[i] = std::ldexp(static_cast<float>(static_cast<int32_t>(random())), exponent(random) - 30);
    }
  }
}

}  // namespace

PackCase::PackCase(const std::vector<size_t>& sizes, PackedType type_, uint32_t seed) : type(type_), random(seed) {
  std::uniform_int_distribution<uint64_t> gap(0, 3);
  uint64_t offset = gap(random);
  for (size_t size : sizes) {
    tensors.emplace_back(size);
    pieces.push_back({nullptr, offset, size});
    offset += size + gap(random);
  }
  for (size_t k = 0; k < pieces.size(); ++k) pieces[k].tensor = tensors[k].data();  // after the last reallocation
  packed_count = offset;
  storage.assign((packed_count + 1) * packedBytes(type), kPackSentinel);
  for (UnalignedBuffer& t : tensors) fillTensor(t, random);
}

uint32_t PackCase::packedBits(uint64_t e) const {
  const unsigned char* p = storage.data() + (e + 1) * packedBytes(type);
  if (type == PackedType::kF32) {
    uint32_t u;
    std::memcpy(&u, p, 4);
    return u;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  return h;
}

}  // namespace poseidon::kernels
