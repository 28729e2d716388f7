// The argument check shared by the CPU twin and the CUDA launcher.
//
// A bad ChunkUpdate is a bug in our own caller (the server builds them from its layout), so the
// CPU twin throws and the CUDA launcher returns cudaErrorInvalidValue; both say the same thing.
#pragma once

#include <string>

#include "kernels/chunk_update.h"

namespace poseidon::kernels {

// Empty when the update can run; else what is wrong, naming the field ("state1 is null but adam
// needs 2 state words per parameter"). Checks: a known optimizer kind, non-null params, at least
// one gradient and none null, the state pointers the kind needs, and that no buffer the update
// writes overlaps another buffer it touches (the CPU loop relies on that to vectorise).
std::string chunkUpdateProblem(const ChunkUpdate& update);

}  // namespace poseidon::kernels
