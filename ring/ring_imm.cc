#include "ring/ring_imm.h"

#include <fmt/format.h>

namespace poseidon::ring {

std::string describeRingImm(uint32_t imm) {
  const uint32_t piece_mask = (uint32_t{1} << kRingImmPieceBits) - 1;
  const uint32_t step_mask = (uint32_t{1} << kRingImmStepBits) - 1;
  const uint32_t layer_mask = (uint32_t{1} << kRingImmLayerBits) - 1;
  switch (ringImmType(imm)) {
    case RingImmType::kReduce:
    case RingImmType::kGather:
      return fmt::format("{} piece (layer {}, step {}, piece {}; low bits) {:#010x}",
                         ringImmType(imm) == RingImmType::kReduce ? "reduce-scatter" : "all-gather",
                         (imm >> (kRingImmStepBits + kRingImmPieceBits)) & layer_mask,
                         (imm >> kRingImmPieceBits) & step_mask, imm & piece_mask, imm);
    case RingImmType::kCredit:
      return fmt::format("credit {} {:#010x}", imm & ((uint32_t{1} << kRingImmCreditBits) - 1), imm);
    case RingImmType::kInvalid: break;
  }
  return fmt::format("immediate of unknown type {:#010x}", imm);
}

}  // namespace poseidon::ring
