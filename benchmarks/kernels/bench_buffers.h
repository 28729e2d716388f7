// Buffers for the kernel benchmarks: 64-byte aligned and written once before timing (so pages are
// faulted in and no benchmark pays for first touch), with values that keep every optimizer and
// conversion on its normal path (no denormals, no infinities).
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>
#include <random>

namespace poseidon::bench {

struct FreeFloats {
  void operator()(float* p) const { std::free(p); }
};
using Floats = std::unique_ptr<float[], FreeFloats>;

// `count` floats uniform in [low, high).
inline Floats randomFloats(size_t count, float low, float high, unsigned seed) {
  void* p = std::aligned_alloc(64, (count * sizeof(float) + 63) / 64 * 64);
  if (p == nullptr) throw std::bad_alloc();
  Floats floats(static_cast<float*>(p));
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> value(low, high);
  for (size_t i = 0; i < count; ++i) floats[i] = value(random);
  return floats;
}

}  // namespace poseidon::bench
