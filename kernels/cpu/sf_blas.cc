// SfMethod::kBlas: the peers' factors side by side (U = [U_0 .. U_P-1], rows x P*rank, and V
// likewise), so that G = U V^T is one sgemm per block of rows with the whole depth (one sgemm per
// peer would be P thin, memory-bound products); then the update loop over the block while it is
// in cache. OpenBLAS chooses the order of the k sum (its kernel for the CPU, its blocking, its
// threads), so this is fast but not bit-identical to the exact method or the CUDA kernel; its own
// thread count (OPENBLAS_NUM_THREADS) applies. OpenBLAS packs V again for every block, so blocks
// are large (16 MiB of G, in L3) to keep that copy small next to the product.
#include "kernels/cpu/sf_blas.h"

#include <algorithm>
#include <stdexcept>

#include "kernels/cpu/scratch.h"
#include "kernels/cpu/update_loop.h"

#if defined(POSEIDON_HAVE_OPENBLAS)
#include <cblas.h>
#endif

namespace poseidon::kernels::cpu {

#if defined(POSEIDON_HAVE_OPENBLAS)

namespace {

constexpr size_t kBlockBytes = size_t{16} << 20;

// out[r * depth + p * rank + k] = factors[p][(first + r) * rank + k] for `rows` rows.
void concatenate(std::span<const float* const> factors, size_t rank, size_t first, size_t rows, float* out) {
  const size_t depth = factors.size() * rank;
  for (size_t r = 0; r < rows; ++r) {
    for (size_t p = 0; p < factors.size(); ++p) {
      std::copy_n(factors[p] + (first + r) * rank, rank, out + r * depth + p * rank);
    }
  }
}

}  // namespace

bool haveSfBlas() { return true; }

void sfUpdateBlas(const SfUpdate& u, RowUpdate row_update) {
  thread_local Scratch g_scratch, u_scratch, v_scratch;
  const size_t depth = u.u.size() * u.rank;
  const size_t block_rows = std::clamp<size_t>(kBlockBytes / (u.cols * sizeof(float)), 1, u.rows);
  float* const g = g_scratch.floats(block_rows * u.cols);
  float* const u_block = u_scratch.floats(block_rows * depth);
  float* const v_all = v_scratch.floats(u.cols * depth);
  concatenate(u.v, u.rank, 0, u.cols, v_all);
  const int n = static_cast<int>(u.cols), k = static_cast<int>(depth);
  for (size_t i0 = 0; i0 < u.rows; i0 += block_rows) {
    const size_t rows = std::min(block_rows, u.rows - i0);
    if (depth == 0) {
      std::fill(g, g + rows * u.cols, 0.0f);  // no terms; and lda = 0 is not a valid BLAS argument
    } else {
      concatenate(u.u, u.rank, i0, rows, u_block);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(rows), n, k, 1.0f, u_block, k, v_all, k,
                  0.0f, g, n);
    }
    for (size_t r = 0; r < rows; ++r) {
      const size_t at = (i0 + r) * u.cols;
      row_update(u.cols, g + r * u.cols, u.params + at, offsetOrNull(u.state0, at), offsetOrNull(u.state1, at), u.step);
    }
  }
}

#else

bool haveSfBlas() { return false; }

void sfUpdateBlas(const SfUpdate&, RowUpdate) { throw std::logic_error("sfUpdateBlas: this build has no OpenBLAS"); }

#endif

}  // namespace poseidon::kernels::cpu
