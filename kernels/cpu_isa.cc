#include "kernels/cpu_isa.h"

namespace poseidon::kernels {

bool cpuHasIsa(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kAuto:
    case CpuIsa::kGeneric: return true;
#if defined(__x86_64__)
    case CpuIsa::kAvx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case CpuIsa::kAvx512: return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
#endif
    default: return false;
  }
}

CpuIsa resolveIsa(CpuIsa isa) {
  if (isa != CpuIsa::kAuto) return isa;
  if (cpuHasIsa(CpuIsa::kAvx512)) return CpuIsa::kAvx512;
  if (cpuHasIsa(CpuIsa::kAvx2)) return CpuIsa::kAvx2;
  return CpuIsa::kGeneric;
}

const char* isaName(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kAuto: return "auto";
    case CpuIsa::kGeneric: return "generic";
    case CpuIsa::kAvx2: return "avx2";
    case CpuIsa::kAvx512: return "avx512";
  }
  return nullptr;
}

}  // namespace poseidon::kernels
