// CPU twin of the fused SF reconstruction + update, exact method (kernels/sf_update.h).
//
// Cache blocking in the GotoBLAS manner, minus the k split: every U_p's rows are copied once
// into k-major panels of mr rows (all peers, rank order); a block of nc columns of every V_p
// likewise into panels of nr columns, sized so the block stays in L2 (512 KiB) while every strip
// of rows passes over it; and a tile kernel (kernels/cpu/sf_tile.h) forms each mr x nr tile of
// G in registers over the whole depth P * rank, in the promised order, and puts it straight
// through the optimizer's update loop while it is in L1. W and its state are read and written
// once; G never exists as a matrix. The depth is not split into blocks: the panels of SF ranks
// (a batch: 32..1024 with all peers) fit L2 whole, so splitting would only add passes over G.
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

using cpu::TileKernels;

// V's packed block: its panels are read once per strip of mr rows, so they should stay in L2.
constexpr size_t kVBlockBytes = size_t{512} << 10;

// W's rows of a tile are 128 bytes of a 16 KiB row at a time (a 4096-wide layer): too short a
// run for the hardware prefetchers, and at shallow depths a tile computes in a few hundred cycles,
// less than a trip to DRAM. So each tile's rows of W and its state are requested (into L2) this
// many bytes of them ahead: about a fifth of a 2 MiB L2, far enough for any depth (measured: at depth
// 32 with momentum, 8 tiles ahead gave ~0.7 of sgemm, this ~0.8), near enough to be there still.
constexpr size_t kPrefetchBytes = size_t{384} << 10;

void prefetch(const cpu::TileTarget& t) {
  for (size_t r = 0; r < t.rows; ++r) {
    for (size_t c = 0; c < t.cols; c += 16) {  // one 64-byte line each
      const size_t at = r * t.stride + c;
      __builtin_prefetch(t.w + at, 1, 2);  // for writing, into L2
      if (t.state0 != nullptr) __builtin_prefetch(t.state0 + at, 1, 2);
      if (t.state1 != nullptr) __builtin_prefetch(t.state1 + at, 1, 2);
    }
  }
}

TileKernels tilesFor(CpuIsa isa) {
  switch (resolveIsa(isa)) {
    case CpuIsa::kAvx512: return cpu::avx512Tiles();
    case CpuIsa::kAvx2: return cpu::avx2Tiles();
    default: return cpu::genericTiles();
  }
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

// Every strip of `width` rows of the factors (count rows in all) as panels, one after another.
void packPanels(std::span<const float* const> factors, size_t rank, size_t first, size_t count, size_t width,
                float* panels) {
  const size_t depth = factors.size() * rank;
  for (size_t s = 0; s * width < count; ++s) {
    packPanel(factors, rank, first + s * width, std::min(width, count - s * width), width, panels + s * depth * width);
  }
}

void runExact(const SfUpdate& u, const TileKernels& tiles) {
  thread_local cpu::Scratch u_scratch, v_scratch;
  const cpu::TileKernel tile = tiles.forRule(elementRule(u.step));
  const size_t mr = static_cast<size_t>(tiles.mr), nr = static_cast<size_t>(tiles.nr);
  const size_t depth = u.u.size() * u.rank;
  const size_t strip_bytes = std::max<size_t>(depth, 1) * nr * sizeof(float);
  const size_t nc = std::min(std::max<size_t>(1, kVBlockBytes / strip_bytes) * nr, (u.cols + nr - 1) / nr * nr);
  const size_t row_strips = (u.rows + mr - 1) / mr;
  float* const u_panels = u_scratch.floats(row_strips * depth * mr);
  float* const v_block = v_scratch.floats(depth * nc);
  packPanels(u.u, u.rank, 0, u.rows, mr, u_panels);

  const auto words = static_cast<size_t>(stateWords(u.step.kind, u.step.momentum));
  const size_t tile_bytes = mr * nr * sizeof(float) * (1 + words);
  const size_t prefetch_ahead = std::max<size_t>(2, kPrefetchBytes / tile_bytes);
  // Tiles in the order they run, so the one prefetch_ahead later can be named.
  const auto target = [&](size_t i0, size_t j) {
    const size_t at = i0 * u.cols + j;
    return cpu::TileTarget{u.params + at, cpu::offsetOrNull(u.state0, at), cpu::offsetOrNull(u.state1, at),
                           u.cols,        std::min(mr, u.rows - i0),       std::min(nr, u.cols - j)};
  };
  for (size_t j0 = 0; j0 < u.cols; j0 += nc) {
    const size_t block_cols = std::min(nc, u.cols - j0);
    const size_t col_strips = (block_cols + nr - 1) / nr;
    packPanels(u.v, u.rank, j0, block_cols, nr, v_block);
    for (size_t t = 0, count = row_strips * col_strips; t < count; ++t) {
      const size_t is = t / col_strips, js = t % col_strips;
      if (const size_t ahead = t + prefetch_ahead; ahead < count) {
        prefetch(target((ahead / col_strips) * mr, j0 + (ahead % col_strips) * nr));
      }
      tile({u_panels + is * depth * mr, v_block + js * depth * nr, depth}, target(is * mr, j0 + js * nr), u.step);
    }
  }
}

}  // namespace

bool sfBlasAvailable() { return cpu::haveSfBlas(); }

void sfUpdateCpu(const SfUpdate& update) {
  if (std::string problem = sfUpdateCpuProblem(update); !problem.empty()) {
    throw std::invalid_argument("sfUpdateCpu: " + problem);
  }
  if (update.rows == 0 || update.cols == 0) return;
  if (update.method == SfMethod::kBlas) {
    withElementRule(elementRule(update.step),
                    [&](auto rule) { cpu::sfUpdateBlas(update, cpu::rowUpdate<decltype(rule)::value>); });
  } else {
    runExact(update, tilesFor(update.isa));
  }
}

}  // namespace poseidon::kernels
