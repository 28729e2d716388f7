#include "kernels/pack_check.h"

#include <fmt/format.h>

namespace poseidon::kernels {

std::string packProblem(const PackJob& job, bool pieces_readable) {
  if (packedTypeName(job.type) == nullptr) {
    return fmt::format("type {} is not f32 (1), bf16 (2) or f16 (3)", static_cast<int>(job.type));
  }
  if (isaName(job.isa) == nullptr) {
    return fmt::format("isa {} is not auto (0), generic (1), avx2 (2) or avx512 (3)", static_cast<int>(job.isa));
  }
  if (job.packed == nullptr && job.packed_count > 0) {
    return fmt::format("packed is null but packed_count is {}", job.packed_count);
  }
  if (job.pieces.data() == nullptr && !job.pieces.empty()) return "pieces is null but has a size";
  if (!pieces_readable) return {};
  if (!cpuHasIsa(job.isa)) return fmt::format("isa {} is not supported by this CPU", isaName(job.isa));
  uint64_t end = 0;  // of the last non-empty piece, pieces[last]
  size_t last = 0;
  for (size_t k = 0; k < job.pieces.size(); ++k) {
    const PackPiece& piece = job.pieces[k];
    if (piece.offset < end) {
      return fmt::format("pieces[{}].offset {} is before the end {} of pieces[{}] (need ascending, not overlapping)", k,
                         piece.offset, end, last);
    }
    if (piece.count == 0) continue;
    if (piece.tensor == nullptr) return fmt::format("pieces[{}].tensor is null but count is {}", k, piece.count);
    // Written so that no sum can wrap around.
    if (piece.offset > job.packed_count || piece.count > job.packed_count - piece.offset) {
      return fmt::format("pieces[{}] covers packed elements [{}, {}) past packed_count {}", k, piece.offset,
                         piece.offset + piece.count, job.packed_count);
    }
    end = piece.offset + piece.count;
    last = k;
  }
  return {};
}

}  // namespace poseidon::kernels
