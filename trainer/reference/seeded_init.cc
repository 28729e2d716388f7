#include "trainer/reference/seeded_init.h"

namespace poseidon::trainer::reference {

float unitFloat(std::mt19937_64& rng) {
  constexpr double kScale = 1.0 / 16777216.0;  // 2^-24
  return static_cast<float>(static_cast<double>(rng() >> 40) * kScale);
}

void fillUniform(std::span<float> values, double bound, std::mt19937_64& rng) {
  for (float& value : values) {
    const double unit = static_cast<double>(unitFloat(rng));
    value = static_cast<float>((2.0 * unit - 1.0) * bound);
  }
}

uint64_t layerSeed(uint64_t seed, size_t layer) {
  // splitmix64 (Steele, Lea and Flood): a bijective mix, so distinct (seed, layer) pairs seldom meet.
  uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (static_cast<uint64_t>(layer) + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

}  // namespace poseidon::trainer::reference
