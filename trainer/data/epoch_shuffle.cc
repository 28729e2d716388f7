#include "trainer/data/epoch_shuffle.h"

#include <numeric>
#include <utility>

namespace poseidon::trainer::data {

uint64_t epochEngineSeed(uint64_t seed, uint64_t epoch) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (epoch + 1);  // splitmix64's increment, epoch+1 steps on
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t boundedDraw(std::mt19937_64& engine, uint64_t bound) {
  const uint64_t reject_below = (0 - bound) % bound;  // 2^64 mod bound
  uint64_t draw = engine();
  while (draw < reject_below) draw = engine();
  return draw % bound;
}

void epochPermutation(uint64_t seed, uint64_t epoch, std::span<uint32_t> out) {
  std::iota(out.begin(), out.end(), uint32_t{0});
  std::mt19937_64 engine(epochEngineSeed(seed, epoch));
  for (size_t i = out.size(); i > 1; --i) {
    const uint64_t j = boundedDraw(engine, i);
    std::swap(out[i - 1], out[j]);
  }
}

std::vector<uint32_t> epochPermutation(uint64_t seed, uint64_t epoch, uint32_t n) {
  std::vector<uint32_t> out(n);
  epochPermutation(seed, epoch, std::span<uint32_t>(out));
  return out;
}

}  // namespace poseidon::trainer::data
