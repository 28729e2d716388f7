// Pack / unpack's CPU twins against memcpy, one core each, on a merged layer group far larger
// than the caches: tensors of 16 Mi, 4 Ki, 8 Mi, 1000, 6 Mi and 2 Mi floats (~32 Mi, 128 MiB)
// packed with 1/P scaling into f32, bf16 or f16 and back. Bytes are what moves: memcpy reads and
// writes its size; pack and unpack read 4 bytes and write 2 or 4 per element (or the reverse).
// No target is set by the issue; memcpy is the ceiling a copy-like kernel can hope for.
//
//   build/benchmarks/kernels/pack_bench --benchmark_min_time=0.5
#include <benchmark/benchmark.h>

#include <cstring>
#include <string>
#include <vector>

#include "benchmarks/kernels/bench_buffers.h"
#include "benchmarks/kernels/ratio_report.h"
#include "kernels/pack.h"

namespace poseidon::bench {
namespace {

using kernels::PackedType;

const std::vector<size_t> kSizes = {size_t{16} << 20, 4096, size_t{8} << 20, 1000, size_t{6} << 20, size_t{2} << 20};

size_t totalElements() {
  size_t total = 0;
  for (size_t n : kSizes) total += n;
  return total;
}

void copy(benchmark::State& state) {
  const size_t bytes = totalElements() * sizeof(float);
  const Floats from = randomFloats(totalElements(), -1, 1, 1), to = randomFloats(totalElements(), -1, 1, 2);
  for (auto _ : state) {
    std::memcpy(to.get(), from.get(), bytes);
    benchmark::ClobberMemory();
  }
  state.counters["bytes/s"] = benchmark::Counter(2.0 * bytes, benchmark::Counter::kIsIterationInvariantRate);
}

void packOrUnpack(benchmark::State& state, PackedType type, bool pack) {
  std::vector<Floats> tensors;
  std::vector<kernels::PackPiece> pieces;
  uint64_t offset = 0;
  for (size_t n : kSizes) {
    tensors.push_back(randomFloats(n, -1, 1, static_cast<unsigned>(tensors.size()) + 3));
    pieces.push_back({tensors.back().get(), offset, n});
    offset += n;
  }
  // Random floats make valid packed values of any type (bf16 / f16 of numbers in [-1, 1)).
  const Floats packed = randomFloats(offset, -1, 1, 9);
  if (type != PackedType::kF32) {
    kernels::packCpu({pieces, packed.get(), offset, type, 1.0f});
  }
  const kernels::PackJob job{pieces, packed.get(), offset, type, 0.25f};
  for (auto _ : state) {
    if (pack) {
      kernels::packCpu(job);
    } else {
      kernels::unpackCpu(job);
    }
    benchmark::ClobberMemory();
  }
  const double bytes = (4.0 + static_cast<double>(kernels::packedBytes(type))) * static_cast<double>(offset);
  state.counters["bytes/s"] = benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace
}  // namespace poseidon::bench

int main(int argc, char** argv) {
  using namespace poseidon::bench;
  benchmark::RegisterBenchmark("memcpy", copy);
  std::vector<Ratio> ratios;
  for (PackedType type : {PackedType::kF32, PackedType::kBf16, PackedType::kF16}) {
    for (bool pack : {true, false}) {
      const std::string name = std::string(pack ? "pack/" : "unpack/") + poseidon::kernels::packedTypeName(type);
      benchmark::RegisterBenchmark(name.c_str(), [type, pack](benchmark::State& s) { packOrUnpack(s, type, pack); });
      ratios.push_back({name, "memcpy", "bytes/s", 0});
    }
  }
  return runWithRatios(argc, argv, ratios);
}
