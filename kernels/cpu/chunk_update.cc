// CPU twin of the fused chunk update.
//
// The loop itself and why it is shaped so: kernels/cpu/update_loop.h.
//
// More than four gradients (a server with many workers) go a cache-sized block at a time: four
// at a time into a local sum, in rank order, and the last one to three are added in the update
// loop itself, so the order stays ((g_0 + g_1) + g_2) + ... and each gradient is read once.
#include <algorithm>
#include <stdexcept>

#include "kernels/chunk_update.h"
#include "kernels/chunk_update_check.h"
#include "kernels/cpu/update_loop.h"

namespace poseidon::kernels {
namespace {

using cpu::fusedLoop;
using cpu::offsetOrNull;

// Elements per block of the generic path: 4 KiB of sums stays in L1 next to the streams.
constexpr size_t kBlock = 1024;

// sum = (((sum + a) + b) + c) + d, or without the leading sum for the first four gradients.
template <bool kAccumulate>
[[gnu::noinline]] void addFour(size_t len, float* __restrict__ sum, const float* __restrict__ a,
                               const float* __restrict__ b, const float* __restrict__ c, const float* __restrict__ d) {
  for (size_t j = 0; j < len; ++j) {
    float g = kAccumulate ? sum[j] + a[j] : a[j];
    g += b[j];
    g += c[j];
    sum[j] = g + d[j];
  }
}

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
