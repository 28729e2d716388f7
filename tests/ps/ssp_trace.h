// Reading the traces ps_peer --trace writes (one line per push and pull: kind, clock, the lowest
// version pulled, CLOCK_MONOTONIC nanoseconds, which is one clock across network namespaces), and
// checking SSP's bound against them across processes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace poseidon::testing {

struct TraceLine {
  std::string kind;  // "push" or "pull"
  uint64_t clock = 0;
  uint64_t version = 0;
  uint64_t nanos = 0;
};

std::vector<TraceLine> readTrace(const std::string& path);

struct SspCheck {
  std::vector<std::string> stale_reads;  // reads older than the bound, described
  uint64_t most_ahead = 0;               // the furthest a fast worker's read ran ahead of the slow worker's pushes
  std::vector<size_t> reads;             // per worker: pulls traced
  size_t slow_pushes = 0;
};

// Every worker's trace <dir>/trace-<tag>-<w>: no read older than clock - staleness, and how far
// the others' reads ran ahead of worker `slow`'s pushes.
SspCheck checkSspTraces(const std::string& dir, const std::string& tag, int workers, int slow, uint64_t staleness);

}  // namespace poseidon::testing
