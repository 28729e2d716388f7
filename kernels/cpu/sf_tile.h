// Inside the SF update's CPU twin (kernels/cpu/sf_update.cc): the micro-kernels that form one
// mr x nr tile of G from packed panels, one per instruction set.
//
// Panels: the driver copies U's rows i..i+mr and V's rows j..j+nr (for every peer, rank order)
// into k-major panels, U as [k'][mr] and V as [k'][nr] with k' = p * rank + k, zero-padded past
// the matrix edge. A micro-kernel then runs k' = 0, 1, ... and does g[r][c] = fma(u, v, g[r][c])
// for every element of the tile: each element sees exactly the order sf_update.h promises, in
// registers, however wide the vectors are. Every micro-kernel gives the same bits.
//
// The vector kernels live in their own files with [[gnu::target]] on each function, not per-file
// -m flags: the element functions and the standard library are inline in our headers, and a copy
// compiled for AVX-512 in one file could be the one the linker keeps for every caller. That is
// also why the AVX2 and AVX-512 kernels are two short functions of the same shape rather than one
// template: a target attribute cannot depend on a template parameter.
#pragma once

#include <cstddef>

namespace poseidon::kernels::cpu {

struct MicroTile {
  const float* u_panel;  // depth x mr
  const float* v_panel;  // depth x nr
  size_t depth;          // P * rank
  float* g;              // mr x nr, row-major, out
};

using MicroKernel = void (*)(const MicroTile&);

struct MicroKernelInfo {
  MicroKernel run;
  int mr;
  int nr;
};

MicroKernelInfo genericMicroKernel();  // any x86-64 or other CPU: scalar std::fma
MicroKernelInfo avx2MicroKernel();     // 6 x 16, needs AVX2 + FMA
MicroKernelInfo avx512MicroKernel();   // 12 x 32, needs AVX-512F

}  // namespace poseidon::kernels::cpu
