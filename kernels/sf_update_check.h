// The argument check shared by the SF update's CPU twin, its CUDA launcher and the dispatch layer.
#pragma once

#include <string>

#include "kernels/sf_update.h"

namespace poseidon::kernels {

// Empty when the update can run; else what is wrong, naming the field: the step and the state it
// needs, non-null params and factors, as many V as U (at least one), a known method and isa, and
// no written buffer overlapping another buffer (factors included). Only addresses are compared,
// so device pointers (the CUDA twin's) are checked the same way.
std::string sfUpdateProblem(const SfUpdate& update);

// sfUpdateProblem(), and for the CPU twin also: kBlas in a build without OpenBLAS, an isa this
// CPU cannot run.
std::string sfUpdateCpuProblem(const SfUpdate& update);

}  // namespace poseidon::kernels
