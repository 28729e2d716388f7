// AVX-512 micro-kernel: a 12 x 32 tile in 24 zmm accumulators, two vector loads of V and twelve
// broadcasts of U per k' for 24 FMAs, which keeps both FMA ports of a Skylake-SP..Sapphire Rapids
// core busy while the loads stay within two per cycle.
#include <immintrin.h>

#include "kernels/cpu/sf_tile.h"

namespace poseidon::kernels::cpu {
namespace {

constexpr int kMr = 12;
constexpr int kNr = 32;

[[gnu::target("avx512f")]] void run(const MicroTile& t) {
  __m512 acc[kMr][2];
#pragma GCC unroll 12
  for (int r = 0; r < kMr; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  const float* u = t.u_panel;
  const float* v = t.v_panel;
  for (size_t k = 0; k < t.depth; ++k, u += kMr, v += kNr) {
    const __m512 v0 = _mm512_loadu_ps(v);
    const __m512 v1 = _mm512_loadu_ps(v + 16);
#pragma GCC unroll 12
    for (int r = 0; r < kMr; ++r) {
      const __m512 b = _mm512_set1_ps(u[r]);
      acc[r][0] = _mm512_fmadd_ps(b, v0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(b, v1, acc[r][1]);
    }
  }
#pragma GCC unroll 12
  for (int r = 0; r < kMr; ++r) {
    _mm512_storeu_ps(t.g + r * kNr, acc[r][0]);
    _mm512_storeu_ps(t.g + r * kNr + 16, acc[r][1]);
  }
}

}  // namespace

MicroKernelInfo avx512MicroKernel() { return {run, kMr, kNr}; }

}  // namespace poseidon::kernels::cpu
