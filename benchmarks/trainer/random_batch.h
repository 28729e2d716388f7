// One fixed batch of random 28 x 28 images and labels for the Fashion-MNIST CNN: what the
// trainer benchmarks feed it every iteration (the compute does not depend on the pixels' values).
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "trainer/reference/fashion_cnn.h"
#include "trainer/reference/seeded_init.h"

namespace poseidon::trainer::reference {

struct RandomBatch {
  explicit RandomBatch(size_t batch, uint64_t seed = 2) : images(batch * 28 * 28), labels(batch) {
    std::mt19937_64 rng(seed);
    for (float& v : images) v = unitFloat(rng);
    for (int32_t& label : labels) label = static_cast<int32_t>(rng() % kFashionClasses);
  }
  std::vector<float> images;
  std::vector<int32_t> labels;
};

}  // namespace poseidon::trainer::reference
