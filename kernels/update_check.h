// Pieces of the argument checks every update kernel shares (the chunk update, the SF update):
// the optimizer step, the state buffers it needs, and that nothing written overlaps anything
// else touched (the CPU loops rely on that to vectorise, the GPU on it for a race-free pass).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/optimizer_step.h"

namespace poseidon::kernels {

// Empty, or what is wrong: a kind outside the enum ("step.kind 7 is not ..."), or a null state
// pointer the kind needs ("state1 is null but adam needs 2 state word(s) per parameter").
std::string stepProblem(const OptimizerStep& step, const float* state0, const float* state1);

// A buffer as a byte range; compared as integers because ordering pointers into different
// arrays is unspecified in C++.
struct BufferRange {
  std::string name;
  uintptr_t begin;
  uintptr_t end;
};

BufferRange rangeOf(std::string name, const float* p, size_t count);

// The buffers an update writes (params and the state words the step needs), each `count` floats.
std::vector<BufferRange> writtenRanges(const OptimizerStep& step, float* params, float* state0, float* state1,
                                       size_t count);

// Empty, or "<written> overlaps <other> (...)" for the first written range that overlaps another
// written one or any of `read`.
std::string overlapProblem(const std::vector<BufferRange>& written, const std::vector<BufferRange>& read);

}  // namespace poseidon::kernels
