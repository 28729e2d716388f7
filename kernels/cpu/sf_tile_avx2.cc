// AVX2 + FMA micro-kernel: a 6 x 16 tile in 12 ymm accumulators (of 16 registers), two vector
// loads of V and six broadcasts of U per k' for 12 FMAs.
#include <immintrin.h>

#include "kernels/cpu/sf_tile.h"

namespace poseidon::kernels::cpu {
namespace {

constexpr int kMr = 6;
constexpr int kNr = 16;

[[gnu::target("avx2,fma")]] void run(const MicroTile& t) {
  __m256 acc[kMr][2];
#pragma GCC unroll 6
  for (int r = 0; r < kMr; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  const float* u = t.u_panel;
  const float* v = t.v_panel;
  for (size_t k = 0; k < t.depth; ++k, u += kMr, v += kNr) {
    const __m256 v0 = _mm256_loadu_ps(v);
    const __m256 v1 = _mm256_loadu_ps(v + 8);
#pragma GCC unroll 6
    for (int r = 0; r < kMr; ++r) {
      const __m256 b = _mm256_broadcast_ss(u + r);
      acc[r][0] = _mm256_fmadd_ps(b, v0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(b, v1, acc[r][1]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < kMr; ++r) {
    _mm256_storeu_ps(t.g + r * kNr, acc[r][0]);
    _mm256_storeu_ps(t.g + r * kNr + 8, acc[r][1]);
  }
}

}  // namespace

MicroKernelInfo avx2MicroKernel() { return {run, kMr, kNr}; }

}  // namespace poseidon::kernels::cpu
