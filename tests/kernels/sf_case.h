// One SF update's host buffers filled with random values, for the kernel suites: W and its
// optimizer state (an UpdateCase without gradients, so the same value ranges and unaligned
// buffers), and P peers' factors U_p (rows x rank) and V_p (cols x rank), also unaligned.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "kernels/sf_update.h"
#include "tests/kernels/update_case.h"

namespace poseidon::kernels {

struct SfShape {
  size_t rows, cols, rank, peers;
};

// "37x13_k5_p3": for test names.
std::string shapeName(const SfShape& shape);
// GoogleTest prints parameters with it (found by argument-dependent lookup).
inline void PrintTo(const SfShape& shape, std::ostream* out) { *out << shapeName(shape); }

// Random shapes from a fixed seed, plus edges: one element; widths one off the AVX-512 tile
// (12 x 32) and the AVX2 tile (6 x 16); rank 0 (G = 0, decay alone moves W); a depth of 1024
// whose V panels overflow the CPU twin's 1 MiB block (so columns come in several blocks); and
// sizes off the CUDA kernel's 128 x 128 tiles.
std::vector<SfShape> testShapes();

struct SfCase {
  SfCase(ElementRule rule, SfShape shape, uint32_t seed);
  SfCase(const SfCase&) = delete;  // the pointer spans point into this object's buffers
  SfCase& operator=(const SfCase&) = delete;

  // New factors for the next step.
  void newFactors();
  // The update of step t over these buffers (testStep() with 1/P), exact method, isa auto.
  SfUpdate update(uint64_t t);
  // G[i][j] exactly (double) and the sum of its terms' absolute values, for the reference.
  std::pair<double, double> exactGradient(size_t i, size_t j) const;

  SfShape shape;
  UpdateCase weights;  // params, state0, state1: rows * cols elements
  std::vector<UnalignedBuffer> u, v;
  std::vector<const float*> u_pointers, v_pointers;
};

}  // namespace poseidon::kernels
