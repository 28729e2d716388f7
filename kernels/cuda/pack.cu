// CUDA twins of pack / unpack. The packed range is split evenly over the blocks, whatever the
// pieces' sizes (a merged group mixes a 400 MB weight with 4 KB biases): each block finds the
// first piece reaching into its range by binary search over the ascending table, then walks the
// pieces in its range with consecutive threads on consecutive elements, so both the tensor and
// the packed side are read and written coalesced.
#include <algorithm>

#include "kernels/cuda/pack_cuda.h"
#include "kernels/pack_check.h"
#include "kernels/pack_element.h"

namespace poseidon::kernels {
namespace {

constexpr int kThreads = 256;
// Elements per block: enough work to hide the search, small enough to give an H100 (132 SMs)
// many blocks for a 2 MB chunk group (8192 elements -> 64 blocks per 2 MiB of floats).
constexpr uint64_t kPerBlock = 8192;

template <PackedType T>
using Storage = typename PackedElement<T>::Storage;

// The first piece whose end lies past `at` (pieces ascend and do not overlap).
__device__ size_t firstPieceEndingAfter(const PackPiece* pieces, size_t n, uint64_t at) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (pieces[mid].offset + pieces[mid].count <= at) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// Runs f(piece, i) for the packed elements of this block's range that some piece covers.
template <typename F>
__device__ void forBlockElements(const PackPiece* pieces, size_t n, uint64_t packed_count, F f) {
  const uint64_t lo = static_cast<uint64_t>(blockIdx.x) * kPerBlock;
  const uint64_t hi = min(lo + kPerBlock, packed_count);
  for (size_t k = firstPieceEndingAfter(pieces, n, lo); k < n && pieces[k].offset < hi; ++k) {
    const PackPiece piece = pieces[k];
    const uint64_t begin = max(lo, piece.offset);
    const uint64_t end = min(hi, piece.offset + piece.count);
    for (uint64_t e = begin + threadIdx.x; e < end; e += blockDim.x) f(piece, e);
  }
}

template <PackedType T>
__global__ void packKernel(const PackPiece* __restrict__ pieces, size_t n, Storage<T>* __restrict__ packed,
                           uint64_t packed_count, float scale) {
  forBlockElements(pieces, n, packed_count, [=](const PackPiece& piece, uint64_t e) {
    packed[e] = packElement<T>(piece.tensor[e - piece.offset], scale);
  });
}

template <PackedType T>
__global__ void unpackKernel(const PackPiece* __restrict__ pieces, size_t n, const Storage<T>* __restrict__ packed,
                             uint64_t packed_count, float scale) {
  forBlockElements(pieces, n, packed_count, [=](const PackPiece& piece, uint64_t e) {
    piece.tensor[e - piece.offset] = unpackElement<T>(packed[e], scale);
  });
}

template <bool kPack>
cudaError_t launch(const PackJob& job, cudaStream_t stream) {
  if (!packProblem(job, /*pieces_readable=*/false).empty()) return cudaErrorInvalidValue;
  if (job.packed_count == 0 || job.pieces.empty()) return cudaSuccess;
  const uint64_t blocks = (job.packed_count + kPerBlock - 1) / kPerBlock;
  if (blocks > 0x7fffffffu) return cudaErrorInvalidValue;  // 2^31 x 8192 elements: not a real job
  return withPackedType(job.type, [&](auto type) {
    constexpr PackedType T = decltype(type)::value;
    if constexpr (kPack) {
      packKernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
          job.pieces.data(), job.pieces.size(), static_cast<Storage<T>*>(job.packed), job.packed_count, job.scale);
    } else {
      unpackKernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
          job.pieces.data(), job.pieces.size(), static_cast<const Storage<T>*>(job.packed), job.packed_count,
          job.scale);
    }
    return cudaGetLastError();
  });
}

}  // namespace

cudaError_t packCuda(const PackJob& job, cudaStream_t stream) { return launch<true>(job, stream); }
cudaError_t unpackCuda(const PackJob& job, cudaStream_t stream) { return launch<false>(job, stream); }

}  // namespace poseidon::kernels
