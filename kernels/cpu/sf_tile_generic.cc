// The portable tile kernel: std::fma is the IEEE fused multiply-add (one rounding) on every
// platform, in hardware where there is one, so this gives the vector kernels' bits everywhere.
#include <cmath>

#include "kernels/cpu/sf_tile.h"

namespace poseidon::kernels::cpu {
namespace {

struct Generic {
  static constexpr int mr = 4;
  static constexpr int nr = 8;

  static void accumulate(const Panels& p, float* g) {
    float acc[mr][nr] = {};
    const float* u = p.u;
    const float* v = p.v;
    for (size_t k = 0; k < p.depth; ++k, u += mr, v += nr) {
      for (int r = 0; r < mr; ++r) {
        for (int c = 0; c < nr; ++c) acc[r][c] = std::fma(u[r], v[c], acc[r][c]);
      }
    }
    for (int r = 0; r < mr; ++r) {
      for (int c = 0; c < nr; ++c) g[r * nr + c] = acc[r][c];
    }
  }

  template <ElementRule R>
  [[gnu::noinline]] static void update(size_t rows, size_t cols, size_t stride, const float* __restrict__ g,
                                       float* __restrict__ w, float* __restrict__ s0, float* __restrict__ s1,
                                       const OptimizerStep step) {
    updateTileBody<R, nr>(rows, cols, stride, g, w, s0, s1, step);
  }
};

}  // namespace

TileKernels genericTiles() { return tilesOf<Generic>(); }

}  // namespace poseidon::kernels::cpu
