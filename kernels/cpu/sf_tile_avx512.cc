// AVX-512 tile kernel: a 12 x 32 tile in 24 zmm accumulators, two vector loads of V and twelve
// broadcasts of U per k' for 24 FMAs, which keeps both FMA ports of a Skylake-SP..Sapphire Rapids
// core busy while the loads stay within two per cycle; then the optimizer over the tile with
// 16-wide vectors.
#include "kernels/cpu/sf_tile.h"

#if defined(__x86_64__)
#include <immintrin.h>

namespace poseidon::kernels::cpu {
namespace {

struct Avx512 {
  static constexpr int mr = 12;
  static constexpr int nr = 32;

  [[gnu::target("avx512f")]] static void accumulate(const Panels& p, float* g) {
    __m512 acc[mr][2];
#pragma GCC unroll 12
    for (int r = 0; r < mr; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    const float* u = p.u;
    const float* v = p.v;
    for (size_t k = 0; k < p.depth; ++k, u += mr, v += nr) {
      const __m512 v0 = _mm512_loadu_ps(v);
      const __m512 v1 = _mm512_loadu_ps(v + 16);
#pragma GCC unroll 12
      for (int r = 0; r < mr; ++r) {
        const __m512 b = _mm512_set1_ps(u[r]);
        acc[r][0] = _mm512_fmadd_ps(b, v0, acc[r][0]);
        acc[r][1] = _mm512_fmadd_ps(b, v1, acc[r][1]);
      }
    }
#pragma GCC unroll 12
    for (int r = 0; r < mr; ++r) {
      _mm512_store_ps(g + r * nr, acc[r][0]);
      _mm512_store_ps(g + r * nr + 16, acc[r][1]);
    }
  }

  template <ElementRule R>
  [[gnu::target("avx512f"), gnu::noinline]] static void update(size_t rows, size_t cols, size_t stride,
                                                               const float* __restrict__ g, float* __restrict__ w,
                                                               float* __restrict__ s0, float* __restrict__ s1,
                                                               const OptimizerStep step) {
    updateTileBody<R, nr>(rows, cols, stride, g, w, s0, s1, step);
  }
};

}  // namespace

TileKernels avx512Tiles() { return tilesOf<Avx512>(); }

}  // namespace poseidon::kernels::cpu

#else

namespace poseidon::kernels::cpu {
TileKernels avx512Tiles() { return genericTiles(); }  // never chosen: cpuHasIsa() says no
}  // namespace poseidon::kernels::cpu

#endif
