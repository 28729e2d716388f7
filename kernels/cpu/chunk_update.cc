// CPU twin of the fused chunk update.
//
// Speed comes from the compiler's vectoriser, so the hot loop is shaped for it: the optimizer
// rule and the gradient count (1..4) are template parameters (no branch inside the loop), every
// buffer is a __restrict__ pointer (chunkUpdateProblem() has checked that written buffers overlap
// nothing), and the step's scalars are a local copy (a store through params could otherwise
// alias them). The loops are kept out of line: inlined side by side into one dispatcher, GCC 12
// lost the restrict facts and left Adam with four gradients scalar (4x slower).
//
// More than four gradients (a server with many workers) go a cache-sized block at a time: four
// at a time into a local sum, in rank order, and the last one to three are added in the update
// loop itself, so the order stays ((g_0 + g_1) + g_2) + ... and each gradient is read once.
#include <algorithm>
#include <stdexcept>

#include "kernels/chunk_update.h"
#include "kernels/chunk_update_check.h"
#include "kernels/optimizer_element.h"

namespace poseidon::kernels {
namespace {

// Elements per block of the generic path: 4 KiB of sums stays in L1 next to the streams.
constexpr size_t kBlock = 1024;

// g = ((a + b) + c) + d over the first N of a, b, c, d, then the element update. Pointers past N
// are unused (the caller passes a again; reading through two restrict pointers is allowed).
template <ElementRule R, int N>
[[gnu::noinline]] void fusedLoop(size_t count, const float* __restrict__ a, const float* __restrict__ b,
                                 const float* __restrict__ c, const float* __restrict__ d, float* __restrict__ w,
                                 float* __restrict__ state0, float* __restrict__ state1, const OptimizerStep step) {
  static_assert(N >= 1 && N <= 4);
  for (size_t i = 0; i < count; ++i) {
    float g = a[i];
    if constexpr (N >= 2) g += b[i];
    if constexpr (N >= 3) g += c[i];
    if constexpr (N >= 4) g += d[i];
    updateElementAt<R>(g, i, w, state0, state1, step);
  }
}

// sum = (((sum + a) + b) + c) + d, or without the leading sum for the first four gradients.
template <bool kAccumulate>
[[gnu::noinline]] void addFour(size_t len, float* __restrict__ sum, const float* __restrict__ a,
                               const float* __restrict__ b, const float* __restrict__ c,
                               const float* __restrict__ d) {
  for (size_t j = 0; j < len; ++j) {
    float g = kAccumulate ? sum[j] + a[j] : a[j];
    g += b[j];
    g += c[j];
    sum[j] = g + d[j];
  }
}

float* offsetOrNull(float* p, size_t offset) { return p == nullptr ? nullptr : p + offset; }

template <ElementRule R>
void runRule(const ChunkUpdate& u) {
  const float* const* g = u.gradients.data();
  const size_t n = u.gradients.size();
  const OptimizerStep s = u.step;
  switch (n) {
    case 1: return fusedLoop<R, 1>(u.count, g[0], g[0], g[0], g[0], u.params, u.state0, u.state1, s);
    case 2: return fusedLoop<R, 2>(u.count, g[0], g[1], g[0], g[0], u.params, u.state0, u.state1, s);
    case 3: return fusedLoop<R, 3>(u.count, g[0], g[1], g[2], g[0], u.params, u.state0, u.state1, s);
    case 4: return fusedLoop<R, 4>(u.count, g[0], g[1], g[2], g[3], u.params, u.state0, u.state1, s);
    default: break;
  }
  alignas(64) float sum[kBlock];
  for (size_t offset = 0; offset < u.count; offset += kBlock) {
    const size_t len = std::min(kBlock, u.count - offset);
    addFour<false>(len, sum, g[0] + offset, g[1] + offset, g[2] + offset, g[3] + offset);
    size_t k = 4;
    for (; n - k > 3; k += 4) {
      addFour<true>(len, sum, g[k] + offset, g[k + 1] + offset, g[k + 2] + offset, g[k + 3] + offset);
    }
    float* w = u.params + offset;
    float* s0 = offsetOrNull(u.state0, offset);
    float* s1 = offsetOrNull(u.state1, offset);
    // The last 0..3 gradients join the sum inside the update loop.
    switch (n - k) {
      case 0: fusedLoop<R, 1>(len, sum, sum, sum, sum, w, s0, s1, s); break;
      case 1: fusedLoop<R, 2>(len, sum, g[k] + offset, sum, sum, w, s0, s1, s); break;
      case 2: fusedLoop<R, 3>(len, sum, g[k] + offset, g[k + 1] + offset, sum, w, s0, s1, s); break;
      default: fusedLoop<R, 4>(len, sum, g[k] + offset, g[k + 1] + offset, g[k + 2] + offset, w, s0, s1, s); break;
    }
  }
}

}  // namespace

void chunkUpdateCpu(const ChunkUpdate& update) {
  if (std::string problem = chunkUpdateProblem(update); !problem.empty()) {
    throw std::invalid_argument("chunkUpdateCpu: " + problem);
  }
  withElementRule(elementRule(update.step), [&](auto rule) { runRule<decltype(rule)::value>(update); });
}

}  // namespace poseidon::kernels
