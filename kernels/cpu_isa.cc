#include "kernels/cpu_isa.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

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

bool cpuHasF16c() {
#if defined(__x86_64__)
  // CPUID leaf 1, not __builtin_cpu_supports: clang before 16 does not know "f16c" there. Asked
  // once: in a virtual machine every CPUID exits to the hypervisor.
  static const bool has = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __builtin_cpu_supports("avx") && __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
  }();
  return has;
#else
  return false;
#endif
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
