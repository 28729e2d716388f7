// The 32-bit immediate of an SFB write: which layer's factors landed, and for which iteration.
//
// Layout: layer (12 bits) | iteration (low 20 bits). The receiver knows the exact iteration it
// expects next from a peer on a layer (writes of one pair land in the order posted, and a peer
// sends a layer's iterations in sequence), so the low bits suffice to check it; any mismatch is
// the peer's protocol error, never a guess.
#pragma once

#include <cstddef>
#include <cstdint>

namespace poseidon::sfb {

inline constexpr uint32_t kSfImmLayerBits = 12;
inline constexpr uint32_t kSfImmIterationBits = 32 - kSfImmLayerBits;
inline constexpr size_t kSfMaxLayers = size_t{1} << kSfImmLayerBits;
inline constexpr uint32_t kSfImmIterationMask = (uint32_t{1} << kSfImmIterationBits) - 1;

struct SfImm {
  uint32_t layer = 0;
  uint32_t iteration_low = 0;
};

constexpr uint32_t sfIterationLow(uint64_t iteration) { return static_cast<uint32_t>(iteration) & kSfImmIterationMask; }

// `layer` < kSfMaxLayers (SfSlotLayout::build refuses more layers).
constexpr uint32_t encodeSfImm(size_t layer, uint64_t iteration) {
  return (static_cast<uint32_t>(layer) << kSfImmIterationBits) | sfIterationLow(iteration);
}

constexpr SfImm decodeSfImm(uint32_t imm) { return SfImm{imm >> kSfImmIterationBits, imm & kSfImmIterationMask}; }

}  // namespace poseidon::sfb
