// CUDA twin of the fused SF reconstruction + update.
//
// A classic shared-memory tiled product with the optimizer as its epilogue. Each block owns a
// 128 x 128 tile of W; its 256 threads each accumulate an 8 x 8 sub-tile in registers. The depth
// k' = p * rank + k (every peer's factors, rank order) is walked in steps of 16: U's and V's
// 128 x 16 slices are loaded coalesced (16 consecutive threads read one row's 16 consecutive k)
// into registers, then stored transposed into shared memory ([k'][row], padded against bank
// conflicts), double-buffered so the next slice's global loads overlap this slice's FMAs. Every
// accumulator takes its terms strictly in k' order with __fmaf_rn (one rounding, as std::fma on
// the CPU twin), starting from +0; the partial last slice runs only its valid k', never padded
// terms (fma(0, 0, -0) would turn a -0 sum into +0). The epilogue then applies the element
// functions to W, read and written once. No tensor cores: their accumulation order is not
// specified, and bit-identity across replicas is the point of SFB here.
#include "kernels/cuda/sf_update_cuda.h"
#include "kernels/optimizer_element.h"
#include "kernels/sf_update_check.h"

namespace poseidon::kernels {
namespace {

constexpr int kTile = 128;  // BM = BN
constexpr int kDepth = 16;  // BK
constexpr int kThreads = 256;
constexpr int kPad = 4;                                     // keeps float4 alignment of each shared row; spreads banks
constexpr int kLoadsPerThread = kTile * kDepth / kThreads;  // 8 rows each of U and V

struct Factors {
  const float* u[kMaxCudaFactors];
  const float* v[kMaxCudaFactors];
};

struct Shape {
  unsigned rows, cols, rank, peers;
};

// Where this thread's loads of one slice come from: its k' column of the slice is fixed
// (threadIdx.x % 16), so it tracks (peer, k) for k' = slice start + that column.
struct SliceCursor {
  unsigned peer;
  unsigned k;
  __device__ void advance(unsigned step, unsigned rank) {
    k += step;
    while (k >= rank && rank > 0) {
      k -= rank;
      ++peer;
    }
  }
};

// Loads this thread's 8 values of a 128 x 16 slice of the factor with `extent` rows starting at
// row `first`: rows (threadIdx.x / 16) + 16 q. Outside the factor (rows past the edge, k' past
// the depth): 0, which the compute loop never uses as a term.
__device__ void loadSlice(const float* const* factors, const Shape& s, unsigned extent, unsigned first,
                          const SliceCursor& at, float (&out)[kLoadsPerThread]) {
  const unsigned row0 = threadIdx.x / kDepth;
  const bool valid_k = at.peer < s.peers && at.k < s.rank;
  const float* base = valid_k ? factors[at.peer] + at.k : nullptr;
#pragma unroll
  for (int q = 0; q < kLoadsPerThread; ++q) {
    const unsigned row = first + row0 + 16u * q;
    out[q] = valid_k && row < extent ? base[static_cast<size_t>(row) * s.rank] : 0.0f;
  }
}

__device__ void storeSlice(const float (&in)[kLoadsPerThread], float (*shared)[kTile + kPad]) {
  const unsigned kk = threadIdx.x % kDepth, row0 = threadIdx.x / kDepth;
#pragma unroll
  for (int q = 0; q < kLoadsPerThread; ++q) shared[kk][row0 + 16 * q] = in[q];
}

// acc[r][c] = fma(a[r], b[c], acc[r][c]) for the `valid` first k' of the slice, in order.
__device__ void multiplySlice(const float (*a_shared)[kTile + kPad], const float (*b_shared)[kTile + kPad],
                              unsigned valid, float (&acc)[8][8]) {
  const unsigned ty = threadIdx.x / 16, tx = threadIdx.x % 16;
#pragma unroll
  for (unsigned kk = 0; kk < kDepth; ++kk) {
    if (kk >= valid) break;  // the same for the whole block: no divergence
    float a[8], b[8];
    const float4 a0 = *reinterpret_cast<const float4*>(&a_shared[kk][ty * 4]);
    const float4 a1 = *reinterpret_cast<const float4*>(&a_shared[kk][64 + ty * 4]);
    const float4 b0 = *reinterpret_cast<const float4*>(&b_shared[kk][tx * 4]);
    const float4 b1 = *reinterpret_cast<const float4*>(&b_shared[kk][64 + tx * 4]);
    a[0] = a0.x, a[1] = a0.y, a[2] = a0.z, a[3] = a0.w, a[4] = a1.x, a[5] = a1.y, a[6] = a1.z, a[7] = a1.w;
    b[0] = b0.x, b[1] = b0.y, b[2] = b0.z, b[3] = b0.w, b[4] = b1.x, b[5] = b1.y, b[6] = b1.z, b[7] = b1.w;
#pragma unroll
    for (int r = 0; r < 8; ++r) {
#pragma unroll
      for (int c = 0; c < 8; ++c) acc[r][c] = __fmaf_rn(a[r], b[c], acc[r][c]);
    }
  }
}

// This thread's r-th row (c-th column) within the block's tile: two groups of four, 64 apart,
// so a warp's float4 shared reads are contiguous.
__device__ unsigned tileOffset(unsigned t, int r) { return (r < 4 ? 0u : 64u) + t * 4 + (r & 3); }

template <ElementRule R>
__global__ void __launch_bounds__(kThreads, 2)
    sfUpdateKernel(float* __restrict__ w, float* __restrict__ state0, float* __restrict__ state1, Shape s,
                   const __grid_constant__ Factors factors, OptimizerStep step) {
  __shared__ __align__(16) float a_shared[2][kDepth][kTile + kPad];
  __shared__ __align__(16) float b_shared[2][kDepth][kTile + kPad];
  const unsigned i0 = blockIdx.y * kTile, j0 = blockIdx.x * kTile;
  const unsigned depth = s.peers * s.rank;

  float acc[8][8];
#pragma unroll
  for (int r = 0; r < 8; ++r) {
#pragma unroll
    for (int c = 0; c < 8; ++c) acc[r][c] = 0.0f;
  }

  SliceCursor cursor{0, threadIdx.x % kDepth};
  cursor.advance(0, s.rank);
  float a_next[kLoadsPerThread], b_next[kLoadsPerThread];
  loadSlice(factors.u, s, s.rows, i0, cursor, a_next);
  loadSlice(factors.v, s, s.cols, j0, cursor, b_next);
  storeSlice(a_next, a_shared[0]);
  storeSlice(b_next, b_shared[0]);
  __syncthreads();
  int buffer = 0;
  for (unsigned k0 = 0; k0 < depth; k0 += kDepth) {
    const bool more = k0 + kDepth < depth;
    if (more) {
      cursor.advance(kDepth, s.rank);
      loadSlice(factors.u, s, s.rows, i0, cursor, a_next);
      loadSlice(factors.v, s, s.cols, j0, cursor, b_next);
    }
    multiplySlice(a_shared[buffer], b_shared[buffer], min(kDepth, depth - k0), acc);
    if (more) {
      // The other buffer was last read before the previous barrier, so it is free.
      storeSlice(a_next, a_shared[buffer ^ 1]);
      storeSlice(b_next, b_shared[buffer ^ 1]);
    }
    __syncthreads();
    buffer ^= 1;
  }

  const unsigned ty = threadIdx.x / 16, tx = threadIdx.x % 16;
#pragma unroll
  for (int r = 0; r < 8; ++r) {
    const unsigned i = i0 + tileOffset(ty, r);
    if (i >= s.rows) continue;
#pragma unroll
    for (int c = 0; c < 8; ++c) {
      const unsigned j = j0 + tileOffset(tx, c);
      if (j < s.cols) updateElementAt<R>(acc[r][c], static_cast<size_t>(i) * s.cols + j, w, state0, state1, step);
    }
  }
}

}  // namespace

cudaError_t sfUpdateCuda(const SfUpdate& update, cudaStream_t stream) {
  if (!sfUpdateProblem(update).empty() || update.u.size() > kMaxCudaFactors) return cudaErrorInvalidValue;
  // The kernel indexes with 32-bit rows, columns and depth (each factor's elements with size_t).
  constexpr size_t kLimit = 0x7fffffff;
  if (update.rows > kLimit || update.cols > kLimit || update.rank * update.u.size() > kLimit) {
    return cudaErrorInvalidValue;
  }
  if (update.rows == 0 || update.cols == 0) return cudaSuccess;
  Factors factors{};
  for (size_t p = 0; p < update.u.size(); ++p) {
    factors.u[p] = update.u[p];
    factors.v[p] = update.v[p];
  }
  const Shape shape{static_cast<unsigned>(update.rows), static_cast<unsigned>(update.cols),
                    static_cast<unsigned>(update.rank), static_cast<unsigned>(update.u.size())};
  const dim3 grid(static_cast<unsigned>((update.cols + kTile - 1) / kTile),
                  static_cast<unsigned>((update.rows + kTile - 1) / kTile));
  if (grid.y > 65535) return cudaErrorInvalidValue;
  return withElementRule(elementRule(update.step), [&](auto rule) {
    sfUpdateKernel<decltype(rule)::value>
        <<<grid, kThreads, 0, stream>>>(update.params, update.state0, update.state1, shape, factors, update.step);
    return cudaGetLastError();
  });
}

}  // namespace poseidon::kernels
