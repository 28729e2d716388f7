#include "kernels/sf_bias.h"

namespace poseidon::kernels {

void sfBiasGradient(size_t rows, size_t rank, std::span<const float* const> u, float* out) {
  for (size_t i = 0; i < rows; ++i) {
    float g = 0.0f;
    for (const float* up : u) {
      const float* row = up + i * rank;
      float r = 0.0f;
      for (size_t k = 0; k < rank; ++k) r += row[k];
      g += r;
    }
    out[i] = g;
  }
}

}  // namespace poseidon::kernels
