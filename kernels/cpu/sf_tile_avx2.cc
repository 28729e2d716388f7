// AVX2 + FMA tile kernel: a 6 x 16 tile in 12 ymm accumulators (of 16 registers), two vector
// loads of V and six broadcasts of U per k' for 12 FMAs; then the optimizer over the tile with
// 8-wide vectors.
#include "kernels/cpu/sf_tile.h"

#if defined(__x86_64__)
#include <immintrin.h>

namespace poseidon::kernels::cpu {
namespace {

struct Avx2 {
  static constexpr int mr = 6;
  static constexpr int nr = 16;

  [[gnu::target("avx2,fma")]] static void accumulate(const Panels& p, float* g) {
    __m256 acc[mr][2];
#pragma GCC unroll 6
    for (int r = 0; r < mr; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    const float* u = p.u;
    const float* v = p.v;
    for (size_t k = 0; k < p.depth; ++k, u += mr, v += nr) {
      const __m256 v0 = _mm256_loadu_ps(v);
      const __m256 v1 = _mm256_loadu_ps(v + 8);
#pragma GCC unroll 6
      for (int r = 0; r < mr; ++r) {
        const __m256 b = _mm256_broadcast_ss(u + r);
        acc[r][0] = _mm256_fmadd_ps(b, v0, acc[r][0]);
        acc[r][1] = _mm256_fmadd_ps(b, v1, acc[r][1]);
      }
    }
#pragma GCC unroll 6
    for (int r = 0; r < mr; ++r) {
      _mm256_store_ps(g + r * nr, acc[r][0]);
      _mm256_store_ps(g + r * nr + 8, acc[r][1]);
    }
  }

  template <ElementRule R>
  [[gnu::target("avx2,fma"), gnu::noinline]] static void update(size_t rows, size_t cols, size_t stride,
                                                                const float* __restrict__ g, float* __restrict__ w,
                                                                float* __restrict__ s0, float* __restrict__ s1,
                                                                const OptimizerStep step) {
    updateTileBody<R, nr>(rows, cols, stride, g, w, s0, s1, step);
  }
};

}  // namespace

TileKernels avx2Tiles() { return tilesOf<Avx2>(); }

}  // namespace poseidon::kernels::cpu

#else

namespace poseidon::kernels::cpu {
TileKernels avx2Tiles() { return genericTiles(); }  // never chosen: cpuHasIsa() says no
}  // namespace poseidon::kernels::cpu

#endif
