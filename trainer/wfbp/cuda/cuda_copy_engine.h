// The CUDA CopyEngine: copy streams from a pool (non-blocking, so they never wait for the legacy
// default stream), one event per slot and direction. Compiled in every build that finds the
// toolkit; the runtime is linked statically and a machine without a GPU or driver gets nullptr
// here, and the CPU twin instead (copy_engine.h's builtinCopyEngine).
#pragma once

#include <memory>

#include "trainer/wfbp/copy_engine.h"

namespace poseidon::trainer::cuda {

// nullptr when no CUDA device can be used here.
std::shared_ptr<CopyEngine> makeCudaCopyEngine();

}  // namespace poseidon::trainer::cuda
