// The argument check shared by the pack / unpack CPU twins, the CUDA launchers and the dispatch
// layer. As with the chunk update, a bad job is a bug in our own caller: the CPU twins throw and
// the CUDA launchers return cudaErrorInvalidValue, both with this message.
#pragma once

#include <string>

#include "kernels/pack.h"

namespace poseidon::kernels {

// Empty when the job can run; else what is wrong, naming the field and value. With
// `pieces_readable` (host memory: the CPU twin) each piece is checked too: a non-null tensor
// where count > 0, offset + count within packed_count, offsets ascending without overlap, and
// an isa this CPU runs. The CUDA launcher's table lives on the
// device, so there only the job's own fields are checked.
std::string packProblem(const PackJob& job, bool pieces_readable);

}  // namespace poseidon::kernels
