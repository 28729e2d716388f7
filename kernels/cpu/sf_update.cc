// CPU twin of the fused SF reconstruction + update, exact method (kernels/sf_update.h).
//
// Cache blocking in the GotoBLAS manner, minus the k split: a block of nc columns of every V_p is
// copied into k-major panels sized to stay in L2 (1 MiB); for each strip of mr rows the U_p rows
// are copied into one small panel (L1); a micro-kernel (kernels/cpu/sf_tile.h) forms each
// mr x nr tile of G in registers over the whole depth P * rank, in the promised order; and the
// tile goes straight into the optimizer's update loop (kernels/cpu/update_loop.h) while it is
// still in L1. W and its state are read and written once; G never exists as a matrix. The
// depth is not split into blocks, because that would need G's partial sums in memory and SF
// ranks are small (a batch: 32..1024 with all peers).
#include <algorithm>
#include <stdexcept>

#include "kernels/cpu/scratch.h"
#include "kernels/cpu/sf_blas.h"
#include "kernels/cpu/sf_tile.h"
#include "kernels/cpu/update_loop.h"
#include "kernels/sf_update.h"
#include "kernels/sf_update_check.h"

namespace poseidon::kernels {
namespace {

using cpu::MicroKernelInfo;

// V's packed block: its panels are read once per strip of mr rows, so they should stay in L2.
constexpr size_t kVBlockBytes = size_t{1} << 20;

MicroKernelInfo microKernelFor(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kGeneric: return cpu::genericMicroKernel();
    case CpuIsa::kAvx2: return cpu::avx2MicroKernel();
    case CpuIsa::kAvx512: return cpu::avx512MicroKernel();
    case CpuIsa::kAuto: break;
  }
  if (cpuHasIsa(CpuIsa::kAvx512)) return cpu::avx512MicroKernel();
  if (cpuHasIsa(CpuIsa::kAvx2)) return cpu::avx2MicroKernel();
  return cpu::genericMicroKernel();
}

// panel[(p * rank + k) * width + c] = factor_p[(first + c) * rank + k] for the `valid` rows of
// the factors starting at `first`; 0 for c in [valid, width).
void packPanel(std::span<const float* const> factors, size_t rank, size_t first, size_t valid, size_t width,
               float* panel) {
  const size_t depth = factors.size() * rank;
  for (size_t c = 0; c < width; ++c) {
    if (c >= valid) {
      for (size_t k = 0; k < depth; ++k) panel[k * width + c] = 0.0f;
      continue;
    }
    for (size_t p = 0; p < factors.size(); ++p) {
      const float* row = factors[p] + (first + c) * rank;
      float* out = panel + p * rank * width + c;
      for (size_t k = 0; k < rank; ++k) out[k * width] = row[k];
    }
  }
}

template <ElementRule R>
void runExact(const SfUpdate& u, const MicroKernelInfo& micro) {
  thread_local cpu::Scratch u_scratch, v_scratch, g_scratch;
  const size_t mr = static_cast<size_t>(micro.mr), nr = static_cast<size_t>(micro.nr);
  const size_t depth = u.u.size() * u.rank;
  const size_t strip_bytes = std::max<size_t>(depth, 1) * nr * sizeof(float);
  const size_t strips_per_block = std::max<size_t>(1, kVBlockBytes / strip_bytes);
  const size_t nc = std::min(strips_per_block * nr, (u.cols + nr - 1) / nr * nr);
  float* const u_panel = u_scratch.floats(depth * mr);
  float* const v_block = v_scratch.floats(depth * nc);
  float* const g = g_scratch.floats(mr * nr);
  const OptimizerStep step = u.step;

  for (size_t j0 = 0; j0 < u.cols; j0 += nc) {
    const size_t block_cols = std::min(nc, u.cols - j0);
    const size_t strips = (block_cols + nr - 1) / nr;
    for (size_t s = 0; s < strips; ++s) {
      const size_t first = j0 + s * nr;
      packPanel(u.v, u.rank, first, std::min(nr, u.cols - first), nr, v_block + s * depth * nr);
    }
    for (size_t i0 = 0; i0 < u.rows; i0 += mr) {
      const size_t rows = std::min(mr, u.rows - i0);
      packPanel(u.u, u.rank, i0, rows, mr, u_panel);
      for (size_t s = 0; s < strips; ++s) {
        const size_t j = j0 + s * nr;
        const size_t cols = std::min(nr, u.cols - j);
        micro.run({u_panel, v_block + s * depth * nr, depth, g});
        for (size_t r = 0; r < rows; ++r) {
          const size_t at = (i0 + r) * u.cols + j;
          const float* gr = g + r * nr;
          cpu::fusedLoop<R, 1>(cols, gr, gr, gr, gr, u.params + at, cpu::offsetOrNull(u.state0, at),
                               cpu::offsetOrNull(u.state1, at), step);
        }
      }
    }
  }
}

}  // namespace

bool cpuHasIsa(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kAuto:
    case CpuIsa::kGeneric: return true;
#if defined(__x86_64__) || defined(__i386__)
    case CpuIsa::kAvx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case CpuIsa::kAvx512: return __builtin_cpu_supports("avx512f");
#endif
    default: return false;
  }
}

bool sfBlasAvailable() { return cpu::haveSfBlas(); }

void sfUpdateCpu(const SfUpdate& update) {
  if (std::string problem = sfUpdateCpuProblem(update); !problem.empty()) {
    throw std::invalid_argument("sfUpdateCpu: " + problem);
  }
  if (update.rows == 0 || update.cols == 0) return;
  withElementRule(elementRule(update.step), [&](auto rule) {
    constexpr ElementRule R = decltype(rule)::value;
    if (update.method == SfMethod::kBlas) {
      cpu::sfUpdateBlas(update, [](size_t count, const float* g, float* w, float* s0, float* s1,
                                   const OptimizerStep& step) { cpu::fusedLoop<R, 1>(count, g, g, g, g, w, s0, s1, step); });
    } else {
      runExact<R>(update, microKernelFor(update.isa));
    }
  });
}

}  // namespace poseidon::kernels
