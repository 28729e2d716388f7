// Seeded, portable parameter initialisation: the same seed gives the same bits on every machine
// and standard library.
//
// std::mt19937_64's output is fixed by the standard, but std::uniform_real_distribution and
// std::normal_distribution are not (each library turns the integers into floats its own way), so
// the conversion to float is ours: 24 random bits scaled by 2^-24, exact in float and double.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <span>

namespace poseidon::trainer::reference {

// A float in [0, 1), a multiple of 2^-24, from the top 24 bits of one draw.
float unitFloat(std::mt19937_64& rng);

// Each value uniform in [-bound, bound), drawn in order. (2u - 1) * bound is evaluated in double
// (exact but for the last multiply, which IEEE rounds the same everywhere) and rounded to float.
void fillUniform(std::span<float> values, double bound, std::mt19937_64& rng);

// The seed of a network's parametric layer `layer` (0-based): splitmix64 of the network's seed
// and the index, so each layer's draws stay the same when another layer changes size.
uint64_t layerSeed(uint64_t seed, size_t layer);

}  // namespace poseidon::trainer::reference
