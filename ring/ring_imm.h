// The ring all-reduce's 32-bit immediates. Every event between ring neighbours is the immediate of
// a one-sided write, so a receiver has one ordered stream per neighbour and checks each immediate
// against the one it expects next:
//
//   piece:  type (2 bits) | layer (6) | step (8) | piece (16)
//           kReduce: a reduce-scatter piece landed in our staging; kGather: an all-gather piece
//           landed in our buffer. Fields carry the low bits of the layer index, the step within
//           its phase and the piece's index within its segment: the receiver knows the values it expects,
//           so the low bits suffice to catch a peer that runs another layer, step or piece.
//   credit: type (2 bits) | sequence (30)
//           kCredit: the receiver added, and so freed the staging slot of, the sender's
//           reduce-scatter piece number `sequence` (counted over the object's life, low 30 bits).
//
// Type 3 is never sent; receiving it is a protocol error like any other unexpected immediate.
#pragma once

#include <cstdint>
#include <string>

namespace poseidon::ring {

enum class RingImmType : uint32_t { kReduce = 0, kGather = 1, kCredit = 2, kInvalid = 3 };

inline constexpr uint32_t kRingImmTypeShift = 30;
inline constexpr uint32_t kRingImmLayerBits = 6;
inline constexpr uint32_t kRingImmStepBits = 8;
inline constexpr uint32_t kRingImmPieceBits = 16;
inline constexpr uint32_t kRingImmCreditBits = 30;

namespace ring_imm_detail {
constexpr uint32_t low(uint64_t value, uint32_t bits) {
  return static_cast<uint32_t>(value & ((uint64_t{1} << bits) - 1));
}
}  // namespace ring_imm_detail

constexpr uint32_t ringPieceImm(RingImmType type, uint64_t layer, uint64_t step, uint64_t piece) {
  using ring_imm_detail::low;
  return (static_cast<uint32_t>(type) << kRingImmTypeShift) |
         (low(layer, kRingImmLayerBits) << (kRingImmStepBits + kRingImmPieceBits)) |
         (low(step, kRingImmStepBits) << kRingImmPieceBits) | low(piece, kRingImmPieceBits);
}

constexpr uint32_t ringCreditImm(uint64_t sequence) {
  return (static_cast<uint32_t>(RingImmType::kCredit) << kRingImmTypeShift) |
         ring_imm_detail::low(sequence, kRingImmCreditBits);
}

constexpr RingImmType ringImmType(uint32_t imm) { return static_cast<RingImmType>(imm >> kRingImmTypeShift); }

// "reduce-scatter piece (layer 3, step 1, piece 7; low bits) 0x03010007", "credit 12 0x8000000c".
std::string describeRingImm(uint32_t imm);

}  // namespace poseidon::ring
