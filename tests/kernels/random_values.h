// Random test values from std::mt19937 without <random>'s real distributions. libstdc++'s
// std::generate_canonical, under every one of them, takes the long-double logarithm of a constant
// for each value: GCC folds it at compile time, clang does not. In clang's ASan build that was
// three quarters of kernels_chunk_update_test's CPU (56 s of CPU against GCC's 13 s).
#pragma once

#include <random>

namespace poseidon::kernels {

// Uniform in [low, high] from 24 random bits (rounding may give `high` itself).
inline float uniformFloat(std::mt19937& random, float low, float high) {
  const float unit = static_cast<float>(random() >> 8) * 0x1p-24f;
  return low + (high - low) * unit;
}

}  // namespace poseidon::kernels
