// Fused chunk update: sum the workers' gradients of one chunk in rank order and apply one
// optimizer step, in a single pass over the chunk.
//
// The sum is ((g_0 + g_1) + g_2) + ... in the order given, whatever order the pushes arrived
// in, so every run (and every replica) gets the same bits. The CPU twin and the CUDA kernel are
// built from the same element functions (kernels/optimizer_element.h).
#pragma once

#include <cstddef>
#include <span>

#include "kernels/optimizer_step.h"

namespace poseidon::kernels {

struct ChunkUpdate {
  float* params = nullptr;
  float* state0 = nullptr;                  // stateWords() >= 1: velocity / sum of squares / first moment
  float* state1 = nullptr;                  // stateWords() == 2: Adam's second moment
  size_t count = 0;                         // elements
  std::span<const float* const> gradients;  // rank order; at least one
  OptimizerStep step;
};

// CPU twin.
void chunkUpdateCpu(const ChunkUpdate& update);

}  // namespace poseidon::kernels
