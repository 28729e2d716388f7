// The portable micro-kernel: std::fma is the IEEE fused multiply-add (one rounding) on every
// platform, in hardware where there is one, so this gives the vector kernels' bits everywhere.
#include <cmath>

#include "kernels/cpu/sf_tile.h"

namespace poseidon::kernels::cpu {
namespace {

constexpr int kMr = 4;
constexpr int kNr = 8;

void run(const MicroTile& t) {
  float g[kMr][kNr] = {};
  const float* u = t.u_panel;
  const float* v = t.v_panel;
  for (size_t k = 0; k < t.depth; ++k, u += kMr, v += kNr) {
    for (int r = 0; r < kMr; ++r) {
      for (int c = 0; c < kNr; ++c) g[r][c] = std::fma(u[r], v[c], g[r][c]);
    }
  }
  for (int r = 0; r < kMr; ++r) {
    for (int c = 0; c < kNr; ++c) t.g[r * kNr + c] = g[r][c];
  }
}

}  // namespace

MicroKernelInfo genericMicroKernel() { return {run, kMr, kNr}; }

}  // namespace poseidon::kernels::cpu
