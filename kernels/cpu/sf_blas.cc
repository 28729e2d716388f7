// SfMethod::kBlas: for each block of rows, G_block = sum_p U_p[block] V_p^T by one sgemm per peer
// (beta 0 for the first, 1 after, so peers are still added in rank order), then the update loop
// over the block while it is in L2. OpenBLAS chooses the order of the k sum inside each sgemm
// (its kernel, blocking and threads), so this is fast but not bit-identical to the exact method
// or the CUDA kernel; OpenBLAS's own thread count (OPENBLAS_NUM_THREADS) applies.
#include "kernels/cpu/sf_blas.h"

#include <algorithm>
#include <stdexcept>

#include "kernels/cpu/scratch.h"
#include "kernels/cpu/update_loop.h"

#if POSEIDON_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace poseidon::kernels::cpu {

#if POSEIDON_HAVE_OPENBLAS

namespace {
// G's row block: about half of a 2 MiB L2, at least one row.
constexpr size_t kBlockBytes = size_t{1} << 20;
}  // namespace

bool haveSfBlas() { return true; }

void sfUpdateBlas(const SfUpdate& u, RowUpdate row_update) {
  thread_local Scratch g_scratch;
  const size_t block_rows = std::clamp<size_t>(kBlockBytes / (u.cols * sizeof(float)), 1, u.rows);
  float* const g = g_scratch.floats(block_rows * u.cols);
  const int n = static_cast<int>(u.cols), k = static_cast<int>(u.rank);
  for (size_t i0 = 0; i0 < u.rows; i0 += block_rows) {
    const size_t rows = std::min(block_rows, u.rows - i0);
    if (u.rank == 0) {
      std::fill(g, g + rows * u.cols, 0.0f);  // no terms; and lda = 0 is not a valid BLAS argument
    } else {
      for (size_t p = 0; p < u.u.size(); ++p) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(rows), n, k, 1.0f, u.u[p] + i0 * u.rank,
                    k, u.v[p], k, p == 0 ? 0.0f : 1.0f, g, n);
      }
    }
    for (size_t r = 0; r < rows; ++r) {
      const size_t at = (i0 + r) * u.cols;
      row_update(u.cols, g + r * u.cols, u.params + at, offsetOrNull(u.state0, at), offsetOrNull(u.state1, at),
                 u.step);
    }
  }
}

#else

bool haveSfBlas() { return false; }

void sfUpdateBlas(const SfUpdate&, RowUpdate) {
  throw std::logic_error("sfUpdateBlas: this build has no OpenBLAS");
}

#endif

}  // namespace poseidon::kernels::cpu
