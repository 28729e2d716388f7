// The fused chunk update's CPU twin against a STREAM triad loop, one core each, over arrays far
// larger than the caches (128 MiB each), as a parameter server updates its shard: 2 MiB chunks
// one after another. Bytes are what each loop names: triad 12 per element (STREAM's count: two
// reads, one write, no write-allocate), the update 4 per gradient read plus 8 per parameter and
// state word (read and written in place). Target: >= 0.8 of the triad's bytes per second.
//
//   build/benchmarks/kernels/chunk_update_bench --benchmark_min_time=0.5
#include <benchmark/benchmark.h>

#include <array>
#include <string>
#include <vector>

#include "benchmarks/kernels/bench_buffers.h"
#include "benchmarks/kernels/ratio_report.h"
#include "kernels/chunk_update.h"

namespace poseidon::bench {
namespace {

using kernels::ChunkUpdate;
using kernels::OptimizerKind;
using kernels::OptimizerStep;

constexpr size_t kElements = size_t{32} << 20;  // 128 MiB of floats per array
constexpr size_t kChunk = size_t{512} << 10;    // 2 MiB: the parameter server's chunk

void streamTriad(benchmark::State& state) {
  const Floats a = randomFloats(kElements, -1, 1, 1), b = randomFloats(kElements, -1, 1, 2),
               c = randomFloats(kElements, -1, 1, 3);
  const float scalar = 3.0f;
  for (auto _ : state) {
    float* __restrict__ pa = a.get();
    const float* __restrict__ pb = b.get();
    const float* __restrict__ pc = c.get();
    for (size_t i = 0; i < kElements; ++i) pa[i] = pb[i] + scalar * pc[i];
    benchmark::ClobberMemory();
  }
  state.counters["bytes/s"] =
      benchmark::Counter(3.0 * sizeof(float) * kElements, benchmark::Counter::kIsIterationInvariantRate);
}

OptimizerStep stepFor(OptimizerKind kind, int gradients) {
  OptimizerStep step;
  step.kind = kind;
  step.lr = 1e-4f;
  step.grad_scale = 1.0f / static_cast<float>(gradients);
  step.weight_decay = 1e-4f;
  step.momentum = kind == OptimizerKind::kSgd ? 0.9f : 0.0f;
  step.bias_correction1 = 0.1f;
  step.bias_correction2 = 0.001f;
  return step;
}

void chunkUpdate(benchmark::State& state, OptimizerKind kind, int n) {
  const OptimizerStep step = stepFor(kind, n);
  const int words = kernels::stateWords(kind, step.momentum);
  const Floats params = randomFloats(kElements, -1, 1, 4);
  const Floats state0 = randomFloats(words >= 1 ? kElements : 0, 0.1f, 1, 5);
  const Floats state1 = randomFloats(words >= 2 ? kElements : 0, 0.1f, 1, 6);
  std::vector<Floats> gradients;
  for (int k = 0; k < n; ++k) gradients.push_back(randomFloats(kElements, -1, 1, 7 + static_cast<unsigned>(k)));
  std::array<const float*, 16> chunk_gradients{};
  for (auto _ : state) {
    for (size_t offset = 0; offset < kElements; offset += kChunk) {
      ChunkUpdate u;
      u.params = params.get() + offset;
      u.state0 = words >= 1 ? state0.get() + offset : nullptr;
      u.state1 = words >= 2 ? state1.get() + offset : nullptr;
      u.count = std::min(kChunk, kElements - offset);
      for (int k = 0; k < n; ++k) chunk_gradients[k] = gradients[k].get() + offset;
      u.gradients = std::span<const float* const>(chunk_gradients.data(), static_cast<size_t>(n));
      u.step = step;
      kernels::chunkUpdateCpu(u);
    }
    benchmark::ClobberMemory();
  }
  const double bytes = (4.0 * n + 8.0 * (1 + words)) * kElements;
  state.counters["bytes/s"] = benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace
}  // namespace poseidon::bench

int main(int argc, char** argv) {
  using namespace poseidon::bench;
  using poseidon::kernels::OptimizerKind;
  benchmark::RegisterBenchmark("stream_triad", streamTriad);
  struct Case {
    const char* name;
    OptimizerKind kind;
    int gradients;
  };
  const Case cases[] = {{"chunk_update/momentum/1grad", OptimizerKind::kSgd, 1},
                        {"chunk_update/momentum/4grads", OptimizerKind::kSgd, 4},
                        {"chunk_update/adam/4grads", OptimizerKind::kAdam, 4}};
  std::vector<Ratio> ratios;
  for (const Case& c : cases) {
    benchmark::RegisterBenchmark(c.name, [c](benchmark::State& s) { chunkUpdate(s, c.kind, c.gradients); });
    ratios.push_back({c.name, "stream_triad", "bytes/s", 0.8});
  }
  return runWithRatios(argc, argv, ratios);
}
