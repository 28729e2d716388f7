// The permutation of a training set for one epoch, from (seed, epoch): the same bits with every
// compiler and standard library. std::shuffle and std::uniform_int_distribution are
// implementation-defined, so they are not used; std::mt19937_64's output is specified by the
// standard, and the seed mixing, the bounded draw and the Fisher-Yates loop are written here.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace poseidon::trainer::data {

// The engine's seed for an epoch: splitmix64's finaliser over the seed and the epoch, so that
// neighbouring seeds and epochs give unrelated streams.
uint64_t epochEngineSeed(uint64_t seed, uint64_t epoch);

// Uniform in [0, bound) (bound > 0): draws below 2^64 mod bound are rejected so that every
// residue is equally likely, then the draw is reduced mod bound.
uint64_t boundedDraw(std::mt19937_64& engine, uint64_t bound);

// Fills `out` with a permutation of 0..out.size()-1: the identity, then Fisher-Yates from the
// last position down (position i swaps with boundedDraw(i + 1)). No allocation.
void epochPermutation(uint64_t seed, uint64_t epoch, std::span<uint32_t> out);

// The same, allocating: n indices.
std::vector<uint32_t> epochPermutation(uint64_t seed, uint64_t epoch, uint32_t n);

}  // namespace poseidon::trainer::data
