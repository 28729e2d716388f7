// Which vector code a CPU twin runs. Every choice gives the same bits (the kernels are written so
// that they must, and the tests force each choice this CPU can run); kAuto picks the widest.
#pragma once

#include <cstdint>

namespace poseidon::kernels {

enum class CpuIsa : uint8_t { kAuto = 0, kGeneric = 1, kAvx2 = 2, kAvx512 = 3 };

// Whether this CPU runs the given code: kAvx2 needs AVX2 and FMA, kAvx512 AVX-512F and BW.
bool cpuHasIsa(CpuIsa isa);

// Whether this CPU converts halves in hardware (F16C, with the AVX state the OS must save).
bool cpuHasF16c();

// kAuto resolved to the widest this CPU has; other values unchanged.
CpuIsa resolveIsa(CpuIsa isa);

// "auto", "generic", "avx2", "avx512"; nullptr for a value outside the enum.
const char* isaName(CpuIsa isa);

}  // namespace poseidon::kernels
