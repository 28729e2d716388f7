// Fused sufficient-factor reconstruction + update: one optimizer step on a fully-connected
// layer's M x N weight W from P peers' factors, G = sum_p U_p V_p^T, without materialising G.
//
// Each element's gradient is accumulated in one float in a fixed order, p ascending (rank
// order) and within each p, k ascending, starting from +0, with one fused multiply-add per term:
//   g = 0; for p: for k: g = fma(U_p[i][k], V_p[j][k], g)
// An FMA is one IEEE operation (single rounding), so the CPU twin (whatever its vector width) and
// the CUDA kernel give the same bits, and every SFB replica stays identical. (Contraction is off
// for these targets only so the compiler never fuses a*b+c on its own; the explicit fma here is
// a different thing.) The update then applies the same element functions as the chunk update
// (kernels/optimizer_element.h) to g: grad_scale (1/P), weight decay, SGD+momentum / Adagrad /
// Adam. An SFB peer and a server that pushed G through chunkUpdateCpu() agree to the bit when G
// was built in this order (tests/kernels/sf_update_test.cc checks it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/cpu_isa.h"
#include "kernels/optimizer_step.h"

namespace poseidon::kernels {

// How the CPU twin forms G.
enum class SfMethod : uint8_t {
  // The order above, bit-identical to the CUDA kernel and across machines. The default.
  kExact = 1,
  // OpenBLAS sgemm of the peers' factors side by side (one product of depth P * rank) into a
  // block of G's rows, then the same epilogue. NOT replica-exact: the order of the sum inside
  // sgemm depends on OpenBLAS's kernel for the CPU, its blocking and threads. Only where built
  // with OpenBLAS; measured slower than kExact on an AVX-512 Xeon (README.md's figures).
  kBlas = 2,
};

struct SfUpdate {
  // W and its optimizer state: rows x cols, row-major, row stride cols.
  float* params = nullptr;
  float* state0 = nullptr;  // stateWords() >= 1
  float* state1 = nullptr;  // stateWords() == 2
  size_t rows = 0;          // M
  size_t cols = 0;          // N
  size_t rank = 0;          // K: columns of each factor
  // One U_p (rows x rank, row-major) and one V_p (cols x rank, row-major) per peer, rank order.
  // To update a band of rows only (one thread per band, say), pass params and state + i0 * cols,
  // U_p + i0 * rank with rows = the band's height: rows are independent.
  std::span<const float* const> u;
  std::span<const float* const> v;
  OptimizerStep step;  // grad_scale is usually 1/P
  SfMethod method = SfMethod::kExact;
  CpuIsa isa = CpuIsa::kAuto;  // the exact method's vector code on the CPU (kernels/cpu_isa.h)
};

// CPU twin. Throws std::invalid_argument (sfUpdateCpuProblem()'s message) for a bad update, kBlas
// in a build without OpenBLAS or an isa this CPU cannot run. It keeps per-thread scratch for
// the packed factors (rows x depth floats of U and a 512 KiB block of V; kBlas: cols x depth and
// a 16 MiB block of G), allocated by the first call that needs that much and reused after.
void sfUpdateCpu(const SfUpdate& update);

// Whether this build has the kBlas method.
bool sfBlasAvailable();

}  // namespace poseidon::kernels
