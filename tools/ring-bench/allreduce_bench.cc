#include "tools/ring-bench/allreduce_bench.h"

#include <fmt/format.h>

#include <time.h>

#include <algorithm>
#include <charconv>
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

// The process's CPU time so far, every thread, user and kernel: what Python's time.process_time()
// reads on Gloo's side.
double processCpuMicros() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) * 1e-3;
}

AllreduceRow summarise(uint64_t bytes, std::vector<double> micros, double cpu_micros) {
  AllreduceRow row;
  row.bytes = bytes;
  row.cpu_us = cpu_micros / static_cast<double>(micros.size());
  row.iters = micros.size();
  std::sort(micros.begin(), micros.end());
  const size_t n = micros.size();
  row.median_us = n % 2 == 1 ? micros[n / 2] : (micros[n / 2 - 1] + micros[n / 2]) / 2;
  row.mean_us = std::accumulate(micros.begin(), micros.end(), 0.0) / static_cast<double>(n);
  row.min_us = micros.front();
  return row;
}

// The store key of `rank`'s CPU per call, one number per size.
std::string cpuKey(int rank) { return fmt::format("allreduce_bench/cpu/{}", rank); }

// Rank `rank`'s CPU per call as the store holds it: one decimal number per size, comma-separated.
Result<std::vector<double>> parseCpu(const std::vector<uint8_t>& value, int rank, size_t sizes) {
  const char* at = reinterpret_cast<const char*>(value.data());
  const char* const end = at + value.size();
  std::vector<double> cpu;
  while (at < end) {
    double v = 0;
    const auto [next, error] = std::from_chars(at, end, v);
    if (error != std::errc() || !(v >= 0) || (next != end && *next != ',')) break;
    cpu.push_back(v);
    at = next == end ? end : next + 1;
  }
  if (at != end || cpu.size() != sizes) {
    return makeStatus(StatusCode::kProtocolError,
                      "rank {} published '{}' as its CPU per call: expected {} numbers >= 0 (no NaN)", rank,
                      std::string(reinterpret_cast<const char*>(value.data()), value.size()), sizes);
  }
  return cpu;
}

// Every rank publishes its CPU per call; rank 0 adds the others' to its rows.
Status sumCpuOverRanks(std::vector<AllreduceRow>& rows, JobProcess& process) {
  std::string mine;
  for (const AllreduceRow& row : rows) mine += fmt::format("{}{:.3f}", mine.empty() ? "" : ",", row.cpu_us);
  const int rank = process.rank(), ranks = process.launch.size;
  if (rank != 0) return process.store->set(cpuKey(rank), std::vector<uint8_t>(mine.begin(), mine.end()));
  for (int peer = 1; peer < ranks; ++peer) {
    auto value = process.store->get(cpuKey(peer), process.deadline());
    if (!value) return value.status();
    auto cpu = parseCpu(*value, peer, rows.size());
    if (!cpu) return cpu.status();
    for (size_t i = 0; i < rows.size(); ++i) rows[i].cpu_us += (*cpu)[i];
  }
  return Status::ok();
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
    double cpu_micros = 0;
    for (uint64_t call = 0; call < c.warmup + iters; ++call) {
      std::copy(pattern.mine.begin(), pattern.mine.end(), buffer.begin());
      const double cpu_began = processCpuMicros();
      const Clock::time_point began = Clock::now();
      POSEIDON_RETURN_IF_ERROR(r.allreduce(layer, process.deadline())
                                   .withContext(fmt::format("all-reduce of {} bytes, call {}", bytes, call)));
      const double us = std::chrono::duration<double, std::micro>(Clock::now() - began).count();
      const double cpu_us = processCpuMicros() - cpu_began;
      POSEIDON_RETURN_IF_ERROR(verify(buffer, pattern.sum, bytes, call));
      if (call >= c.warmup) {
        micros.push_back(us);
        cpu_micros += cpu_us;
      }
    }
    rows.push_back(summarise(bytes, std::move(micros), cpu_micros));
  }
  POSEIDON_RETURN_IF_ERROR(sumCpuOverRanks(rows, process).withContext("summing the ranks' CPU per call"));
  return rows;
}

}  // namespace poseidon::tools
