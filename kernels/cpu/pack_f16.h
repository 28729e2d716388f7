// Inside the pack / unpack CPU twin: binary16 through the CPU's own conversion instructions
// (F16C), which give exactly convert_element.h's bits on every input (tests/kernels/convert_test.cc
// checks all 65536 patterns one way and ~1.2 million floats the other). The software conversion
// is a dozen vector operations per element; the instruction is one per eight.
#pragma once

#include <cstddef>
#include <cstdint>

namespace poseidon::kernels::cpu {

// Only where cpuHasF16c() (kernels/cpu_isa.h) holds.
void packF16c(size_t count, const float* tensor, uint16_t* packed, float scale);
void unpackF16c(size_t count, const uint16_t* packed, float* tensor, float scale);

}  // namespace poseidon::kernels::cpu
