#include "tools/ring-bench/allreduce_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "model/layer.h"
#include "ring/ring_allreduce.h"

namespace poseidon::tools {

namespace {

using Clock = std::chrono::steady_clock;

// Rank r's element i: small integers, so the sum over P ranks is exact in float and any element
// summed twice, missed or misplaced shows.
constexpr uint32_t kPattern = 13;
float valueOf(int rank, size_t i) { return static_cast<float>(rank + 1 + static_cast<int>(i % kPattern)); }
float sumOf(int ranks, size_t i) {
  return static_cast<float>(ranks * (ranks + 1) / 2 + ranks * static_cast<int>(i % kPattern));
}

// One size's input and expected sum, computed once (two more buffers of the size per rank, as the
// Gloo script keeps), so that refilling and checking between calls are a copy and a compare, as
// gloo_allreduce.py's are: with 4 ranks on 2 cores, a rank that
// spends longer between calls takes CPU from the others' timed calls.
struct Pattern {
  std::vector<float> mine;
  std::vector<float> sum;
};
Pattern patternOf(size_t floats, int rank, int ranks) {
  Pattern p{std::vector<float>(floats), std::vector<float>(floats)};
  for (size_t i = 0; i < floats; ++i) {
    p.mine[i] = valueOf(rank, i);
    p.sum[i] = sumOf(ranks, i);
  }
  return p;
}

// Bitwise: every expected sum is a small integer, exact in float, so equal values are equal
// bits; memcmp is the one vectorised pass that torch.equal is on Gloo's side.
Status verify(std::span<const float> buffer, const std::vector<float>& expected, uint64_t bytes, uint64_t call) {
  if (std::memcmp(buffer.data(), expected.data(), buffer.size_bytes()) == 0) return Status::ok();
  const auto [got, want] = std::mismatch(buffer.begin(), buffer.end(), expected.begin(), expected.end());
  if (got == buffer.end()) return Status::ok();  // equal values, other bits: not for this pattern (no zeros)
  return makeStatus(StatusCode::kInternal, "all-reduce of {} bytes, call {}: element {} is {}, expected {}", bytes,
                    call, got - buffer.begin(), *got, *want);
}

AllreduceRow summarise(uint64_t bytes, std::vector<double> micros) {
  AllreduceRow row;
  row.bytes = bytes;
  row.iters = micros.size();
  std::sort(micros.begin(), micros.end());
  const size_t n = micros.size();
  row.median_us = n % 2 == 1 ? micros[n / 2] : (micros[n / 2 - 1] + micros[n / 2]) / 2;
  row.mean_us = std::accumulate(micros.begin(), micros.end(), 0.0) / static_cast<double>(n);
  row.min_us = micros.front();
  return row;
}

}  // namespace

Result<std::vector<AllreduceRow>> runAllreduceBench(const AllreduceBenchCommandLine& c, JobProcess& process) {
  std::vector<model::Layer> layers;
  for (uint64_t bytes : c.sizes) layers.push_back(model::Layer::other(fmt::format("{}B", bytes), bytes / 4));
  ring::RingOptions options;
  options.piece_bytes = c.piece_bytes;
  options.staging_slots = c.staging_slots;
  options.name = "allreduce_bench";
  auto ring =
      ring::RingAllreduce::start(*process.context, *process.store, std::move(layers), options, process.deadline());
  if (!ring) return ring.status().withContext("starting the ring");
  ring::RingAllreduce& r = **ring;
  const int rank = r.rank(), ranks = r.ranks();
  std::vector<AllreduceRow> rows;
  for (size_t layer = 0; layer < c.sizes.size(); ++layer) {
    const uint64_t bytes = c.sizes[layer];
    const uint64_t iters = c.itersFor(bytes);
    const std::span<float> buffer = r.buffer(layer);
    const Pattern pattern = patternOf(buffer.size(), rank, ranks);
    std::vector<double> micros;
    for (uint64_t call = 0; call < c.warmup + iters; ++call) {
      std::copy(pattern.mine.begin(), pattern.mine.end(), buffer.begin());
      const Clock::time_point began = Clock::now();
      POSEIDON_RETURN_IF_ERROR(r.allreduce(layer, process.deadline())
                                   .withContext(fmt::format("all-reduce of {} bytes, call {}", bytes, call)));
      const double us = std::chrono::duration<double, std::micro>(Clock::now() - began).count();
      POSEIDON_RETURN_IF_ERROR(verify(buffer, pattern.sum, bytes, call));
      if (call >= c.warmup) micros.push_back(us);
    }
    rows.push_back(summarise(bytes, std::move(micros)));
  }
  return rows;
}

}  // namespace poseidon::tools
