// Inside the SF update's CPU twin (kernels/cpu/sf_update.cc): the tile kernels, one set per
// instruction set, that form one mr x nr tile of G from packed panels and apply the optimizer to
// that tile of W.
//
// Panels: the driver copies U's rows i..i+mr and V's rows j..j+nr (for every peer, rank order)
// into k-major panels, U as [k'][mr] and V as [k'][nr] with k' = p * rank + k, zero-padded past
// the matrix edge. A tile kernel runs k' = 0, 1, ... and does g[r][c] = fma(u, v, g[r][c]) for
// every element of the tile: each element sees exactly the order sf_update.h promises, in
// registers, however wide the vectors are. Then, while the tile is in L1, each row of it goes
// through the optimizer's element functions (an update loop compiled for the same instruction
// set). Every tile kernel gives the same bits.
//
// The vector kernels live in their own files with [[gnu::target]] on each function, not per-file
// -m flags: the element functions and the standard library are inline in our headers, and a copy
// compiled for AVX-512 in one file could be the one the linker keeps for every caller (a callee
// inlined into a target function is compiled for that target only there). That is also why the
// AVX2 and AVX-512 accumulations are two short functions of the same shape rather than one
// template: a target attribute cannot depend on a template parameter.
#pragma once

#include <cstddef>

#include "kernels/optimizer_element.h"

namespace poseidon::kernels::cpu {

struct Panels {
  const float* u;  // depth x mr
  const float* v;  // depth x nr
  size_t depth;    // P * rank
};

// The part of W (and its state) a tile updates: rows x cols at row stride `stride`.
struct TileTarget {
  float* w;
  float* state0;  // null where the rule has no such state
  float* state1;
  size_t stride;
  size_t rows;  // <= mr
  size_t cols;  // <= nr
};

using TileKernel = void (*)(const Panels& panels, const TileTarget& target, const OptimizerStep& step);

struct TileKernels {
  int mr;
  int nr;
  TileKernel rule[5];  // indexed by ElementRule
  TileKernel forRule(ElementRule r) const { return rule[static_cast<int>(r)]; }
};

TileKernels genericTiles();  // any CPU: std::fma
TileKernels avx2Tiles();     // 6 x 16, needs AVX2 + FMA
TileKernels avx512Tiles();   // 12 x 32, needs AVX-512F

// The optimizer over a tile g (rows x cols, row stride Nr) and the same tile of W and its state
// (row stride `stride`). Always inlined into each file's update<R>, so that file's target sets
// the vector width; a full tile (cols == Nr, nearly all of them) has a constant trip count and
// vectorises without a remainder.
template <ElementRule R, int Nr>
[[gnu::always_inline]] inline void updateTileBody(size_t rows, size_t cols, size_t stride, const float* __restrict__ g,
                                                  float* __restrict__ w, float* __restrict__ s0, float* __restrict__ s1,
                                                  const OptimizerStep& step) {
  if (cols == static_cast<size_t>(Nr)) {
    for (size_t r = 0; r < rows; ++r) {
      for (int c = 0; c < Nr; ++c) updateElementAt<R>(g[r * Nr + c], r * stride + c, w, s0, s1, step);
    }
    return;
  }
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < cols; ++c) updateElementAt<R>(g[r * Nr + c], r * stride + c, w, s0, s1, step);
  }
}

// A tile kernel from an instruction set's parts, each compiled for it in its own file:
//   struct Isa {
//     static constexpr int mr, nr;
//     static void accumulate(const Panels&, float* g);  // g: mr x nr, 64-byte aligned
//     template <ElementRule R> static void update(rows, cols, stride, g, w, s0, s1, step);
//   };                                                  // (updateTileBody<R, nr>, __restrict__)
// Isa lives in an anonymous namespace, so these instantiations are private to that file.
template <typename Isa, ElementRule R>
void tileOf(const Panels& panels, const TileTarget& target, const OptimizerStep& step) {
  alignas(64) float g[Isa::mr * Isa::nr];
  Isa::accumulate(panels, g);
  Isa::template update<R>(target.rows, target.cols, target.stride, g, target.w, target.state0, target.state1, step);
}

template <typename Isa>
TileKernels tilesOf() {
  return {
      Isa::mr,
      Isa::nr,
      {tileOf<Isa, ElementRule::kSgd>, tileOf<Isa, ElementRule::kSgdMomentum>, tileOf<Isa, ElementRule::kSgdNesterov>,
       tileOf<Isa, ElementRule::kAdagrad>, tileOf<Isa, ElementRule::kAdam>}};
}

}  // namespace poseidon::kernels::cpu
