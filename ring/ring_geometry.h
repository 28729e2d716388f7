// RingGeometry: where a ring all-reduce of one layer moves what, as pure arithmetic both ends of
// a pair compute alike (so no sizes or offsets travel on the wire).
//
// A layer of X floats is cut into P segments, segment c = [floor(cX/P), floor((c+1)X/P)): their
// sizes differ by at most one float, and when X < P some are empty (an empty segment moves
// nothing). A segment travels in pieces of piece_floats, the last one shorter.
//
// Step t in [0, 2(P-1)): rank r sends segment (r - t) mod P to its successor and receives segment
// (r - t - 1) mod P from its predecessor. Steps [0, P-1) are the reduce-scatter (a received piece
// is added into the buffer), steps [P-1, 2(P-1)) the all-gather (a received piece is written
// straight into the buffer). So what rank r sends at step t > 0 is what it received at step t - 1,
// piece for piece: the sum of segment c starts at rank c and grows by one rank per step, rank
// c - 1 finishes it at step P - 2, and the all-gather carries the finished bytes once round.
#pragma once

#include <algorithm>
#include <cstdint>

namespace poseidon::ring {

// A layer's piece size: RingOptions::piece_bytes (max_piece_floats), except that a segment of
// fewer than kMinPiecesPerSegment such pieces is cut into that many, none below kMinPieceFloats:
// then a small layer's steps overlap as a large one's do (Gloo's chunked ring cuts every buffer
// so) instead of each step waiting for the whole previous segment. A 1 MiB layer on 4 ranks moves
// 64 KiB pieces, a 4 MiB one 256 KiB pieces; from 16 MiB on, pieces are piece_bytes.
inline constexpr uint64_t kMinPiecesPerSegment = 4;
inline constexpr uint64_t kMinPieceFloats = 4096;  // 16 KiB: below that a piece costs more than it overlaps
inline uint64_t layerPieceFloats(uint64_t floats, int ranks, uint64_t max_piece_floats) {
  const uint64_t largest_segment = (floats + static_cast<uint64_t>(ranks) - 1) / static_cast<uint64_t>(ranks);
  const uint64_t cut = (largest_segment + kMinPiecesPerSegment - 1) / kMinPiecesPerSegment;
  return std::min(max_piece_floats, std::max(cut, std::min(kMinPieceFloats, max_piece_floats)));
}

struct RingPiece {
  uint64_t offset = 0;  // floats from the start of the layer
  uint64_t floats = 0;
};

class RingGeometry {
 public:
  // ranks >= 1, 0 <= rank < ranks, piece_floats >= 1; floats * ranks must fit in 64 bits
  // (RingAllreduce::start checks both).
  RingGeometry(int ranks, int rank, uint64_t floats, uint64_t piece_floats)
      : ranks_(ranks), rank_(rank), floats_(floats), piece_floats_(piece_floats) {}

  int steps() const { return 2 * (ranks_ - 1); }
  bool reduces(int step) const { return step < ranks_ - 1; }
  int sendSegment(int step) const { return wrap(rank_ - step); }
  int recvSegment(int step) const { return wrap(rank_ - step - 1); }

  uint64_t segmentBegin(int segment) const {
    return floats_ * static_cast<uint64_t>(segment) / static_cast<uint64_t>(ranks_);
  }
  uint64_t segmentFloats(int segment) const { return segmentBegin(segment + 1) - segmentBegin(segment); }
  uint64_t pieces(int segment) const { return (segmentFloats(segment) + piece_floats_ - 1) / piece_floats_; }

  // Piece `index` (< pieces(segment)) of `segment`.
  RingPiece piece(int segment, uint64_t index) const {
    const uint64_t start = index * piece_floats_;
    const uint64_t left = segmentFloats(segment) - start;
    return {segmentBegin(segment) + start, left < piece_floats_ ? left : piece_floats_};
  }

 private:
  int wrap(int value) const { return ((value % ranks_) + ranks_) % ranks_; }

  int ranks_;
  int rank_;
  uint64_t floats_;
  uint64_t piece_floats_;
};

}  // namespace poseidon::ring
